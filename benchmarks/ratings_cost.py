"""What rated play adds to each input of the table's core, without the disk and the network.

    .venv/bin/python benchmarks/ratings_cost.py [--rounds 3000] [--profile house-h17] [--seed 1]

The same seeded session (the demo's crowd plus its five carded players, their cards in from the start) is
played twice through :class:`controller.service.core.TableCore` on a journal with ``synchronous=NORMAL`` (WAL)
temporary directory, with a :class:`controller.mqtt.publisher.MemoryPublisher`: once with the ratings
(:func:`controller.service.ratings.enable_ratings`), once without. Both runs are timed per input
(``time.perf_counter``), cards alone: until the card's ``state`` is handed to the publisher (the card's path:
with ratings, the rated spots' view copied into the state) and the whole ``core.apply`` (with ratings, the
book's work after the state, pricing departures with the engine's EV, and the ratings' messages).
``benchmarks/latency.py`` measures the whole card's path (ptys, fsync, Mosquitto) with ratings on and off.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import tempfile
import time
from pathlib import Path

from controller.game import events as ev
from controller.journal import Journal
from controller.mqtt.publisher import MemoryPublisher
from controller.profiles import load_rules
from controller.service.core import TableCore
from controller.service.ratings import enable_ratings
from controller.sim.carded import carded_players
from controller.sim.dealer import SimulatedDealer


async def session(rounds: int, profile: str, seed: int, rated: bool,
                  directory: Path) -> tuple[list[float], list[float]]:
    """Microseconds per card input: until its state is handed to the publisher, and the whole ``core.apply``."""
    rules = load_rules(profile)
    carded = carded_players(seed, "t01", rules.spots)
    with Journal(directory / f"{'on' if rated else 'off'}.journal", synchronous="NORMAL") as journal:
        publisher = MemoryPublisher(journal)
        core = TableCore("t01", rules, journal, publisher, snapshot_every=500)
        if rated:
            enable_ratings(core)
        core.recover()
        await publisher.start()
        dealer = SimulatedDealer(rules, seed=seed, table_id="t01", regulars=carded)
        core.apply(ev.TableOpened(now=0.0))
        for player in carded:
            core.apply_card("card_in", player.spot, player.number)
        cards: list[float] = []
        handed: list[float] = [0.0]
        publish_state = publisher.publish_state

        def stamped(seq: int, state: object) -> None:
            handed[0] = time.perf_counter()  # the state is handed to the publisher: the card's path ends here
            publish_state(seq, state)  # type: ignore[arg-type]

        setattr(publisher, "publish_state", stamped)  # noqa: B010 - an instance patch, the class untouched
        to_state: list[float] = []
        gc.collect()
        while core.table.rounds_settled < rounds:
            event = dealer.next_event(core.table)  # type: ignore[arg-type]
            assert event is not None
            t0 = time.perf_counter()
            core.apply(event)
            dt = time.perf_counter() - t0
            if isinstance(event, ev.CardDrawn):
                cards.append(dt * 1e6)
                to_state.append((handed[0] - t0) * 1e6)
            if len(publisher.messages) > 10_000:
                publisher.messages.clear()
        return to_state, cards


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3000)
    ap.add_argument("--profile", default="house-h17")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    shm = "/dev/shm" if Path("/dev/shm").is_dir() else None  # off the disk where it can be
    with tempfile.TemporaryDirectory(prefix="ratings-cost-", dir=shm) as tmp:
        for i, rated in enumerate((False, True, False, True)):  # alternated: the machine's drift falls on both
            run_dir = Path(tmp) / f"run{i}"
            run_dir.mkdir()
            to_state, whole = asyncio.run(session(args.rounds, args.profile, args.seed, rated, run_dir))
            print(f"ratings {'on ' if rated else 'off'}: card input to its state handed over {_figures(to_state)}; "
                  f"whole core.apply {_figures(whole)}", flush=True)


def _figures(us: list[float]) -> str:
    ordered = sorted(us)
    return (f"p50 {statistics.median(us):6.1f} us p99 {ordered[int(0.99 * len(ordered))]:7.1f} us "
            f"mean {statistics.fmean(us):6.1f} us (n {len(us)})")


if __name__ == "__main__":
    main()
