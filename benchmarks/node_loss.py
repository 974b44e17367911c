"""How long a table takes to publish again after its node is killed, against what NATS itself allows (issue #40).

A three-node cluster (:mod:`controller.floor`, auth callout and all, as ``tablectl cluster`` runs it), ``--tables``
tables in this process (each a journal and the production :class:`MqttPublisher`, the three nodes in its list,
n1 first: every table on n1, as in ``benchmarks/floor_acceptance.py``), each committing an event ``--rate`` times
a second, and a subscriber as ``sam`` on n3. n1 is killed with SIGKILL; printed:

- per table, from the kill to the broker's PUBACK of the table's first event committed after it (the table's own
  figure: the journal's ``delivered_upto``); from the kill to the subscriber's first such event (the acceptance
  run's figure), and
  to the end of the table's longest silence at the subscriber (a table on a surviving node is cut too when the
  session assets the lost node led move: docs/floor.md): p50 / p90 / max;
- the floor: from the kill to the first fresh MQTT client that does on a surviving node what a table does on a
  new connection (CONNECT, SUBSCRIBE its commands at QoS 1 and granted, a retained QoS 1 PUBLISH acknowledged),
  tries started every ``--probe-every`` seconds on n2 and n3 side by side (distinct client ids, each waiting
  up to 30 s): what the engine allows; and the first CONNACK alone;
- the ratio of the tables' p50 to that floor, and where the tables' seconds went (their publisher's log: the
  tries, their failures and the connection made, in seconds after the kill).

    python benchmarks/node_loss.py [--tables 12] [--rate 5] [--kills 1] [--timeout S] [--show N] [--workdir DIR]

With ``--kills 2`` n1 is started again and, once the floor has settled, n2 is killed (the second kill of the
acceptance run). Exit 1 when a table was still silent at the end of the ``--observe`` seconds watched after a kill.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import logging
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from controller.floor.cluster import NatsCluster, loopback_ports
from controller.floor.nats_config import write_nats_cluster
from controller.journal import Journal
from controller.mqtt.client import MqttClient, MqttError
from controller.mqtt.options import BrokerOptions
from controller.mqtt.publisher import MqttPublisher

PROBE = "p01"
_ids = itertools.count(1)


class Timeline(logging.Handler):
    """The publishers' log lines, each with the wall clock it was emitted at."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[tuple[float, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append((record.created, record.getMessage()))


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))]


async def table(journal: Journal, pub: MqttPublisher, rate: float, stop: asyncio.Event,
                commits: list[tuple[float, int]]) -> None:
    """Commit an event ``rate`` times a second, stamped with the wall clock of its commit; note each commit's
    (time, seq)."""
    while not stop.is_set():
        _, seqs = journal.commit_event({"type": "tick"}, [{"type": "tick", "t": time.time()}])
        commits.append((time.time(), seqs[-1]))
        pub.notify()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 1 / rate)


async def subscriber(host: str, port: int, password: str, prefix: str, seen: dict[str, list[tuple[float, float]]],
                     ready: asyncio.Event, stop: asyncio.Event) -> None:
    """``sam`` on a node never killed: every event's (commit stamp, arrival), by table."""
    while not stop.is_set():
        try:
            async with MqttClient(host, port, username="sam", password=password, identifier=f"bench-sam-{os.getpid()}",
                                  keepalive=15, timeout=10) as c:
                granted = await c.subscribe(f"{prefix}/+/events", qos=0)
                if any(g.is_failure for g in granted):
                    raise MqttError("refused")
                ready.set()
                async for m in c.messages:
                    t = json.loads(m.payload).get("t")
                    if isinstance(t, float):
                        seen[m.topic.split("/")[1]].append((t, time.time()))
        except (MqttError, OSError) as exc:
            logging.getLogger("controller.mqtt.bench").debug("subscriber sam: connection lost or refused: %s", exc)
            await asyncio.sleep(0.2)


async def probe_once(host: str, port: int, password: str, prefix: str) -> tuple[float | None, float | None]:
    """One fresh client doing what a table does on a new connection: (its CONNACK, its whole round) wall times."""
    root = f"{prefix}/{PROBE}"
    connack = None
    try:
        async with MqttClient(host, port, username=PROBE, password=password, identifier=f"probe-{next(_ids)}",
                              keepalive=15, timeout=30) as c:
            connack = time.time()
            granted = await c.subscribe(f"{root}/cmd/+/+/+", qos=1)
            if any(g.is_failure for g in granted):
                return connack, None
            await c.publish(f"{root}/status", b"online", qos=1, retain=True)
            return connack, time.time()
    except (MqttError, OSError):
        return connack, None


async def floor_probe(nodes: list[tuple[str, int]], password: str, prefix: str, every: float,
                      within: float) -> tuple[float | None, float | None]:
    """Start a probe on each surviving node every ``every`` s until one completes: (first CONNACK, first round)."""
    tasks: set[asyncio.Task[tuple[float | None, float | None]]] = set()
    connacks: list[float] = []
    rounds: list[float] = []
    deadline = time.monotonic() + within
    try:
        while not rounds and time.monotonic() < deadline:
            for host, port in nodes:
                tasks.add(asyncio.create_task(probe_once(host, port, password, prefix)))
            await asyncio.sleep(every)
            for t in [t for t in tasks if t.done()]:
                tasks.discard(t)
                a, b = t.result()
                connacks += [a] if a is not None else []
                rounds += [b] if b is not None else []
    finally:
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(asyncio.CancelledError, MqttError, OSError):
                r = await t
                if r[0] is not None:
                    connacks.append(r[0])
    return (min(connacks) if connacks else None), (min(rounds) if rounds else None)


def where(timeline: Timeline, kill: float, tables: list[str], show: int) -> None:
    """Per table, its publisher's lines after the kill (seconds after it); then a summary."""
    by_table: dict[str, list[tuple[float, str]]] = defaultdict(list)
    for t, line in timeline.lines:
        if t < kill:
            continue
        owner = next((tb for tb in tables if tb in line), None)
        by_table[owner or "?"].append((t - kill, line))
    unattributed = by_table.pop("?", [])
    for dt, line in [(dt, line) for dt, line in unattributed if "subscriber sam" in line][:5]:
        print(f"  {dt:7.2f} s  {line[:150]}")
    for tb in tables[:show]:
        print(f"  {tb}:")
        for dt, line in by_table.get(tb, [])[:20]:
            print(f"    {dt:7.2f} s  {line[:150]}")
    fails = [line for _, line in unattributed if "retry failed" in line]
    reasons: dict[str, int] = defaultdict(int)
    for line in fails:
        reasons[line.split("retry failed: ", 1)[1][:80]] += 1
    print(f"  failed tries (all tables): {len(fails)}" + "".join(f"\n    {n:4d} x {r}" for r, n in
                                                               sorted(reasons.items(), key=lambda kv: -kv[1])))


async def one_kill(cluster: NatsCluster, victim: int, survivors: list[int], tables: list[str],
                   seen: dict[str, list[tuple[float, float]]],
                   journaled: tuple[dict[str, list[tuple[float, int]]], dict[str, list[tuple[float, int]]]],
                   timeline: Timeline, password: str, prefix: str, args: argparse.Namespace) -> bool:
    await asyncio.sleep(args.warmup)
    kill = time.time()
    cluster.kill(victim)
    nodes = [(cluster.bind, cluster.node(i).mqtt) for i in survivors]
    probe = asyncio.create_task(floor_probe(nodes, password, prefix, args.probe_every, args.within))
    await asyncio.sleep(args.observe)
    end = kill + args.observe
    commits, acks = journaled
    acked: dict[str, float] = {}  # the table's own figure: its first event committed after the kill acknowledged
    for tb in tables:
        first = next((seq for t, seq in commits[tb] if t > kill), None)
        when = next((t for t, upto in acks[tb] if first is not None and upto >= first), None)
        if when is not None:
            acked[tb] = when - kill
    first_after: dict[str, float] = {}  # the acceptance run's figure: the first event committed after the kill
    back: dict[str, float] = {}  # the end of the table's longest silence at the subscriber since the kill
    dark: dict[str, float] = {}
    for tb in tables:
        after = [arr for t, arr in seen[tb] if t > kill]
        if after:
            first_after[tb] = min(after) - kill
        arrivals = [kill, *sorted(arr for _, arr in seen[tb] if kill < arr <= end)]
        gaps = [(b - a, b) for a, b in itertools.pairwise(arrivals)]
        if len(arrivals) > 1:
            longest, until = max(gaps)
            back[tb], dark[tb] = until - kill, longest
    connack, floor_round = await probe
    name = cluster.node(victim).name
    print(f"\nkill of {name} (SIGKILL) at {time.strftime('%H:%M:%S', time.gmtime(kill))} UTC, load "
          f"{os.getloadavg()[0]:.1f}")
    def line(what: str, values: list[float]) -> None:
        print(f"  {what}, {len(values)} of {len(tables)}: p50 {statistics.median(values):.2f} / "
              f"p90 {pct(values, 0.9):.2f} / max {max(values):.2f} s" if values else f"  {what}: none")

    line("tables publishing again after (kill -> the broker's PUBACK of the table's first event after it)",
         list(acked.values()))
    line("the same seen at the subscriber (kill -> its first event committed after the kill)",
         list(first_after.values()))
    line("tables back after (kill -> the end of the table's longest silence at the subscriber)", list(back.values()))
    line("  that silence (screens dark)", list(dark.values()))
    delays = list(acked.values())
    fl = None if floor_round is None else floor_round - kill
    print(f"  the floor (a fresh client's CONNECT + QoS 1 SUBSCRIBE granted + retained QoS 1 PUBLISH acked on "
          f"a surviving node): {'never' if fl is None else f'{fl:.2f} s'}; its first CONNACK alone: "
          f"{'never' if connack is None else f'{connack - kill:.2f} s'}")
    if delays and fl:
        print(f"  ratio tables p50 / floor: {statistics.median(delays) / fl:.2f}")
    where(timeline, kill, tables, args.show)
    missing = [tb for tb in tables if tb not in acked]
    if missing:
        print(f"  NOT BACK within {args.observe:g} s: {', '.join(missing)}")
    return not missing


async def run(args: argparse.Namespace, workdir: Path) -> int:
    tables = [f"t{i:02d}" for i in range(1, args.tables + 1)]
    files = write_nats_cluster(workdir / "cluster", [*tables, PROBE], people={"surveillance": ["sam"]},
                               ports=loopback_ports(3))
    prefix = "tables"
    cluster = NatsCluster(workdir / "cluster", tied=True)
    t0 = time.monotonic()
    cluster.start()
    print(f"cluster serving after {time.monotonic() - t0:.1f} s ({workdir / 'cluster'}), load "
          f"{os.getloadavg()[0]:.1f}; {len(tables)} tables at {args.rate:g} events/s, all on n1 first, timeout "
          f"{BrokerOptions().timeout if args.timeout is None else args.timeout:g} s")
    await cluster.ensure_stream()
    timeline = Timeline()
    logger = logging.getLogger("controller.mqtt")
    logger.setLevel(logging.DEBUG)
    logger.addHandler(timeline)
    logger.propagate = False
    logging.getLogger("controller.mqtt.publisher.paho").setLevel(logging.WARNING)
    seen: dict[str, list[tuple[float, float]]] = defaultdict(list)
    commits: dict[str, list[tuple[float, int]]] = defaultdict(list)
    acks: dict[str, list[tuple[float, int]]] = defaultdict(list)
    stop, ready = asyncio.Event(), asyncio.Event()
    pw = files.passwords
    sub = asyncio.create_task(subscriber(cluster.bind, cluster.node(2).mqtt, pw["sam"], prefix, seen, ready, stop))
    journals, pubs, loops = [], [], []
    ok = True
    try:
        await asyncio.wait_for(ready.wait(), 60)
        for tb in tables:
            j = Journal(workdir / f"{tb}.journal")
            options = BrokerOptions(cluster.mqtt_urls, username=tb, password=pw[tb])
            if args.timeout is not None:
                options = replace(options, timeout=args.timeout)
            p = MqttPublisher(j, table_id=tb, broker=options)
            await p.start()
            journals.append(j)
            pubs.append(p)
        for p in pubs:
            await p.wait_connected(60)
        loops = [asyncio.create_task(table(j, p, args.rate, stop, commits[tb]))
                 for tb, j, p in zip(tables, journals, pubs, strict=True)]

        async def sample() -> None:  # how far the broker has acknowledged each journal, every 50 ms
            while not stop.is_set():
                now = time.time()
                for tb, j in zip(tables, journals, strict=True):
                    acks[tb].append((now, j.delivered_upto))
                await asyncio.sleep(0.05)

        loops.append(asyncio.create_task(sample()))
        ok = await one_kill(cluster, 0, [1, 2], tables, seen, (commits, acks), timeline, pw[PROBE], prefix, args)
        if args.kills > 1:
            cluster.start_node(0)
            await asyncio.sleep(args.settle)
            ok = await one_kill(cluster, 1, [0, 2], tables, seen, (commits, acks), timeline, pw[PROBE], prefix,
                                  args) and ok
    finally:
        stop.set()
        sub.cancel()
        await asyncio.gather(*loops, sub, return_exceptions=True)
        await asyncio.gather(*(p.close(5) for p in pubs), return_exceptions=True)
        for j in journals:
            j.close()
        cluster.stop()
    return 0 if ok else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tables", type=int, default=12)
    ap.add_argument("--rate", type=float, default=5.0, help="events a second a table commits")
    ap.add_argument("--kills", type=int, choices=(1, 2), default=1)
    ap.add_argument("--warmup", type=float, default=5.0, help="seconds of play before a kill")
    ap.add_argument("--settle", type=float, default=20.0, help="seconds after n1 is back before the second kill")
    ap.add_argument("--probe-every", type=float, default=0.25)
    ap.add_argument("--show", type=int, default=3, help="tables whose publisher log is printed per kill")
    ap.add_argument("--observe", type=float, default=40.0, help="seconds watched after each kill")
    ap.add_argument("--within", type=float, default=60.0, help="seconds the floor probe tries")
    ap.add_argument("--timeout", type=float, help="the tables' CONNACK/SUBACK/PUBACK timeout (default: BrokerOptions's;"
                    " 10 before issue #40)")
    ap.add_argument("--workdir", type=Path)
    args = ap.parse_args()
    if args.workdir is not None:
        args.workdir.mkdir(parents=True, exist_ok=True)
        return asyncio.run(run(args, args.workdir))
    with tempfile.TemporaryDirectory(prefix="node-loss-") as d:
        return asyncio.run(run(args, Path(d)))


if __name__ == "__main__":
    raise SystemExit(main())
