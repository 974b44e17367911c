"""Issue #26's acceptance run: a 200-table floor on three nodes survives a node killed twice, with zero gaps in
the recorder's database and the dashboard's floor page showing all 200 in Chromium.

    .venv/bin/python benchmarks/floor_acceptance.py [--tables 200] [--processes 4] [--minutes 10] [--down 10]
                                                    [--workdir DIR]

The floor of :mod:`benchmarks.floor_200` (the three-node NATS cluster, ``--tables`` tables in ``--processes``
processes of ``tablectl demo --cluster 3`` at ``--speed realtime``, journals ``NORMAL``) and ``tablectl
recorder`` into an SQLite file (run as the soak runs it: :class:`controller.sim.soak_recorder.SoakRecorder`).
A subscriber on node n3 (user ``dashboard``) watches every table's events. During ``--minutes`` of play, at a
third and at two thirds, a node is killed with SIGKILL and started again ``--down`` seconds later: first n1
(where every table connects first), then n2 (where the tables moved). n3 is never killed (the subscriber's).

Per kill it prints how long the tables took to move: per table, from the kill to the subscriber's first event of
it stamped after the kill (p50, p90, max over the floor; how many took over 2 s), and any table with no such
event in the 120 s after the kill. (Counting events stamped before the kill would count the cluster's
redeliveries to the subscriber: a QoS 1 message whose PUBACK a lost node took is delivered again.)

At the end (a) the floor page in headless Chromium (``benchmarks/floor_page.py``, logged in as ``dashboard``)
must show every table with its analytics while the floor plays; then the tables stop (each drains its outbox)
and (b) the recorder's database must hold every table's journal seq for seq, byte for byte, to its last seq,
nothing beyond, no gap (:meth:`SoakRecorder.check_final`), and the recorder must have met no conflict
(its warnings and its final tally). One verdict line;
exit 0 when every check holds, 1 when one fails. The working directory (journals, logs, the database) is kept.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import aiomqtt  # noqa: E402

from benchmarks.floor_200 import PREFIX, Floor  # noqa: E402
from controller.journal.anchor import load_key  # noqa: E402
from controller.sim.soak_check import InvariantBroken  # noqa: E402
from controller.sim.soak_recorder import SoakRecorder  # noqa: E402

#: a table slowed by a node's loss: its first event stamped after the kill reached the subscriber later than this
HELD_BACK_S = 2.0
#: how long after a kill a table has to publish again
RESUME_S = 120.0


@dataclass
class Arrivals:
    """Every event the subscriber saw: (arrival, the table's ts), per table."""

    per_table: dict[str, list[tuple[float, float]]] = field(default_factory=dict)

    def on(self, topic: str, payload: bytes, now: float) -> None:
        table = topic.split("/")[1]
        try:
            ts = float(json.loads(payload).get("ts"))
        except (ValueError, TypeError, AttributeError):
            return
        self.per_table.setdefault(table, []).append((now, ts))


async def _subscribe(port: int, password: str, seen: Arrivals, ready: asyncio.Event) -> None:
    while True:
        try:
            async with aiomqtt.Client("127.0.0.1", port, username="dashboard", password=password,
                                      identifier=f"floor-acceptance-{os.getpid()}", keepalive=30) as client:
                await client.subscribe(f"{PREFIX}/+/events", qos=1)
                ready.set()
                async for m in client.messages:
                    payload = m.payload if isinstance(m.payload, bytes | bytearray) else b""
                    seen.on(m.topic.value, bytes(payload), time.time())
        except aiomqtt.MqttError:
            await asyncio.sleep(0.5)


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(q * (len(values) - 1)))]


def moved(seen: Arrivals, tables: list[str], killed: float) -> tuple[dict[str, float], list[str]]:
    """After a kill at ``killed``: each table's time to publish again (from the kill to the subscriber's first
    event of it stamped after the kill: its flow through the cluster restored, whatever node it is on; an older
    event redelivered or resent from the journal does not count), and the tables with none within
    :data:`RESUME_S`."""
    resumed: dict[str, float] = {}
    silent: list[str] = []
    for table in tables:
        after = [at for at, ts in seen.per_table.get(table, []) if ts >= killed and at <= killed + RESUME_S]
        if after:
            resumed[table] = min(after) - killed
        else:
            silent.append(table)
    return resumed, silent


def recorder_conflicts(logs: list[Path]) -> tuple[list[str], int]:
    """The recorder's conflict warnings ("a second, different event at seq N") and the sum of the ``N
    conflict(s)`` of its final tally lines (a killed run has none)."""
    warnings: list[str] = []
    tallied = 0
    for log in logs:
        for line in log.read_text(errors="replace").splitlines():
            if "a second, different" in line:
                warnings.append(line)
            found = re.search(r"(\d+) conflict\(s\)", line)
            if found:
                tallied += int(found.group(1))
    return warnings, tallied


def _journals(state: Path) -> Path:
    """Where a demo process keeps its journals (beside their key)."""
    keys = sorted(state.rglob("journal.key"))
    if not keys:
        raise InvariantBroken("journals", f"{state}: no journal.key")
    return keys[0].parent


async def run(args: argparse.Namespace, work: Path) -> int:
    tables = [f"t{i:02d}" for i in range(1, args.tables + 1)]
    per = args.tables // args.processes
    failures: list[str] = []
    floor = Floor(work, args.tables)
    async with floor as broker:
        cluster = floor.cluster
        recorder = SoakRecorder(work, brokers=cluster.mqtt_urls, prefix=PREFIX,
                                password=floor.passwords.get("recorder"), seed=0)
        await recorder.start()
        seen = Arrivals()
        ready = asyncio.Event()
        sub = asyncio.create_task(_subscribe(cluster.node(2).mqtt, floor.passwords["dashboard"], seen, ready))
        await asyncio.wait_for(ready.wait(), 60)
        env = {**os.environ, "XDG_STATE_HOME": str(work / "xdg"), "PYTHONUNBUFFERED": "1"}
        procs: list[subprocess.Popen[bytes]] = []
        states = [work / f"p{i + 1}" for i in range(args.processes)]
        started = time.time()
        try:
            for i, state in enumerate(states):
                with (work / f"{state.name}.log").open("wb") as log:
                    procs.append(subprocess.Popen(
                        [sys.executable, "-m", "controller.cli", "demo", "--tables", str(per), "--first-table",
                         str(1 + i * per), "--speed", "realtime", "--seed", "1", "--state-dir", str(state),
                         "--no-dashboard", "--quiet", "--journal-sync", "NORMAL", *broker.demo_args],
                        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=ROOT))
            deadline = time.time() + 600
            while len(seen.per_table) < args.tables:
                if time.time() > deadline or any(p.poll() is not None for p in procs):
                    raise SystemExit(f"floor_acceptance: only {len(seen.per_table)} of {args.tables} tables "
                                     f"published (logs in {work})")
                await asyncio.sleep(0.5)
            print(f"all {args.tables} tables publishing {time.time() - started:.0f} s after start; load "
                  f"{os.getloadavg()[0]:.1f}", flush=True)
            play0 = time.time()
            third = args.minutes * 60 / 3
            for k, node in enumerate((0, 1), start=1):
                await asyncio.sleep(max(0.0, play0 + k * third - time.time()))
                name = cluster.node(node).name
                killed = time.time()
                cluster.kill(node)
                await asyncio.sleep(args.down)
                await asyncio.to_thread(cluster.start_node, node)
                back = time.time() - killed
                await asyncio.sleep(max(0.0, killed + RESUME_S - time.time()))
                resumed, silent = moved(seen, tables, killed)
                times = list(resumed.values())
                slow = sum(1 for t in times if t > HELD_BACK_S)
                print(f"kill {k}: {name} SIGKILL at +{killed - play0:.0f} s, serving again {back:.0f} s later; "
                      f"tables publishing again after p50 {_pct(times, 0.5):.1f} s, p90 {_pct(times, 0.9):.1f} s, "
                      f"max {_pct(times, 1.0):.1f} s ({slow} after more than {HELD_BACK_S:g} s); {len(silent)} "
                      f"tables silent for {RESUME_S:.0f} s" + (f": {' '.join(silent)}" if silent else "")
                      + f"; load {os.getloadavg()[0]:.1f}", flush=True)
                if silent:
                    failures.append(f"kill {k} ({name}): {len(silent)} tables did not publish again")
            await asyncio.sleep(max(0.0, play0 + args.minutes * 60 - time.time()))
            page = await asyncio.to_thread(
                subprocess.run, [sys.executable, str(ROOT / "benchmarks" / "floor_page.py"), "--tables",
                                 str(args.tables), "--credentials", str(floor.dir / "credentials.toml"),
                                 "--seconds", "10", "--timeout", "180", "--screenshot", str(work / "floor.png")],
                cwd=ROOT, capture_output=True, text=True)
            print((page.stdout + page.stderr).rstrip(), flush=True)
            if page.returncode != 0:
                failures.append(f"floor page: exit {page.returncode}")
        finally:
            for p in procs:
                if p.poll() is None:
                    p.send_signal(signal.SIGINT)  # the demo closes its tables: each drains its outbox
            for p in procs:
                try:
                    await asyncio.to_thread(p.wait, 120)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
                    failures.append(f"demo pid {p.pid} did not stop within 120 s")
        sub.cancel()
        await asyncio.gather(sub, return_exceptions=True)
        events = sum(len(v) for v in seen.per_table.values())
        print(f"played {time.time() - play0:.0f} s: {events} events seen, {events / args.tables:.0f} a table",
              flush=True)
        t0 = time.time()
        try:
            for i, state in enumerate(states):
                journals = _journals(state)
                await recorder.check_final(journals, tables[i * per:(i + 1) * per],
                                           load_key(journals / "journal.key"), catch_up_s=180)
            print(f"recorder: every journal held seq for seq to its last, no gap, nothing beyond "
                  f"(checked in {time.time() - t0:.0f} s)", flush=True)
        except InvariantBroken as exc:
            print(f"recorder: {exc}", flush=True)
            failures.append(f"recorder: {exc}")
        await recorder.stop()
        conflicts, tallied = recorder_conflicts(recorder.logs)
        if conflicts or tallied:
            failures.append(f"the recorder met {max(len(conflicts), tallied)} conflict(s)"
                            + (f": {conflicts[0][:200]}" if conflicts else ""))
        print(f"recorder: {max(len(conflicts), tallied)} conflicts (its warnings and its final tally)", flush=True)
    verdict = "PASS" if not failures else "FAIL: " + "; ".join(failures)
    print(f"floor acceptance ({args.tables} tables, {args.processes}x{per}, n1 then n2 killed): {verdict} "
          f"(work in {work}; load {os.getloadavg()[0]:.1f})", flush=True)
    return 0 if not failures else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", type=int, default=200)
    ap.add_argument("--processes", type=int, default=4)
    ap.add_argument("--minutes", type=float, default=10.0, help="play, the two kills at a third and two thirds")
    ap.add_argument("--down", type=float, default=10.0, help="seconds a killed node stays down")
    ap.add_argument("--workdir", type=Path, default=None, help="default: a new directory under /tmp (kept)")
    args = ap.parse_args()
    if args.tables < 1 or args.processes < 1 or args.tables % args.processes:
        print("floor_acceptance: --processes must divide --tables", file=sys.stderr)
        return 2
    if args.minutes * 60 / 3 < RESUME_S + args.down:
        print(f"floor_acceptance: --minutes {args.minutes:g} leaves too little time after each kill "
              f"({(RESUME_S + args.down) * 3 / 60:g} at least)", file=sys.stderr)
        return 2
    work = args.workdir or Path(tempfile.mkdtemp(prefix="floor-acceptance-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"floor_acceptance: {args.tables} tables in {args.processes}x{args.tables // args.processes}, "
          f"{args.minutes:g} min; {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f} at start", flush=True)
    return asyncio.run(run(args, work))


if __name__ == "__main__":
    sys.exit(main())
