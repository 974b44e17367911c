"""The demo's embedded broker: start time, memory and CPU of ``tablectl demo`` on it (docs/mqtt.md).

Runs ``tablectl demo --speed fast --tables K --rounds N`` from a source tree (``--tree``, default this checkout:
another tree, e.g. one still on amqtt, gives the figures to compare) and reports, the median of ``--runs``:

* ``broker_s``: from the command to its "MQTT broker:" line (the broker up and serving);
* ``first_round_s``: from the command to the first settled round it prints;
* ``peak_rss_mb``: the largest resident memory of the demo and every process under it (sampled every 0.1 s);
* ``broker_rss_mb``, ``broker_cpu_s``: the same for the broker's own processes when they are apart from the
  demo's (the NATS node and its auth service; amqtt runs inside the demo: 0);
* ``cpu_s``: CPU seconds (user + system) of the demo and everything under it, for the whole run.

    .venv/bin/python benchmarks/demo_broker.py [--tree PATH] [--tables 2] [--rounds 20] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

PAGE_MB = os.sysconf("SC_PAGE_SIZE") / 1e6
TICK_S = os.sysconf("SC_CLK_TCK")
BROKER_PROGRAMS = (b"nats-server", b"floor-auth")


def _tree(root: int) -> dict[int, tuple[bytes, float, float]]:
    """Each process under ``root`` (itself included): its command line, resident MB and CPU seconds."""
    children: dict[int, list[int]] = {}
    info: dict[int, tuple[bytes, float, float]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        pid, ppid = int(name), int(fields[1])
        children.setdefault(ppid, []).append(pid)
        info[pid] = (cmdline, int(fields[21]) * PAGE_MB, (int(fields[11]) + int(fields[12])) / TICK_S)
    out, todo = {}, [root]
    while todo:
        pid = todo.pop()
        if pid in info:
            out[pid] = info[pid]
        todo.extend(children.get(pid, []))
    return out


def one_run(tree: Path, tables: int, rounds: int) -> dict[str, float]:
    state = Path(tempfile.mkdtemp(prefix="bench-demo-broker-"))
    env = {**os.environ, "PYTHONPATH": str(tree)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "controller.cli", "demo", "--speed", "fast", "--tables", str(tables),
                             "--rounds", str(rounds), "--no-dashboard", "--state-dir", str(state / "s")],
                            cwd=tree, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    marks: dict[str, float] = {}

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("MQTT broker:"):
                marks.setdefault("broker_s", time.monotonic() - started)
            if re.match(r"t\d+ round +1:", line):
                marks.setdefault("first_round_s", time.monotonic() - started)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    peak = broker_peak = 0.0
    broker_cpu: dict[int, float] = {}
    while proc.poll() is None:
        procs = _tree(proc.pid)
        peak = max(peak, sum(rss for _, rss, _ in procs.values()))
        broker = {pid: v for pid, v in procs.items() if any(p in v[0] for p in BROKER_PROGRAMS)}
        broker_peak = max(broker_peak, sum(rss for _, rss, _ in broker.values()))
        broker_cpu.update({pid: cpu for pid, (_, _, cpu) in broker.items()})
        time.sleep(0.1)
    reader.join(5)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        raise SystemExit(f"the demo exited {proc.returncode} (tree {tree})")
    return {**marks, "peak_rss_mb": peak, "broker_rss_mb": broker_peak, "broker_cpu_s": sum(broker_cpu.values()),
            "cpu_s": cpu}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", type=Path, default=Path(__file__).resolve().parents[1])
    ap.add_argument("--tables", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    runs = [one_run(args.tree.resolve(), args.tables, args.rounds) for _ in range(args.runs)]
    median = {k: round(statistics.median(r[k] for r in runs), 2) for k in runs[0]}
    print(json.dumps({"tree": str(args.tree), "tables": args.tables, "rounds": args.rounds, "runs": args.runs,
                      "load_1min": os.getloadavg()[0], **median}))


if __name__ == "__main__":
    main()
