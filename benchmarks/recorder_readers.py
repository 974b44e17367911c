"""The recorder's readers on a long table record: ``journal verify --against``, ``recall --db --round``,
``report --db`` against their journal-only counterparts, each a separate process, timed.

    .venv/bin/python benchmarks/recorder_readers.py [--rounds 3000] [--postgres URL] [--json]

Builds a keyed journal of ``--rounds`` rounds of a simulated house-h17 table (the demo's dealer and crowd on the
real engine, through :class:`controller.service.core.TableCore`, as benchmarks/report.py does), fills a
recorder's SQLite database from it through the store's API (every body, every record's chain head, in
batches) or the PostgreSQL database ``--postgres`` names, then times each command (wall and CPU seconds).
Measured: docs/floor.md, "The central record".
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from controller.game import events as ev
from controller.journal import Journal
from controller.journal.anchor import create_key
from controller.profiles import load_rules
from controller.recorder.store import open_store
from controller.service.core import TableCore
from controller.sim.dealer import SimulatedDealer

PROFILE = "house-h17"
STEP_S = 0.025


class _Clock:
    def __init__(self, start: float) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


def build(path: Path, key: bytes, rounds: int) -> None:
    rules = load_rules(PROFILE)
    clock = _Clock(1_795_000_000.0)
    with Journal(path, synchronous="NORMAL", key=key) as journal:
        core = TableCore("t01", rules, journal, clock=clock)
        dealer = SimulatedDealer(rules, seed=1, table_id="t01")
        core.apply(ev.TableOpened(now=clock.now))
        while core.state()["totals"]["rounds"] < rounds:
            clock.now += STEP_S
            event = dealer.next_event(core.table)
            if event is None:
                raise RuntimeError(f"the simulated table is stuck: {core.state()}")
            core.apply(event)


def fill(url: str, path: Path, key: bytes) -> tuple[int, float]:
    """Every record of the journal into the recorder's database; (events, seconds)."""
    started = time.perf_counter()
    with open_store(url) as store, Journal.open_readonly(path, key=key) as journal:
        rows = list(journal.records())
        for i in range(0, len(rows), 2000):
            with store.batch():
                for row in rows[i:i + 2000]:
                    store.add_event("t01", row.seq, row.body)
                    head = journal.row_hash("outbox", row.seq)
                    assert head is not None
                    store.note_state("t01", row.seq, journal.journal_id, head.hex(), "pit-1")
    return len(rows), time.perf_counter() - started


def timed(*args: str, ok: tuple[int, ...] = (0,)) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "controller.cli", *args]
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
        err = proc.stderr.read().decode() if proc.stderr else ""
        if os.waitstatus_to_exitcode(status) not in ok:
            raise RuntimeError(f"{' '.join(cmd)}: {err}")
    return {"command": " ".join(a if len(a) < 40 else "..." for a in args), "seconds": round(elapsed, 2),
            "cpu_s": round(usage.ru_utime + usage.ru_stime, 2)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3000)
    p.add_argument("--postgres", metavar="URL", help="an empty PostgreSQL database (default: an SQLite file)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="recorder-readers-") as d:
        tmp = Path(d)
        key_file = tmp / "journal.key"
        key = create_key(key_file)
        journal = tmp / "t01.journal"
        t = time.perf_counter()
        build(journal, key, args.rounds)
        built_s = time.perf_counter() - t
        url = args.postgres or str(tmp / "recorder.db")
        events, fill_s = fill(url, journal, key)
        none = tmp / "no-anchors"
        none.mkdir()
        middle = str(args.rounds // 2)
        results = [
            timed("journal", "verify", str(journal), "--key", str(key_file), "--anchor-dir", str(none),
                  ok=(0, 3)),  # no anchor there: 3, every row checks but no witness vouched
            timed("journal", "verify", str(journal), "--key", str(key_file), "--anchor-dir", str(none),
                  "--against", url),
            timed("recall", str(journal), "--round", middle, "--json"),
            timed("recall", "--db", url, "--table", "t01", "--round", middle, "--json"),
            timed("report", str(journal), "--json", "--profile", PROFILE),
            timed("report", "--db", url, "--table", "t01", "--json", "--profile", PROFILE),
        ]
    summary = {"rounds": args.rounds, "events": events, "build_s": round(built_s, 1), "fill_s": round(fill_s, 1),
               "backend": "postgresql" if args.postgres else "sqlite", "commands": results}
    if args.json:
        print(json.dumps(summary))
    else:
        print(f"{args.rounds} rounds, {events} events; journal built in {built_s:.1f} s, recorder filled in "
              f"{fill_s:.1f} s ({summary['backend']})")
        for r in results:
            print(f"  {r['seconds']:>6.2f} s wall {r['cpu_s']:>6.2f} s CPU  tablectl {r['command']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
