"""Many simulated tables in one process: rounds per second per table and CPU, ptys against ``sim:``.

    .venv/bin/python benchmarks/pit.py [--tables 40,100] [--backends pty,sim] [--seconds 12]
                                       [--warmup 3] [--profile house-h17] [--journal-sync FULL,NORMAL]

Each run is ``tablectl demo --speed max`` as :func:`controller.sim.demo.run_demo` (the real table
services, drivers, journals and MQTT publishers, one asyncio loop) in a child process of its own,
on one Mosquitto started here, with the serial devices of every table either behind ptys (the
kernel's tty layer, :class:`drivers.transport.TtyTransport`) or on the in-memory ``sim:`` backend
(:mod:`simulators.memory`: same drivers, same bytes). Rounds settled are counted in a window of
``--seconds`` that opens ``--warmup`` seconds after the first round settled; CPU is the child's
user+sys time over the window (``getrusage``) and the broker's (``/proc/PID/stat``). The floor is
one table on ptys measured first in the same run: the rate of a table that has the machine to
itself. Each row prints rounds/s per table and as a fraction of the floor, CPU per round, the
highest file descriptor the child held (FD_SETSIZE is 1024), the time to the first settled round
and whether every table settled at least one round. Figures are printed, never asserted; the
machine's load shows in them (load average printed).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, TextIO

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _cpu_of(pid: int) -> float:
    """User+sys seconds of another process (from /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _own_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


class _Counter:
    """The demo's output: counts the settled rounds (one line each) and which tables settled."""

    def __init__(self) -> None:
        self.rounds = 0
        self.tables: set[str] = set()
        self.first: float | None = None
        self.lines: list[str] = []

    def write(self, text: str) -> int:
        for line in text.splitlines():
            if " round " in line and line.startswith("t"):
                self.rounds += 1
                self.tables.add(line.split()[0])
                if self.first is None:
                    self.first = time.monotonic()
            elif line:
                self.lines.append(line)
        return len(text)

    def flush(self) -> None:
        pass


def child(args: argparse.Namespace) -> None:
    """One measured demo run; prints one JSON object."""
    import controller.sim.demo as demo
    from controller.profiles import load_rules

    demo.DemoTable.pty_tables_max = 10**9 if args.backend == "pty" else 0
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # ptys take ~25 descriptors a table
    counter = _Counter()
    opts = demo.DemoOptions(rules=load_rules(args.profile), tables=args.tables, rounds=None, speed="max",
                            broker=args.broker, state_dir=Path(args.state_dir), dashboard=False, quiet=False,
                            journal_sync=args.journal_sync)
    result: dict[str, Any] = {}
    t0 = time.monotonic()

    async def measure() -> None:
        while counter.first is None:
            await asyncio.sleep(0.05)
            if time.monotonic() - t0 > 60:
                result["stuck"] = "no round settled in 60 s"
                os.kill(os.getpid(), signal.SIGINT)
                return
        result["first_round_s"] = counter.first - t0
        await asyncio.sleep(args.warmup)
        r0, c0, b0, w0 = counter.rounds, _own_cpu(), _cpu_of(args.broker_pid), time.monotonic()
        await asyncio.sleep(args.seconds)
        r1, c1, b1, w1 = counter.rounds, _own_cpu(), _cpu_of(args.broker_pid), time.monotonic()
        result.update(rounds=r1 - r0, window_s=w1 - w0, cpu_s=c1 - c0, broker_cpu_s=b1 - b0,
                      tables_settled=len(counter.tables),
                      max_fd=max(int(fd) for fd in os.listdir("/proc/self/fd")))
        os.kill(os.getpid(), signal.SIGINT)  # the demo's Ctrl-C: every table closed cleanly

    async def run() -> int:
        task = asyncio.create_task(measure())
        out: Any = counter
        code = await demo.run_demo(opts, out)
        task.cancel()
        return code

    code = asyncio.run(run())
    t_close = time.monotonic()
    result.update(code=code, total_s=t_close - t0, problems=[x for x in counter.lines if "rounds 0 " in x][:3])
    print(json.dumps(result))


def run_child(args: argparse.Namespace, backend: str, tables: int, broker: Any, work: Path,
              sync: str = "FULL") -> dict[str, Any]:
    state = Path(tempfile.mkdtemp(dir=work, prefix=f"{backend}-{tables}-"))
    cmd = [sys.executable, __file__, "--child", "--backend", backend, "--tables", str(tables), "--journal-sync", sync,
           "--seconds", str(args.seconds), "--warmup", str(args.warmup), "--profile", args.profile,
           "--broker", broker.url, "--broker-pid", str(broker.pid), "--state-dir", str(state)]
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=args.seconds + args.warmup + 300)
    lines = [x for x in proc.stdout.splitlines() if x.startswith("{")]
    if proc.returncode != 0 or not lines or "stuck" in lines[-1]:
        raise SystemExit(f"{backend} x{tables}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(lines[-1])
    result["stderr_lines"] = len(proc.stderr.splitlines())
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--tables", default="40,100", help="table counts, comma-separated (default 40,100)")
    parser.add_argument("--backends", default="pty,sim", help="pty, sim or both (default pty,sim)")
    parser.add_argument("--seconds", type=float, default=12.0, help="measured window per run (default 12)")
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds after the first round (default 3)")
    parser.add_argument("--profile", default="house-h17")
    parser.add_argument("--journal-sync", default="FULL",
                        help="FULL, NORMAL or both, comma-separated: each table count and backend run with each "
                             "(default FULL; the floor is always FULL)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--backend", help=argparse.SUPPRESS)
    parser.add_argument("--broker", help=argparse.SUPPRESS)
    parser.add_argument("--broker-pid", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--state-dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        args.tables = int(args.tables)
        child(args)
        return
    from tests.mqtt_broker import Mosquitto

    out: TextIO = sys.stdout
    counts = [int(x) for x in args.tables.split(",")]
    backends = args.backends.split(",")
    with tempfile.TemporaryDirectory(prefix="pit-bench-") as d, Mosquitto(Path(d) / "mosquitto") as broker:
        broker.start()
        print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at start; "
              f"Mosquitto {broker.url}; --speed max, window {args.seconds:g} s after {args.warmup:g} s", file=out)
        floor = run_child(args, "pty", 1, broker, Path(d))
        floor_rate = floor["rounds"] / floor["window_s"]
        header = (f"{'run':<17} {'rounds/s':>9} {'per table':>10} {'x floor':>8} {'CPU ms/round':>13} "
                  f"{'broker ms/round':>16} {'CPU %core':>10} {'max fd':>7} {'1st round':>10} "
                  f"{'tables ok':>10} {'exit':>5}")
        print(header, file=out)

        def row(name: str, r: dict[str, Any], tables: int) -> None:
            rate = r["rounds"] / r["window_s"]
            per_round = 1000 * r["cpu_s"] / max(r["rounds"], 1)
            broker_per_round = 1000 * r["broker_cpu_s"] / max(r["rounds"], 1)
            print(f"{name:<17} {rate:>9.1f} {rate / tables:>10.3f} {rate / tables / floor_rate:>8.2f} "
                  f"{per_round:>13.1f} {broker_per_round:>16.2f} {100 * r['cpu_s'] / r['window_s']:>9.0f}% "
                  f"{r['max_fd']:>7} {r['first_round_s']:>9.1f}s {r['tables_settled']:>4}/{tables:<5} "
                  f"{r['code']:>5}", file=out, flush=True)

        row("floor pty1", floor, 1)
        for tables in counts:
            for backend in backends:
                for sync in args.journal_sync.split(","):
                    name = f"{backend} x{tables}" + ("" if sync == "FULL" else f" {sync}")
                    row(name, run_child(args, backend, tables, broker, Path(d), sync), tables)
        print(f"load average {os.getloadavg()[0]:.2f} at end", file=out)


if __name__ == "__main__":
    main()
