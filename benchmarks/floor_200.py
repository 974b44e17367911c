"""A floor of 200 simulated tables at the pit's pace on the three-node NATS cluster: what a table and a node cost.

    .venv/bin/python benchmarks/floor_200.py [--tables 200] [--minutes 3] [--splits 1,4] [--speed realtime]
                                             [--mosquitto | --no-mosquitto] [--ramp 20,40,80] [--ramp-seconds 60]
                                             [--journal-sync NORMAL]

Each case runs the floor's cluster (three ``nats-server`` on loopback, JetStream, the roles as permissions, the
``TABLES`` stream: :mod:`controller.floor.cluster`) and ``--tables`` tables split over P processes of
``tablectl demo --cluster 3 --cluster-dir DIR --first-table N`` (the real table services, drivers, journals and
MQTT publishers; every simulated device; carded players), each process K = tables / P tables on one asyncio
loop. The tables connect to the first node that answers (node 1); a subscriber on node 3 (user ``dashboard``,
QoS 1, ``<prefix>/+/events``) stands for the floor's readers. After every table has published and
``--warmup`` seconds more, a window of ``--minutes`` measures:

* the pace: rounds an hour per table (``round_settled`` events) and events a second for the floor;
* card to subscriber: from a ``card`` event's ``ts`` (the table's clock when it took the card from the shoe,
  before the journal commit) to its arrival at the subscriber (same machine, same clock), p50 and p99, and the
  p50 of the window's first and last thirds (a backlog shows as a last third far above the first);
* CPU (user + sys from ``/proc``, in cores: CPU seconds per second) and memory (RSS at the end) of the table
  processes (per table) and of the nodes; the machine's load average.

With ``--mosquitto`` (the default) the same split also runs on one Mosquitto (no ACL, ``max_queued_messages
100000`` as ``tablectl broker-config`` writes) in the same run, so the cluster's cost comes as a ratio.
``--ramp`` then runs K tables in one process at ``--speed fast`` (about a round a second each, ~60x the pit's
pace) for ``--ramp-seconds`` each on the cluster: the most tables that hold is the last K whose last-third p50
stays within 2x (+20 ms) of its first third's, whose rounds a second per table stay above half the
smallest K's and whose recorder is no more than 10 s of events behind at the window's end.

With ``--recorder`` (the default) ``tablectl recorder`` reads every case into an SQLite file of its own (a
persistent QoS 1 session as user ``recorder``): card to database (its ``received_at`` minus the card's
``ts``) p50 and p99, how many events it was behind the subscriber at the window's end, its CPU and RSS.

``--speed realtime`` is the demo's watching pace (a round every 15 to 20 s, about 200 an hour: about twice a
real pit's 60 to 120), so the per-table figures are an upper bound for a real pit. The journals default to
``--journal-sync NORMAL``: a table PC has its own disk, and 200 tables fsyncing on this one disk would measure
the disk. Figures are printed, never asserted; the machine's load shows in them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
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

from controller.floor.cluster import NatsCluster, loopback_ports  # noqa: E402
from controller.floor.nats_config import write_nats_cluster  # noqa: E402
from controller.mqtt.mosquitto import Mosquitto  # noqa: E402

PREFIX = "tables"


def _cpu_of(pid: int) -> float:
    """User+sys seconds of a process (from /proc); 0 when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _node_pids(cluster_dir: Path) -> list[int]:
    """The nats-server processes running a node config of ``cluster_dir``."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(str(cluster_dir).encode() in part and part.endswith(b"nats.conf") for part in cmd):
            pids.append(int(proc.name))
    return pids


@dataclass
class Broker:
    """Where the tables publish: the cluster (its directory) or one Mosquitto."""

    name: str
    sub_port: int
    sub_login: tuple[str | None, str | None]
    demo_args: list[str]
    pids: list[int]
    urls: list[str] = field(default_factory=list)  # for the recorder
    recorder_password: str | None = None


@dataclass
class Seen:
    """What the subscriber saw in the window."""

    started: float = 0.0
    tables: set[str] = field(default_factory=set)
    window: tuple[float, float] | None = None
    events: int = 0
    rounds: int = 0
    cards: list[tuple[float, float]] = field(default_factory=list)  # (arrival, latency ms)
    top: dict[str, int] = field(default_factory=dict)  # the highest seq seen per table

    def on(self, topic: str, payload: bytes, now: float) -> None:
        table = topic.split("/")[1]
        self.tables.add(table)
        event = json.loads(payload)
        if isinstance(event.get("seq"), int):
            self.top[table] = max(self.top.get(table, 0), event["seq"])
        w = self.window
        if w is None or not w[0] <= now <= w[1]:
            return
        self.events += 1
        kind = event.get("type")
        if kind == "round_settled":
            self.rounds += 1
        elif kind == "card" and isinstance(event.get("ts"), int | float):
            self.cards.append((now, (now - float(event["ts"])) * 1000))


async def _subscribe(broker: Broker, seen: Seen, ready: asyncio.Event) -> None:
    user, password = broker.sub_login
    while True:
        try:
            async with aiomqtt.Client("127.0.0.1", broker.sub_port, username=user, password=password,
                                      identifier=f"floor-200-sub-{os.getpid()}", keepalive=30) as client:
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


@dataclass
class Figures:
    label: str
    tables: int
    processes: int
    seconds: float
    load: float
    rounds_per_hour: float
    events_per_s: float
    p50: float
    p99: float
    p50_first: float
    p50_last: float
    table_cores: float
    table_rss_mb: float
    broker_cores: float
    broker_rss_mb: float
    started_s: float
    publishing: int
    rounds: int
    recorder: RecorderFigures | None = None

    def at_pace(self, rounds_per_hour: float) -> str:
        """The CPU a table and the broker would take at a real pit's pace, from the CPU each settled round cost
        here (a starved process plays fewer rounds: this is what holds whatever its pace)."""
        if not self.rounds:
            return "  per settled round: no round settled"
        table_ms = 1000 * self.table_cores * self.seconds / self.rounds
        broker_ms = 1000 * self.broker_cores * self.seconds / self.rounds
        per_s = rounds_per_hour / 3600
        floor = self.tables * (table_ms + broker_ms) * per_s / 1000
        return (f"  per settled round: {table_ms:.0f} ms CPU in the table process, {broker_ms:.0f} ms in the broker; "
                f"at {rounds_per_hour:.0f} rounds/h a table takes {table_ms * per_s:.1f} milli-cores and the broker "
                f"{broker_ms * per_s:.1f} for it: {self.tables} tables {floor:.2f} cores")

    def lines(self) -> list[str]:
        per = self.tables
        return [
            f"{self.label}: {self.tables} tables in {self.processes} process(es) x {self.tables // self.processes}, "
            f"{self.seconds:.0f} s window, load {self.load:.1f}; all {self.publishing} publishing "
            f"{self.started_s:.0f} s after start",
            f"  pace: {self.rounds_per_hour:.0f} rounds/h per table, {self.events_per_s:.0f} events/s on the floor",
            f"  card -> subscriber: p50 {self.p50:.1f} ms, p99 {self.p99:.1f} ms "
            f"(p50 first third {self.p50_first:.1f} ms, last third {self.p50_last:.1f} ms)",
            f"  tables: {self.table_cores:.2f} cores in all, {1000 * self.table_cores / per:.1f} milli-cores and "
            f"{self.table_rss_mb / per:.1f} MB per table ({self.table_rss_mb:.0f} MB RSS)",
            f"  broker: {self.broker_cores:.2f} cores, {self.broker_rss_mb:.0f} MB RSS "
            f"({1000 * self.broker_cores / per:.1f} milli-cores per table)",
            self.at_pace(90.0),
            *([self.recorder.line()] if self.recorder is not None else []),
        ]


@dataclass
class RecorderFigures:
    """The central recorder's side of a case: card to its database, how far behind it was, what it cost."""

    p50: float
    p99: float
    behind: int  # events the subscriber had and the recorder not, at the window's end
    behind_tables: int
    cores: float
    rss_mb: float

    def line(self) -> str:
        return (f"  recorder: card -> database p50 {self.p50:.1f} ms, p99 {self.p99:.1f} ms; at the window's end "
                f"{self.behind} events behind the subscriber ({self.behind_tables} tables); {self.cores:.2f} cores, "
                f"{self.rss_mb:.0f} MB RSS")


def _recorder_latencies(db: Path, tables: list[str], t0: float, t1: float) -> list[float]:
    """Card -> recorder (its ``received_at`` minus the card's ``ts``), ms, for the window's cards."""
    from controller.recorder.store import open_store

    store = open_store(str(db), create=False)
    out: list[float] = []
    try:
        for table in tables:
            first = store.first_seq_at(table, t0)
            if first is None:
                continue
            for e in store.events(table, first):
                if e.ts > t1:
                    break
                if e.type == "card":
                    out.append((e.received_at - e.ts) * 1000)
    finally:
        store.close()
    return out


def _recorder_positions(db: Path) -> dict[str, int]:
    from controller.recorder.store import open_store

    store = open_store(str(db), create=False)
    try:
        return {t.table_id: t.last_seq for t in store.tables()}
    finally:
        store.close()


async def run_case(label: str, broker: Broker, workdir: Path, *, tables: int, processes: int, speed: str,
                   seconds: float, warmup: float, journal_sync: str, recorder: bool = False) -> Figures:
    """``tables`` tables in ``processes`` demo processes on ``broker`` (and the recorder reading them, into an
    SQLite file), measured over ``seconds``."""
    seen = Seen()
    rec: subprocess.Popen[bytes] | None = None
    db = workdir / "recorder.db"
    if recorder:
        renv = {**os.environ, **({"TABLECTL_RECORDER_PASSWORD": broker.recorder_password}
                                 if broker.recorder_password else {})}
        rlog = (workdir / "recorder.log").open("wb")
        rec = subprocess.Popen([sys.executable, "-m", "controller.cli", "recorder", "--broker", ",".join(broker.urls),
                                "--db", str(db), "--prefix", PREFIX, "--log-level", "WARNING"],
                               stdin=subprocess.DEVNULL, stdout=rlog, stderr=subprocess.STDOUT, env=renv, cwd=ROOT)
        rlog.close()
    ready = asyncio.Event()
    sub = asyncio.create_task(_subscribe(broker, seen, ready))
    await asyncio.wait_for(ready.wait(), 60)
    per = tables // processes
    env = {**os.environ, "XDG_STATE_HOME": str(workdir / "xdg"), "PYTHONUNBUFFERED": "1"}
    procs: list[subprocess.Popen[bytes]] = []
    started = time.time()
    try:
        for i in range(processes):
            state = workdir / f"{label.replace(' ', '-')}-p{i + 1}"
            log = (workdir / f"{state.name}.log").open("wb")
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "controller.cli", "demo", "--tables", str(per), "--first-table",
                 str(1 + i * per), "--speed", speed, "--seed", "1", "--state-dir", str(state), "--no-dashboard",
                 "--quiet", "--journal-sync", journal_sync, *broker.demo_args],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=ROOT))
            log.close()
        deadline = time.time() + 600
        while len(seen.tables) < per * processes:
            if time.time() > deadline or any(p.poll() is not None for p in procs):
                raise RuntimeError(f"{label}: only {len(seen.tables)} of {tables} tables published "
                                   f"(logs in {workdir})")
            await asyncio.sleep(0.5)
        all_up = time.time() - started
        await asyncio.sleep(warmup)
        pids = [p.pid for p in procs]
        rpids = [rec.pid] if rec is not None else []
        cpu0 = {pid: _cpu_of(pid) for pid in pids + broker.pids + rpids}
        t0 = time.time()
        seen.window = (t0, t0 + seconds)
        await asyncio.sleep(seconds)
        t1 = time.time()
        cpu1 = {pid: _cpu_of(pid) for pid in pids + broker.pids + rpids}
        tops = dict(seen.top)
        held = await asyncio.to_thread(_recorder_positions, db) if rec is not None else {}
        load = os.getloadavg()[0]
        table_rss = sum(_rss_mb(pid) for pid in pids)
        broker_rss = sum(_rss_mb(pid) for pid in broker.pids)
        recorder_rss = sum(_rss_mb(pid) for pid in rpids)
        await asyncio.sleep(2)  # the window's last cards arrive
    finally:
        if rec is not None and rec.poll() is None:
            rec.terminate()  # after the tables: it finishes the commit in hand
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGINT)  # the demo closes its tables cleanly
        for p in procs:
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        sub.cancel()
        await asyncio.gather(sub, return_exceptions=True)
        if rec is not None:
            try:
                rec.wait(timeout=60)
            except subprocess.TimeoutExpired:
                rec.kill()
                rec.wait()
    span = t1 - t0
    rfig = None
    if rec is not None:
        rlat = await asyncio.to_thread(_recorder_latencies, db, sorted(seen.tables), t0, t1)
        behind = {t: top - held.get(t, 0) for t, top in tops.items() if top > held.get(t, 0)}
        rfig = RecorderFigures(_pct(rlat, 0.5), _pct(rlat, 0.99), sum(behind.values()), len(behind),
                               sum(cpu1[p] - cpu0[p] for p in rpids) / span, recorder_rss)
    lat = [ms for _, ms in seen.cards]
    third = span / 3
    first = [ms for at, ms in seen.cards if at < t0 + third]
    last = [ms for at, ms in seen.cards if at >= t1 - third]
    return Figures(
        label=label, tables=tables, processes=processes, seconds=span, load=load,
        rounds_per_hour=seen.rounds / tables / span * 3600, events_per_s=seen.events / span,
        p50=_pct(lat, 0.5), p99=_pct(lat, 0.99), p50_first=_pct(first, 0.5), p50_last=_pct(last, 0.5),
        table_cores=sum(cpu1[p] - cpu0[p] for p in pids) / span, table_rss_mb=table_rss,
        broker_cores=sum(cpu1[p] - cpu0[p] for p in broker.pids) / span, broker_rss_mb=broker_rss,
        started_s=all_up, publishing=len(seen.tables), rounds=seen.rounds, recorder=rfig)


class Floor:
    """The cluster for ``tables`` tables (t01...), with the dashboard user for the subscriber."""

    def __init__(self, workdir: Path, tables: int) -> None:
        self.dir = workdir / "cluster"
        files = write_nats_cluster(self.dir, [f"t{i:02d}" for i in range(1, tables + 1)], prefix=PREFIX,
                                   ports=loopback_ports(3))
        self.passwords = dict(files.passwords)
        self.cluster = NatsCluster(self.dir)

    async def __aenter__(self) -> Broker:
        await asyncio.to_thread(self.cluster.start)
        await self.cluster.ensure_stream()
        return Broker("cluster", self.cluster.node(2).mqtt, ("dashboard", self.passwords["dashboard"]),
                      ["--cluster", "3", "--cluster-dir", str(self.dir)], _node_pids(self.dir),
                      urls=self.cluster.mqtt_urls, recorder_password=self.passwords.get("recorder"))

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self.cluster.stop)


def _splits(text: str, tables: int) -> list[int]:
    out: list[int] = []
    for part in text.split(",") if text not in ("", "none") else []:  # none: the ramp alone
        n = int(part)
        if n < 1 or tables % n:
            raise SystemExit(f"--splits {part}: a number of processes that divides --tables {tables}")
        out.append(n)
    return out


async def main(args: argparse.Namespace) -> None:
    print(f"floor_200: {args.tables} tables at --speed {args.speed}, {args.minutes:g} min windows, journals "
          f"{args.journal_sync}; {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f} at start", flush=True)
    results: list[Figures] = []
    with tempfile.TemporaryDirectory(prefix="floor-200-") as tmp:
        work = Path(tmp) if args.workdir is None else args.workdir  # kept when given: the demos' logs
        work.mkdir(parents=True, exist_ok=True)
        seconds = args.minutes * 60
        for processes in _splits(args.splits, args.tables):
            case = work / f"cluster-{processes}"
            case.mkdir()
            async with Floor(case, args.tables) as broker:
                fig = await run_case(f"cluster {processes}x{args.tables // processes}", broker, case,
                                     tables=args.tables, processes=processes, speed=args.speed, seconds=seconds,
                                     warmup=args.warmup, journal_sync=args.journal_sync,
                                     recorder=args.recorder)
            print("\n".join(fig.lines()), flush=True)
            results.append(fig)
            if args.mosquitto:
                case = work / f"mosquitto-{processes}"
                mosq = Mosquitto(case / "mosquitto", extra_config="max_queued_messages 100000")
                mosq.start()
                try:
                    assert mosq.pid is not None
                    broker = Broker("mosquitto", mosq.port, (None, None), ["--broker", mosq.url], [mosq.pid],
                                    urls=[mosq.url])
                    m = await run_case(f"mosquitto {processes}x{args.tables // processes}", broker, case,
                                       tables=args.tables, processes=processes, speed=args.speed, seconds=seconds,
                                       warmup=args.warmup, journal_sync=args.journal_sync,
                                       recorder=args.recorder)
                finally:
                    mosq.close()
                print("\n".join(m.lines()), flush=True)
                print(f"  cluster / Mosquitto: broker CPU x{fig.broker_cores / m.broker_cores:.1f}, card p50 "
                      f"x{fig.p50 / m.p50:.1f}, p99 x{fig.p99 / m.p99:.1f}, table CPU "
                      f"x{fig.table_cores / m.table_cores:.2f}", flush=True)
        ramp = [int(n) for n in args.ramp.split(",")] if args.ramp else []
        base: float | None = None
        held = 0
        for n in ramp:
            case = work / f"ramp-{n}"
            case.mkdir()
            async with Floor(case, n) as broker:
                fig = await run_case(f"ramp fast 1x{n}", broker, case, tables=n, processes=1, speed="fast",
                                     seconds=args.ramp_seconds, warmup=args.warmup, journal_sync=args.journal_sync,
                                     recorder=args.recorder)
            print("\n".join(fig.lines()), flush=True)
            rate = fig.rounds_per_hour
            base = rate if base is None else base
            holds = fig.p50_last <= 2 * fig.p50_first + 20 and rate >= base / 2
            if fig.recorder is not None:  # the recorder keeps up too: no more than 10 s of events behind
                holds = holds and fig.recorder.behind <= 10 * fig.events_per_s
            print(f"  --speed fast with {n} tables: {'holds' if holds else 'lag grows'}", flush=True)
            if not holds:
                break
            held = n
        if ramp:
            print(f"most tables --speed fast held in one process: {held or 'none of ' + args.ramp}", flush=True)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", type=int, default=200)
    ap.add_argument("--minutes", type=float, default=3.0, help="each case's measured window")
    ap.add_argument("--warmup", type=float, default=20.0, help="seconds after every table has published")
    ap.add_argument("--splits", default="1,4",
                    help="processes the tables are split over, one case each (none: only the --ramp)")
    ap.add_argument("--speed", choices=("realtime", "fast", "max"), default="realtime")
    ap.add_argument("--mosquitto", action=argparse.BooleanOptionalAction, default=True,
                    help="the same work on one Mosquitto too (the cluster's cost as a ratio)")
    ap.add_argument("--ramp", default="", help="tables at --speed fast, one process, e.g. 20,40,80 (default none)")
    ap.add_argument("--ramp-seconds", type=float, default=60.0)
    ap.add_argument("--journal-sync", choices=("FULL", "NORMAL"), default="NORMAL")
    ap.add_argument("--recorder", action=argparse.BooleanOptionalAction, default=True,
                    help="tablectl recorder reads every table into an SQLite file: card -> database, its lag")
    ap.add_argument("--workdir", type=Path, default=None, help="keep journals and logs here (default: removed)")
    asyncio.run(main(ap.parse_args()))
