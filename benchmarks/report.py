"""``tablectl report`` on a long journal: rounds per second and peak memory, as a table PC runs it.

    .venv/bin/python benchmarks/report.py [--rounds 10000] [--journal PATH] [--keep] [--json]

Plays ``--rounds`` rounds of a simulated house-h17 table (the demo's dealer and crowd, the real engine) through
:class:`controller.service.core.TableCore` into a journal (``synchronous=NORMAL`` to build it quickly; the
report only reads), its clock stepping like a live table's (an hour is about 5,500 rounds), unless
``--journal`` names one already built. Then runs ``tablectl report PATH`` (the default summary), ``--detail``
and ``--json`` as separate processes, each timed, with its peak resident memory (the kernel's ``ru_maxrss`` of
that process, from ``wait4``), its CPU time (wall time on a busy machine says little) and the lines it
printed. The target (issue 28): under 100 MB on 10,000 rounds, a screenful by default; docs/deploy.md gives
the table PC ``MemoryMax=256M``. Measured: docs/analytics.md.
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
from controller.profiles import load_rules
from controller.service.core import TableCore
from controller.sim.dealer import SimulatedDealer

PROFILE = "house-h17"
#: seconds between two inputs of the simulated table (about 5,500 rounds an hour, as the demo played)
STEP_S = 0.025


class _Clock:
    def __init__(self, start: float) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


def build(path: Path, rounds: int, *, seed: int = 1) -> int:
    """A journal of ``rounds`` settled rounds; returns its inputs."""
    rules = load_rules(PROFILE)
    clock = _Clock(1_795_000_000.0)
    with Journal(path, synchronous="NORMAL") as journal:
        core = TableCore("t01", rules, journal, clock=clock)
        dealer = SimulatedDealer(rules, seed=seed, table_id="t01")
        core.apply(ev.TableOpened(now=clock.now))
        while core.state()["totals"]["rounds"] < rounds:
            clock.now += STEP_S
            event = dealer.next_event(core.table)
            if event is None:
                raise RuntimeError(f"the simulated table is stuck: {core.state()}")
            core.apply(event)
        return journal.last_input_id


def run_report(path: Path, *args: str) -> dict[str, Any]:
    """One ``tablectl report`` process: wall time, peak RSS (MB) and the lines it printed."""
    cmd = [sys.executable, "-m", "controller.cli", "report", str(path), "--profile", PROFILE, *args]
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        err = proc.stderr.read().decode() if proc.stderr else ""
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {err}")
        out.seek(0)
        text = out.read().decode()
    return {"args": " ".join(args) or "(summary)", "seconds": round(elapsed, 2),
            "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
            "peak_mb": round(usage.ru_maxrss / 1024, 1), "lines": len(text.splitlines()), "bytes": len(text)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10_000)
    parser.add_argument("--journal", type=Path, help="an existing journal to report on (nothing is built)")
    parser.add_argument("--keep", action="store_true", help="keep the journal built (its path is printed)")
    parser.add_argument("--json", action="store_true", help="one JSON object")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="report-bench-"))
    path = args.journal or folder / "t01.journal"
    built_s = None
    if args.journal is None:
        start = time.perf_counter()
        build(path, args.rounds)
        built_s = round(time.perf_counter() - start, 1)
    with Journal.open_readonly(path) as journal:
        settled = sum(1 for row in journal.records() if '"round_settled"' in row.body)
    runs = [run_report(path), run_report(path, "--detail"), run_report(path, "--json")]
    for r in runs:
        r["rounds_per_s"] = round(settled / r["seconds"]) if r["seconds"] else None
        r["rounds_per_cpu_s"] = round(settled / r["cpu_s"]) if r["cpu_s"] else None
    result = {"journal": str(path), "rounds": settled, "journal_mb": round(path.stat().st_size / 2**20, 1),
              "built_s": built_s, "runs": runs}
    if args.json:
        print(json.dumps(result))
    else:
        print(f"journal {path}: {settled} rounds, {result['journal_mb']} MB"
              + (f" (built in {built_s} s)" if built_s is not None else ""))
        for r in runs:
            print(f"  tablectl report {r['args']:<10} {r['seconds']:>6.2f} s ({r['cpu_s']:>5.2f} s CPU)  "
                  f"{r['rounds_per_s']:>6} rounds/s ({r['rounds_per_cpu_s']} per CPU s)  "
                  f"peak {r['peak_mb']:>6.1f} MB  {r['lines']:>5} lines")
    if not args.keep and args.journal is None:
        for p in folder.iterdir():
            p.unlink()
        folder.rmdir()
    elif args.journal is None:
        print(f"kept: {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
