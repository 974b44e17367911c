"""What a table's new journal costs the recorder: the old record kept (renamed ``t01@<journal id>``: its events,
heads, held events and ratings) and the new one begun, in the one transaction of the ``journal_started`` event.

    .venv/bin/python benchmarks/recorder_new_journal.py [--events 10000 100000] [--postgres URL] [--json]

For each size a fresh database holds one table's record of that many events (a head every 10, as states
come), written in batches; then the new journal's ``journal_started`` is timed. Without ``--postgres`` a
throwaway PostgreSQL is started (tests/postgres.py, ``fsync=off``: the store's own cost, not a disk's).
Measured: docs/floor.md, "The central record".
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from controller.recorder.store import RecorderStore, open_store

OLD, NEW = "a" * 32, "b" * 32


def _body(seq: int, kind: str = "bet", **extra: Any) -> str:
    return json.dumps({"seq": seq, "ts": 1795334400.0 + seq, "type": kind, **extra}, separators=(",", ":"))


def fill(store: RecorderStore, events: int) -> None:
    """One table's record of ``events`` events of journal OLD, a head every 10."""
    for start in range(1, events + 1, 2000):
        with store.batch():
            for seq in range(start, min(events, start + 1999) + 1):
                store.add_event("t01", seq, _body(seq, "journal_started", journal_id=OLD) if seq == 1 else _body(seq))
                if seq % 10 == 0:
                    store.note_state("t01", seq, OLD, "ab" * 32, "pit-1")


def new_journal(store: RecorderStore) -> float:
    """Seconds for the new journal's first event (the old record kept, the new begun)."""
    started = time.perf_counter()
    outcome = store.add_event("t01", 1, _body(1, "journal_started", journal_id=NEW))
    seconds = time.perf_counter() - started
    assert outcome == "new_journal", outcome
    return seconds


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--events", type=int, nargs="+", default=[10_000, 100_000])
    p.add_argument("--postgres", metavar="URL", help="an empty PostgreSQL database (default: a throwaway server)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    if any(n < 1 for n in args.events):
        p.error("--events: at least 1")
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="recorder-new-journal-") as d, ExitStack() as stack:
        if args.postgres is None:
            from tests.postgres import PostgresServer

            fresh = stack.enter_context(PostgresServer()).fresh_database
        else:
            def fresh() -> str:
                return str(args.postgres)
        for backend in ("sqlite", "postgresql"):
            for n in args.events:
                url = str(Path(d) / f"{n}.db") if backend == "sqlite" else fresh()
                with open_store(url) as store:
                    fill(store, n)
                    seconds = new_journal(store)
                results.append({"backend": backend, "events": n, "seconds": round(seconds, 3)})
                if backend == "postgresql" and args.postgres is not None:
                    break
    if args.json:
        print(json.dumps(results))
    else:
        for r in results:
            print(f"{r['backend']:<10} a record of {r['events']:>7} events kept, the new one begun: "
                  f"{r['seconds']:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
