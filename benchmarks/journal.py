"""Journal throughput and latency: one durable commit per input event (input + its records).

    .venv/bin/python benchmarks/journal.py [--events N] [--sync FULL|NORMAL] [--records K] [--dir DIR] [--anchor]

Prints commits/s and the per-commit latency (p50, p99, max) of ``Journal.commit_event`` with a
typical card event and K public records, plus the cost of ``mark_delivered`` and a replay of
every input. Run it on the table PC's disk (``--dir``): fsync cost is the disk's. ``--anchor``: keyed, with the
table's anchor attached (in a folder beside the journal's), as a table runs it: what the anchor costs a commit.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from controller.journal import Journal
from controller.journal.anchor import Anchor


def _pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=3000)
    ap.add_argument("--sync", choices=["FULL", "NORMAL"], default="FULL")
    ap.add_argument("--records", type=int, default=2, help="public records per input event")
    ap.add_argument("--dir", type=Path, default=None, help="where to put the journal (default: a temp dir)")
    ap.add_argument("--anchor", action="store_true", help="keyed, with the table's anchor attached")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        path = Path(tmp) / "bench.journal"
        key = b"k" * 32 if args.anchor else None
        with Journal(path, synchronous=args.sync, key=key) as journal:
            if key is not None:
                journal.anchor = Anchor(Path(tmp) / "anchors", "t01", key)
            event = {"type": "card", "card": "TD"}
            record = {"ts": 1763798400.123, "type": "card", "spot": 3, "hand": 0, "card": "TD", "total": 16}
            lat: list[float] = []
            t0 = time.perf_counter()
            for _ in range(args.events):
                s = time.perf_counter()
                journal.commit_event(event, [record] * args.records, ts=1763798400.0)
                lat.append(time.perf_counter() - s)
            elapsed = time.perf_counter() - t0

            marks: list[float] = []
            for seq in range(1, journal.last_seq + 1, args.records):
                s = time.perf_counter()
                journal.mark_delivered(seq)
                marks.append(time.perf_counter() - s)

            s = time.perf_counter()
            replayed = sum(1 for _ in journal.inputs_since(0))
            replay_s = time.perf_counter() - s

    result = {
        "sync": args.sync,
        "anchor": args.anchor,
        "events": args.events,
        "records_per_event": args.records,
        "commits_per_s": round(args.events / elapsed, 1),
        "commit_p50_ms": round(statistics.median(lat) * 1e3, 3),
        "commit_p99_ms": round(_pct(lat, 0.99) * 1e3, 3),
        "commit_max_ms": round(max(lat) * 1e3, 3),
        "mark_delivered_p50_ms": round(statistics.median(marks) * 1e3, 3),
        "replay_inputs_per_s": round(replayed / replay_s, 1),
    }
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:24} {value}")


if __name__ == "__main__":
    main()
