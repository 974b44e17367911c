"""The largest payload of each topic a table sends: the figure the brokers' size limit is sized from.

    python benchmarks/message_sizes.py [ROUNDS]     (default 1500; about two minutes)

A table with seven rated players (every spot carded) plays ROUNDS rounds of the simulated dealer into a
:class:`controller.mqtt.publisher.MemoryPublisher`; each topic's largest payload is printed beside
:data:`controller.mqtt.limits.MAX_MESSAGE_BYTES` (docs/mqtt.md, "Message size limit").
"""

from __future__ import annotations

from controller.mqtt.limits import MAX_MESSAGE_BYTES


def measure(rounds: int) -> dict[str, int]:
    """The largest payload of each topic a table with seven rated players sends over ``rounds`` rounds."""
    import asyncio
    import tempfile
    from pathlib import Path

    from controller.game import events as ev
    from controller.journal import Journal
    from controller.mqtt.publisher import MemoryPublisher
    from controller.profiles import load_rules
    from controller.service.core import TableCore
    from controller.service.ratings import enable_ratings
    from controller.sim.carded import carded_players
    from controller.sim.dealer import SimulatedDealer

    async def run() -> dict[str, int]:
        clock = iter(float(1_800_000_000 + k) for k in range(10**9))
        players = carded_players(7, "t01", 7)
        rules = load_rules("house-h17")
        journal = Journal(Path(tempfile.mkdtemp()) / "t01.journal", synchronous="NORMAL")
        publisher = MemoryPublisher(journal)
        core = TableCore("t01", rules, journal, publisher, clock=lambda: next(clock), snapshot_every=50)
        enable_ratings(core, idle_rounds=5)
        core.recover()
        await publisher.start()
        dealer = SimulatedDealer(rules, seed=7, table_id="t01", regulars=players)
        core.apply(ev.TableOpened(now=next(clock)))
        seated = False
        while core.table.rounds_settled < rounds:
            if not seated and core.table.rounds_settled >= 1 and core.table.phase == "settled":
                for p in players:
                    core.apply_card("card_in", p.spot, p.number)
                seated = True
            event = dealer.next_event(core.table)  # type: ignore[arg-type]
            assert event is not None
            core.apply(event)
        sizes: dict[str, int] = {}
        for topic, payload, _ in publisher.messages:
            key = topic.split("/", 2)[2]
            sizes[key] = max(sizes.get(key, 0), len(payload))
        journal.close()
        return sizes

    return asyncio.run(run())


if __name__ == "__main__":
    import sys

    for topic, size in sorted(measure(int(sys.argv[1]) if len(sys.argv) > 1 else 1500).items(),
                              key=lambda kv: -kv[1]):
        print(f"{size:>9,} bytes  {topic}")
    print(f"{MAX_MESSAGE_BYTES:>9,} bytes  the limit (MAX_MESSAGE_BYTES)")
