"""How long the start-time check of a journal takes: the whole chain and SQLite's ``quick_check``.

    .venv/bin/python benchmarks/journal_verify.py [--inputs 1000000] [--dir DIR] [--keep]

Builds a keyed journal of ``--inputs`` inputs with the demo's mix of public records (1.8 a input on
average, bodies and events of the demo's sizes) through :class:`controller.journal.writer.Journal` itself
(every row hashed and sealed as the table writes them; ``synchronous=OFF`` and one commit per seal
segment while building, so it is quick), then times what a table's start does
(:meth:`Journal.verify`: ``quick_check``, every sealed segment by its digest, the rows after the last
seal one by one) and ``tablectl journal verify`` (the same, read-only, snapshots too). The target
(issue 16): under 3 s for 1,000,000 inputs. The machine's load shows in the figures (printed).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from controller.journal import Journal
from controller.journal import writer as jmod

KEY = bytes(range(32))


def build(path: Path, inputs: int) -> float:
    started = time.perf_counter()
    with Journal(path, key=KEY) as j:
        j._conn.execute("PRAGMA synchronous=OFF")  # building only: the table's own commits are FULL
        j.verify()  # an empty journal: checked, so this writer seals as it goes
        i = 0
        while i < inputs:
            with j.transaction():
                for _ in range(min(jmod.SEAL_EVERY, inputs - i)):
                    i += 1
                    ts = 1_795_000_000.0 + i * 2.137
                    event = {"card": "QD", "type": "card", "n": i}
                    bodies = [{"ts": round(ts, 3), "type": "card", "card": "QD", "spot": 3, "hand": 0, "total": 17,
                               "soft": False}] * (1 if i % 5 == 0 else 2)
                    j.commit_event(event, bodies, ts=ts)
                    if i % 500 == 0 and i > inputs - 1000:
                        j.save_snapshot({"engine": "x" * 2000, "at": i})
            if i % 100_000 < jmod.SEAL_EVERY:
                print(f"  built {i:,} inputs ({time.perf_counter() - started:.0f} s)", flush=True)
    return time.perf_counter() - started


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--inputs", type=int, default=1_000_000)
    ap.add_argument("--dir", type=Path, default=None, help="where the journal is built (default: a temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the journal (and reuse one already built there)")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="journal-verify-", dir=args.dir))
    path = work / "t01.journal"
    try:
        print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")
        built = build(path, args.inputs)
        size = path.stat().st_size / 1e6
        print(f"journal: {args.inputs:,} inputs, {size:.0f} MB, built in {built:.1f} s")
        with Journal(path, key=KEY) as j:
            started = time.perf_counter()
            j._conn.execute("PRAGMA quick_check").fetchall()
            quick = time.perf_counter() - started
        with Journal(path, key=KEY) as j:  # what a start pays (the page cache as warm as after the check above)
            cpu = time.process_time()
            result = j.verify()
            cpu = time.process_time() - cpu
        print(f"start-time verify (quick_check + chain): {result.seconds:.2f} s  target < 3 s: "
              f"{'ok' if result.seconds < 3 else 'MISSED'}; CPU time {cpu:.2f} s in up to 3 threads; "
              f"quick_check alone {quick:.2f} s; "
              f"{result.rows:,} rows, {result.sealed_rows:,} by seal digests, {result.tail_rows:,} one by one")
        with Journal.open_readonly(path, key=KEY) as j:
            result = j.verify(snapshots=True)
        print(f"tablectl journal verify (read-only, snapshots too): {result.seconds:.2f} s")
        print(f"load average {os.getloadavg()[0]:.2f} at end")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
