"""What rated play costs a table's start: the ratings rebuilt from the last checkpoint against the whole journal.

    .venv/bin/python benchmarks/ratings_restart.py --rounds 100000 [--session-rounds 300] [--dir DIR] [--keep]

Builds a journal of ``--rounds`` rounds of a rated table through :class:`controller.service.core.TableCore`
(the demo's crowd and its five carded players; every ``--session-rounds`` rounds each carded player's card goes
out for a round and back in, so ratings end and open as on a floor; 0: they never leave), ``synchronous=NORMAL``
to build it quickly (a start only reads). Then, each in a fresh process, times ``TableCore.recover()`` (the
engine from its newest snapshot, then the ratings) three ways: ratings rebuilt from the last ratings checkpoint
(what a start does now), rebuilt from the whole journal (what every start did before the checkpoints), and with
no ratings (the engine's part alone). All three must agree on the open ratings. With the checkpoint, it also
times the ratings' rebuild alone, and the read of the ended ratings a start sends again after a ``kill -9``: from
the journal's start (the resend mark where no clean stop ever moved it) and from the last checkpoint (where a
checkpoint taken with every rating acknowledged moves it). ``--journal PATH --one checkpoint`` prints one start's
figures as JSON.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from controller.game import events as ev
from controller.journal import Journal
from controller.profiles import load_rules
from controller.service.core import TableCore
from controller.service.ratings import TableRatings, enable_ratings
from controller.sim.carded import carded_players
from controller.sim.dealer import SimulatedDealer

PROFILE = "house-h17"
SEED = 1


class _WholeJournal(TableRatings):
    """The start before checkpoints: every record of the journal read again."""

    def rebuild(self, journal: Any, *, checkpoint: bool = True) -> Any:
        return super().rebuild(journal, checkpoint=False)


def build(path: Path, rounds: int, session_rounds: int) -> None:
    rules = load_rules(PROFILE)
    carded = carded_players(SEED, "t01", rules.spots)
    started = time.perf_counter()
    with Journal(path, synchronous="NORMAL") as journal:
        core = TableCore("t01", rules, journal, snapshot_every=500)
        enable_ratings(core)
        core.recover()
        dealer = SimulatedDealer(rules, seed=SEED, table_id="t01", regulars=carded)
        core.apply(ev.TableOpened(now=1_800_000_000.0))
        for player in carded:
            core.apply_card("card_in", player.spot, player.number)
        away: int | None = None
        while core.table.rounds_settled < rounds:
            settled = core.table.rounds_settled
            if core.table.phase == "settled" and session_rounds and settled and away != settled:
                if settled % session_rounds == 0:
                    away = settled
                    for player in carded:
                        core.apply_card("card_out", player.spot, player.number)
                elif away is not None and settled == away + 1:
                    for player in carded:
                        core.apply_card("card_in", player.spot, player.number)
            event = dealer.next_event(core.table)  # type: ignore[arg-type]
            if event is None:
                raise RuntimeError(f"the simulated table is stuck: {core.table.snapshot()}")
            core.apply(event)
            if settled % 10_000 == 0 and core.table.rounds_settled == settled + 1:
                print(f"  {settled + 1} rounds, {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
        print(f"built {rounds} rounds: {journal.last_input_id} inputs, {journal.last_seq} records, "
              f"{path.stat().st_size / 1e6:.0f} MB, in {time.perf_counter() - started:.0f} s", flush=True)


def time_start(path: Path, mode: str) -> dict[str, Any]:
    """One start in this process: ``TableCore.recover()`` with the ratings of ``mode``."""
    rules = load_rules(PROFILE)
    with Journal(path, synchronous="NORMAL") as journal:
        core = TableCore("t01", rules, journal, snapshot_every=500)
        if mode == "checkpoint":
            enable_ratings(core)
        elif mode == "whole":
            core.ratings = _WholeJournal(rules, table_id="t01")
        t0 = time.perf_counter()
        core.recover()
        seconds = time.perf_counter() - t0
        ratings = core.ratings
        more: dict[str, float] = {}
        if mode == "checkpoint" and ratings is not None:
            t0 = time.perf_counter()
            TableRatings(rules, table_id="t01").rebuild(journal)
            more["rebuild_s"] = time.perf_counter() - t0
            for name, after in (("resend_read_whole_s", 0), ("resend_read_from_checkpoint_s", ratings.rebuilt_from)):
                t0 = time.perf_counter()
                sum(1 for row in journal.inputs_since(after) if row.event.get("type") == "rating")
                more[name] = time.perf_counter() - t0
        return {"mode": mode, "seconds": seconds, **more,
                "from_input": ratings.rebuilt_from if ratings is not None else None,
                "inputs": journal.last_input_id, "records": journal.last_seq,
                "open": ratings.open_json() if ratings is not None else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=100_000)
    ap.add_argument("--session-rounds", type=int, default=300, help="rounds between a player's card out and in")
    ap.add_argument("--dir", type=Path, help="where the journal is built (default: /dev/shm)")
    ap.add_argument("--journal", type=Path, help="time the starts on this journal (built before) instead")
    ap.add_argument("--repeat", type=int, default=2, help="starts timed per way")
    ap.add_argument("--one", choices=("checkpoint", "whole", "none"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(time_start(args.journal, args.one)))
        return
    if args.rounds < 1 or args.session_rounds < 0 or args.repeat < 1:
        ap.error("--rounds and --repeat must be 1 or more, --session-rounds 0 or more")
    with tempfile.TemporaryDirectory(prefix="ratings-restart-", dir=args.dir or "/dev/shm") as tmp:
        path = args.journal
        if path is None:
            path = Path(tmp) / "t01.journal"
            build(path, args.rounds, args.session_rounds)
        results: dict[str, list[dict[str, Any]]] = {"checkpoint": [], "whole": [], "none": []}
        for _ in range(args.repeat):
            for mode in results:  # alternated: the machine's drift falls on all three
                out = subprocess.run([sys.executable, __file__, "--journal", str(path), "--one", mode],
                                     check=True, capture_output=True, text=True).stdout
                results[mode].append(json.loads(out))
    first = results["checkpoint"][0]
    if any(r["open"] != first["open"] for r in results["checkpoint"] + results["whole"]):
        raise SystemExit("the open ratings differ between the ways of starting")
    print(f"journal: {first['inputs']} inputs, {first['records']} records; open ratings: {len(first['open'])}, "
          f"holding {sum(r['rounds'] for r in first['open'])} rounds; the last checkpoint at input "
          f"{first['from_input']}")
    for mode, label in (("checkpoint", "ratings from the last checkpoint"), ("whole", "ratings from the whole journal"),
                        ("none", "no ratings (the engine alone)")):
        times = ", ".join(f"{r['seconds']:.2f}" for r in results[mode])
        print(f"  recover() with {label}: {times} s")
    for key, label in (("rebuild_s", "the ratings' rebuild alone, from the last checkpoint"),
                       ("resend_read_whole_s", "the ended ratings to send again, read from the journal's start"),
                       ("resend_read_from_checkpoint_s", "the same, read from the last checkpoint")):
        print(f"  {label}: {', '.join(f'{r[key]:.2f}' for r in results['checkpoint'])} s")


if __name__ == "__main__":
    main()
