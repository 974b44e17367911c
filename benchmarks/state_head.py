"""What naming the chain ``head`` in ``state`` costs the card's path (docs/journal.md, "The recorder").

    .venv/bin/python benchmarks/state_head.py [--calls 200000]

The card's ``state`` is made before its journal commit (the record's hash is not known yet) and its ``head``
added after it: :meth:`controller.journal.writer.Journal.record_hash` of the last record (kept in memory
when it is written: no query) and :func:`controller.service.core.with_head` (the field spliced onto the
JSON already made). Both are timed here per call, beside what making the state's JSON again would cost,
which is what the splice avoids. ``benchmarks/latency.py`` gives the whole card path, (a) against (e).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import timeit
from pathlib import Path

from controller.journal import Journal
from controller.service.core import with_head


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=200_000, help="calls timed for each figure")
    args = ap.parse_args()
    if args.calls < 1:
        ap.error("--calls: at least 1")
    with tempfile.TemporaryDirectory() as d, Journal(Path(d) / "t01.journal", synchronous="NORMAL") as journal:
        with journal.transaction():
            input_id = journal.append_input({"type": "card"})
            journal.add_records([{"type": "card_dealt"}], input_id=input_id)
        # a state of the usual size (about 2.7 kB with rated spots)
        state = json.dumps({f"k{i}": "v" * 40 for i in range(60)}, separators=(",", ":")).encode()
        seq = journal.last_seq
        n = args.calls
        lookup = timeit.timeit(lambda: journal.record_hash(seq), number=n) / n * 1e6
        spliced = timeit.timeit(lambda: with_head(state, journal.record_hash(seq)), number=n) / n * 1e6
        m = max(1, n // 10)
        again = timeit.timeit(lambda: json.dumps(json.loads(state), separators=(",", ":")), number=m) / m * 1e6
    load = os.getloadavg()[0]
    print(f"state of {len(state)} B, load average {load:.2f} on {os.cpu_count()} cores:")
    print(f"  record_hash of the last record (memory)       {lookup:7.2f} us a card")
    print(f"  record_hash + with_head (the head added)      {spliced:7.2f} us a card")
    print(f"  for scale: the state's JSON made again         {again:7.1f} us")


if __name__ == "__main__":
    main()
