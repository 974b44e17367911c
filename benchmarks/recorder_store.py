"""The recorder's database: events written per second, one event a transaction against batches, on SQLite and
PostgreSQL, as the recorder service writes them (each event with its ``state``'s chain head).

    .venv/bin/python benchmarks/recorder_store.py [--events 3000] [--batch 200] [--postgres URL] [--json]

The bodies are a real demo table's (``tablectl demo --speed max``, played first into a temporary state dir),
replayed for as many tables as it takes to reach ``--events``. Without ``--postgres`` a throwaway PostgreSQL
is started (tests/postgres.py: Debian's server in a temporary directory; ``fsync=off`` there, so its figure is
the store's own cost, not a disk's). Each case writes into a fresh database and times ``add_event`` +
``note_state`` per event, alone (one commit each) and in :meth:`RecorderStore.batch` blocks. Also the readers'
pace: ``events()`` read back. Measured: docs/floor.md, "The central record".
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from controller.cli import main as tablectl
from controller.journal import Journal
from controller.journal.anchor import load_key
from controller.recorder.store import RecorderStore, open_store


def demo_rows(tmp: Path) -> list[tuple[int, str, str, str]]:
    """(seq, body, journal id, head) of every record of a 40-round demo table."""
    state = tmp / "state"
    os.environ["XDG_STATE_HOME"] = str(tmp / "xdg")
    code = tablectl(["demo", "--tables", "1", "--rounds", "40", "--seed", "3", "--speed", "max", "--state-dir",
                     str(state), "--no-dashboard", "--quiet"])
    if code != 0:
        sys.exit(f"the demo failed (exit {code})")
    rows = []
    with Journal.open_readonly(state / "t01.journal", key=load_key(state / "journal.key")) as journal:
        for row in journal.records():
            head = journal.row_hash("outbox", row.seq)
            assert head is not None
            rows.append((row.seq, row.body, journal.journal_id, head.hex()))
    return rows


def write(store: RecorderStore, rows: list[tuple[int, str, str, str]], events: int, batch: int) -> float:
    """Seconds to write ``events`` events (the demo's, table after table) in blocks of ``batch`` (1: alone)."""
    work = [(f"t{n:03d}", *row) for n in range(1, events // len(rows) + 2) for row in rows][:events]
    started = time.perf_counter()
    for i in range(0, len(work), batch):
        with store.batch():
            for table, seq, body, journal_id, head in work[i:i + batch]:
                store.add_event(table, seq, body)
                store.note_state(table, seq, journal_id, head, "pit-1")
    return time.perf_counter() - started


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--events", type=int, default=3000)
    p.add_argument("--batch", type=int, default=200)
    p.add_argument("--postgres", metavar="URL", help="an empty PostgreSQL database (default: a throwaway server)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="recorder-bench-") as d, ExitStack() as stack:
        tmp = Path(d)
        rows = demo_rows(tmp)
        if args.postgres is None:
            from tests.postgres import PostgresServer

            server = stack.enter_context(PostgresServer())
            fresh = server.fresh_database
        else:
            def fresh() -> str:
                return str(args.postgres)
        n = 0
        for backend in ("sqlite", "postgresql"):
            for batch in (1, args.batch):
                n += 1
                url = str(tmp / f"r{n}.db") if backend == "sqlite" else fresh()
                with open_store(url) as store:
                    seconds = write(store, rows, args.events, batch)
                    t = time.perf_counter()
                    read = sum(1 for table in store.tables() for _ in store.events(table.table_id))
                    read_s = time.perf_counter() - t
                results.append({"backend": backend, "batch": batch, "events": args.events,
                                "events_per_s": round(args.events / seconds), "read_per_s": round(read / read_s)})
                if args.postgres is not None:
                    break
    if args.json:
        print(json.dumps(results))
    else:
        for r in results:
            print(f"{r['backend']:<10} batch {r['batch']:>4}: {r['events_per_s']:>7} events/s written "
                  f"(add_event + note_state), {r['read_per_s']:>7} events/s read back")
    return 0


if __name__ == "__main__":
    sys.exit(main())
