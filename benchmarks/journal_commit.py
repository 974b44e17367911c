"""One journal commit against its floor: one ``fdatasync`` of the same disk, in the same run (issue #40).

    .venv/bin/python benchmarks/journal_commit.py [--events N] [--settle-ms MS] [--dir DIR] [--syncs]

Commits a card-shaped input and two records per event through the real :class:`Journal` (keyed, its
anchor attached, ``synchronous=FULL``: as a table runs it), paced like ``benchmarks/latency.py``'s cards
(``--settle-ms`` idle between two, so each sync pays what a card's pays after a pause), and in the same
loop, interleaved, the floor: ``fdatasync`` of one rewritten 4 KiB page of a file in the same directory
(``latency.py`` section (d)), and the same rows committed with plain :mod:`sqlite3` (WAL, FULL: no chain, no
anchor; ``latency.py`` section (e)'s commit). Printed: p50/p99 of each and their ratio to the floor, and the
journal's commit against the bare one at the same moments of the run, in two phases:

- ``fresh WAL``: the first commits of a journal just opened (its ``-wal`` was truncated at the last close and
  grows a page at a time: each ``fdatasync`` then also commits the file's new size to the filesystem's log);
- ``reused WAL``: after the first automatic checkpoint (1,000 pages), when the ``-wal`` is rewritten in place,
  as a table runs for most of its day;
- ``cpu``: the same commit with ``synchronous=NORMAL`` (no sync at the commit): what the journal's own code and
  SQLite cost a commit besides the disk (never a setting to run a table with: docs/table-service.md).

``--syncs``: also run the commits under ``strace`` and print the ``fsync``/``fdatasync`` calls per commit
(two runs of N and 2 N commits, differenced: opening and closing cancel out).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from controller.journal import Journal  # noqa: E402
from controller.journal.anchor import Anchor  # noqa: E402
from controller.journal.store import Synchronous  # noqa: E402

KEY = b"k" * 32
EVENT = {"type": "card_drawn", "card": "TD", "shoe_read": [1, 2]}
RECORD = {"ts": 1763798400.123, "type": "card", "spot": 3, "hand": 0, "card": "TD", "total": 16}
#: commits until the first automatic checkpoint has run and the WAL is rewritten in place (2 pages a commit)
REUSED_AFTER = 600


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))]


def open_journal(directory: Path, sync: Synchronous) -> Journal:
    journal = Journal(directory / "bench.journal", synchronous=sync, key=KEY)
    journal.anchor = Anchor(directory / "anchors", "t01", KEY)
    return journal


def bare_db(directory: Path) -> sqlite3.Connection:
    """The same rows with plain :mod:`sqlite3` (WAL, FULL), no chain, no anchor: latency.py's (e) commit."""
    db = sqlite3.connect(directory / "bare.sqlite", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("CREATE TABLE inputs (id INTEGER PRIMARY KEY, ts REAL NOT NULL, event TEXT NOT NULL, hash BLOB)")
    db.execute("CREATE TABLE outbox (seq INTEGER PRIMARY KEY, input_id INTEGER, body TEXT NOT NULL, hash BLOB)")
    return db


def bare_commit(db: sqlite3.Connection, i: int) -> None:
    event, body = json.dumps(EVENT), json.dumps(RECORD)
    db.execute("BEGIN IMMEDIATE")
    db.execute("INSERT INTO inputs (id, ts, event, hash) VALUES (?, ?, ?, ?)", (i + 1, time.time(), event, bytes(32)))
    db.executemany("INSERT INTO outbox (seq, input_id, body, hash) VALUES (?, ?, ?, ?)",
                   [(2 * i + 1, i + 1, body, bytes(32)), (2 * i + 2, i + 1, body, bytes(32))])
    db.execute("COMMIT")


def timed(call: Callable[[], object]) -> float:
    t = time.perf_counter_ns()
    call()
    return (time.perf_counter_ns() - t) / 1e6


def run(directory: Path, sync: Synchronous, events: int, settle_s: float,
        floor: bool) -> tuple[list[float], list[float], list[float]]:
    """Journal commit, floor and bare commit times (ms), interleaved, ``events`` of each (with ``floor``)."""
    commits: list[float] = []
    syncs: list[float] = []
    bares: list[float] = []
    probe = directory / "disk-sync-probe"
    fd = os.open(probe, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    db = bare_db(directory)
    try:
        os.write(fd, bytes(64 * 4096))
        os.fsync(fd)
        with open_journal(directory, sync) as journal:
            for i in range(events):
                commits.append(timed(lambda: journal.commit_event(EVENT, [RECORD, RECORD], ts=1763798400.0)))
                time.sleep(settle_s)
                if floor:
                    os.pwrite(fd, os.urandom(4096), (i % 64) * 4096)
                    syncs.append(timed(lambda: os.fdatasync(fd)))
                    time.sleep(settle_s)
                    bares.append(timed(lambda: bare_commit(db, i)))  # noqa: B023 (called at once)
                    time.sleep(settle_s)
    finally:
        db.close()
        os.close(fd)
        probe.unlink()
    return commits, syncs, bares


def line(name: str, values: list[float], floor: list[float] | None, to: str = "floor") -> str:
    text = f"  {name:34} p50 {pct(values, 0.5):6.3f} ms  p99 {pct(values, 0.99):6.3f} ms  n {len(values)}"
    if floor:
        text += (f"   ratio to {to} p50 {pct(values, 0.5) / pct(floor, 0.5):.2f}, "
                 f"p99 {pct(values, 0.99) / pct(floor, 0.99):.2f}")
    return text


def count_syncs(events: int, directory: Path | None) -> float | None:
    """``fsync``/``fdatasync`` calls per commit, by ``strace`` (None without it)."""
    strace = shutil.which("strace")
    if strace is None:
        return None
    counts = []
    for n in (events, 2 * events):
        with tempfile.TemporaryDirectory(dir=directory) as tmp:
            out = Path(tmp) / "trace"
            subprocess.run([strace, "-f", "-e", "trace=fsync,fdatasync", "-o", str(out), sys.executable, __file__,
                            "--child", str(n), "--dir", tmp], check=True, stdout=subprocess.DEVNULL)
            counts.append(len(re.findall(r"\bf(?:data)?sync\(", out.read_text())))
    return (counts[1] - counts[0]) / events


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=1500, help="commits (at least 1,000 to see the reused WAL)")
    ap.add_argument("--settle-ms", type=float, default=5.0, help="idle between two syncs (latency.py's pacing)")
    ap.add_argument("--dir", type=Path, default=None, help="where to put the journal (default: a temp dir)")
    ap.add_argument("--syncs", action="store_true", help="count fsyncs per commit under strace")
    ap.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child is not None:  # the traced run of --syncs: commits only
        with open_journal(args.dir, "FULL") as journal:
            for _ in range(args.child):
                journal.commit_event(EVENT, [RECORD, RECORD], ts=1763798400.0)
        return

    print(f"journal commit (keyed, anchored, input + 2 records) against one fdatasync, same dir, "
          f"{args.settle_ms:g} ms idle before each; load average {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        commits, floor, bare = run(Path(tmp), "FULL", args.events, args.settle_ms / 1e3, True)
    fresh, reused = commits[:REUSED_AFTER], commits[REUSED_AFTER:]
    print(line("floor: fdatasync of a 4 KiB page", floor, None))
    print(line("bare SQLite commit, same rows", bare, floor))
    print(line("commit FULL, all", commits, floor))
    print(line("  the same, against the bare commit", commits, bare, "bare commit"))
    print(line("  fresh WAL (growing)", fresh, bare[:REUSED_AFTER], "bare commit"))
    if reused:
        print(line("  reused WAL", reused, bare[REUSED_AFTER:], "bare commit"))
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        cpu, _, _ = run(Path(tmp), "NORMAL", min(args.events, 1000), 0.0, False)
    print(line("cpu: commit NORMAL (no sync)", cpu, None))
    if args.syncs:
        per = count_syncs(200, args.dir)
        print("  fsyncs per commit (strace): " + ("strace not installed" if per is None else f"{per:.2f}"))
    print(f"load average at end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
