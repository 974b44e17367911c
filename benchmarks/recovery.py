"""Recovery time of a table service: the newest engine snapshot + the inputs after it, against a full replay.

    .venv/bin/python benchmarks/recovery.py [--inputs N] [--every K] [--profile NAME] [--dir DIR] [--json]

Plays N inputs of a simulated table through :class:`controller.service.core.TableCore` into a journal
(``synchronous=NORMAL`` to build it quickly; recovery only reads), saving a snapshot every K inputs.
Then times ``TableCore.recover()`` on that journal, and on a copy without its snapshots (the full
replay every restart cost before snapshots). Both must rebuild the same state. Run it on the table
PC's disk (``--dir``); ``TABLECTL_PURE_ENGINE=1`` times the pure Python engine.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

import controller.game.table as engine
from controller.game import events as ev
from controller.journal import Journal
from controller.profiles import load_rules
from controller.service.core import TableCore
from controller.sim.dealer import SimulatedDealer


def _build(path: Path, profile: str, inputs: int, every: int) -> dict[str, Any]:
    rules = load_rules(profile)
    with Journal(path, synchronous="NORMAL") as journal:
        core = TableCore("bench", rules, journal, snapshot_every=every)
        dealer = SimulatedDealer(rules, seed=1, table_id="bench")
        core.apply(ev.TableOpened(now=time.time()))
        while journal.last_input_id < inputs:
            event = dealer.next_event(core.table)
            if event is None:
                raise RuntimeError(f"the simulated table is stuck: {core.table.snapshot()}")
            core.apply(event)
        return core.state()


def _recover(path: Path, profile: str) -> tuple[float, TableCore]:
    with Journal(path) as journal:
        core = TableCore("bench", load_rules(profile), journal)
        start = time.perf_counter()
        core.recover()
        elapsed = time.perf_counter() - start
        return elapsed, core


def _without(state: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: v for k, v in state.items() if k not in keys}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--inputs", type=int, default=200_000)
    ap.add_argument("--every", type=int, default=500, help="snapshot every K inputs (TableCore snapshot_every)")
    ap.add_argument("--profile", default="house-h17")
    ap.add_argument("--dir", type=Path, default=None, help="where to put the journal (default: a temp dir)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        path = Path(tmp) / "bench.journal"
        start = time.perf_counter()
        live = _build(path, args.profile, args.inputs, args.every)
        build_s = time.perf_counter() - start

        bare = Path(tmp) / "bare.journal"
        shutil.copyfile(path, bare)
        with sqlite3.connect(bare) as db:
            db.execute("DELETE FROM snapshots")
        db.close()

        snap_s, with_snap = _recover(path, args.profile)
        full_s, without = _recover(bare, args.profile)
        made_now = ("ts",)  # when each state was built: the rest (phase_since included) must agree
        if not _without(with_snap.state(), made_now) == _without(without.state(), made_now) == _without(live, made_now):
            raise SystemExit("recovery from the snapshot and the full replay disagree")

    result = {
        "engine": "compiled" if (engine.__file__ or "").endswith(".so") else "pure",
        "profile": args.profile,
        "inputs": args.inputs,
        "snapshot_every": args.every,
        "build_s": round(build_s, 1),
        "recover_with_snapshot_ms": round(snap_s * 1e3, 1),
        "replayed_after_snapshot": with_snap.replayed,
        "recover_full_replay_ms": round(full_s * 1e3, 1),
        "replayed_full": without.replayed,
        "speedup": round(full_s / snap_s, 1),
    }
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:26} {value}")


if __name__ == "__main__":
    main()
