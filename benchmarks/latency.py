"""Card-to-subscriber latency of a table service on Mosquitto, the broker's own latency, and memory.

    .venv/bin/python benchmarks/latency.py [--warm-rounds 1000] [--more-rounds 10000] [--cards 2000]
                                           [--profile house-h17] [--seed 1] [--settle-ms 5] [--dir DIR]

One whole simulated table (:class:`controller.sim.demo.DemoTable`: the simulated devices on ptys, the
real drivers, :class:`controller.service.table_service.TableService`, engine, SQLite journal with
``synchronous=FULL``, :class:`controller.mqtt.publisher.MqttPublisher`) on a local Mosquitto, played by
the simulated crew at speed "max", all in this process, as in the demo. A subscriber runs in a
*separate* process (this file with ``--subscriber``), so it has its own CPU and its own loop.
Times on both sides are ``time.monotonic()`` (``CLOCK_MONOTONIC``, one clock for every process of
the machine), so they compare across the two processes.

In order:

1. ``--warm-rounds`` rounds at full speed; then the RSS of this process (``VmRSS`` after
   ``gc.collect()``) and rounds/s.
2. (a) ``--cards`` card frames: before each, the crew waits until the publisher has every record
   and state acknowledged by the broker and then ``--settle-ms`` more, so a sampled card never
   queues behind earlier messages (latency, not throughput; the other acts are not paced). The
   shoe's frame write is stamped; the subscriber stamps each ``<prefix>/t01/state`` it receives;
   the card's state is the first one whose ``shoe.shuffles``/``shoe.cards_dealt`` is the engine's
   count after that card. Latency = receive - write, split into: frame -> engine input (pty, link
   layer, driver, service pump), engine + journal commit (fsync), commit -> the state's write to
   the broker's socket begun (records, paho; the card's events go first), write begun -> received
   (paho's send, broker, subscriber: stamped before the send, since on two cores the broker and the
   subscriber may run before the send returns). Before each sampled card, after the same pause,
   one sample of (e) below is taken: the ratio (a)/(e) is printed from those, taken in the same
   minutes on the same disk (the disk's sync time moves by a factor of ten from one minute to the
   next on a shared machine).
3. (b) the same broker with a plain aiomqtt publisher in this process (QoS 1, retained, the
   median state size) to the same subscriber, one message at a time with the same settle pause;
   the idle table (chip-sensor polling, ticks) still shares this loop, as in (a).
4. (d) the disk alone: ``fdatasync`` of a rewritten 4 KiB page in the same directory, paced the
   same way; with (b), the floor under (a) that no code of ours takes part in.
5. (e) the card's path with none of the table's code: a frame written to a pty and read by this
   loop, one SQLite commit of the journal's shape (WAL, ``synchronous=FULL``), one publish of a
   state-sized payload written at once to the same subscriber, paced the same way: what any
   implementation on this stack pays on this machine; (a) minus (e) is the table's own code.
   Also taken on its own here, minutes after (a), as before (both ratios printed).
6. ``--more-rounds`` rounds at full speed in chunks, the RSS after each; growth and rounds/s.

Figures are printed beside their targets, never asserted. The machine's load shows in them
(load average printed).
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import contextlib
import gc
import json
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
import tty
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiomqtt

from controller.contract.topics import json_payload
from controller.game import events as ev
from controller.game.effects import Effect
from controller.mqtt.client import MqttClient
from controller.profiles import load_rules
from controller.service.table_service import TableService
from controller.sim.crew import SimCrew
from controller.sim.dealer import SimulatedDealer
from controller.sim.demo import PACE, DemoOptions, DemoTable
from simulators.hardware import SimTable

ROOT = Path(__file__).resolve().parent.parent
TABLE_ID = "t01"
PREFIX = "tables"
BASELINE_TOPIC = "bench/latency/baseline"
BARE_TOPIC = "bench/latency/bare"
CARD_INPUTS = frozenset({ev.CardDrawn.TYPE, ev.HoleCardDealt.TYPE})
#: (e) samples taken between the cards and not counted (the connection's and the pty's first ones)
BARE_WARMUP = 5
#: blocks of sampled cards, ratings on and off in turn (step 2): drift in the machine's load falls on both
RATING_BLOCKS = 4

# targets of issue #4
TARGET_P50_MS = 2.0
TARGET_P99_MS = 10.0
TARGET_RSS_MB = 80.0
#: RSS growth over the --more-rounds counted as noise (allocator arenas, SQLite page cache)
NOISE_MB = 2.0
#: RSS growth per 1,000 rounds (issue #40: a table PC under MemoryMax=256M plays for months); benchmarks/memory.py
#: measures a longer run
TARGET_MIB_PER_1000 = 2.0
#: the card's path against the same path with none of the table's code, (a)/(e) in the same run (issue #40)
TARGET_RATIO_P50 = 1.25
TARGET_RATIO_P99 = 2.5

Key = tuple[int, int]  # (shoe.shuffles, shoe.cards_dealt) after a card


# -- the subscriber process ------------------------------------------------------------------------


async def subscriber_main(url: str) -> None:
    """Commands on stdin, one JSON answer per line on stdout: ``sub T``, ``unsub T``, ``dump``."""
    parts = urlsplit(url)
    got: list[tuple[float, str, bool, bytes]] = []
    async with aiomqtt.Client(parts.hostname or "127.0.0.1", parts.port or 1883,
                              identifier=f"latency-bench-sub-{os.getpid()}") as client:

        async def reader() -> None:
            async for message in client.messages:
                t = time.monotonic()  # first thing: the decoding happens at dump time
                payload = message.payload
                body = bytes(payload) if isinstance(payload, bytes | bytearray) else b""
                got.append((t, message.topic.value, message.retain, body))

        task = asyncio.create_task(reader())
        print(json.dumps({"ready": True}), flush=True)
        while line := await asyncio.to_thread(sys.stdin.readline):
            verb, _, arg = line.strip().partition(" ")
            answer: dict[str, Any] = {"ok": True}
            if verb == "sub":
                await client.subscribe(arg, qos=1)
            elif verb == "unsub":
                await client.unsubscribe(arg)
            elif verb == "dump":
                answer["messages"] = [_decoded(t, topic, retain, body) for t, topic, retain, body in got]
                got.clear()
            else:
                answer = {"ok": False, "error": f"unknown command {verb!r}"}
            print(json.dumps(answer), flush=True)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def _decoded(t: float, topic: str, retain: bool, body: bytes) -> dict[str, Any]:
    out: dict[str, Any] = {"t": t, "topic": topic, "retain": retain, "size": len(body)}
    if not body:
        pass  # a retained message cleared
    elif topic in (BASELINE_TOPIC, BARE_TOPIC):
        out["i"] = int(body[:8])
    elif topic.endswith("/state"):
        shoe = json.loads(body)["shoe"]
        out["key"] = [shoe["shuffles"], shoe["cards_dealt"]]
    return out


class Subscriber:
    """The subscriber process, seen from the benchmark."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    @classmethod
    async def start(cls, url: str) -> Subscriber:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, str(Path(__file__).resolve()), "--subscriber", url,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=1 << 28,
        )
        self = cls(proc)
        await self._answer()
        return self

    async def _answer(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), 60)
        if not line:
            raise RuntimeError("the subscriber process ended")
        answer: dict[str, Any] = json.loads(line)
        return answer

    async def call(self, command: str) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command.encode() + b"\n")
        await self.proc.stdin.drain()
        answer = await self._answer()
        if not answer.get("ok"):
            raise RuntimeError(f"subscriber: {answer}")
        return answer

    async def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), 10)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()


# -- the table ------------------------------------------------------------------------------------


@dataclass
class Sample:
    """Stamps of the sampled cards, by the engine's (shuffles, cards_dealt) after each."""

    wanted: int = 0
    on: bool = False
    written: dict[Key, float] = field(default_factory=dict)
    applied: dict[Key, Applied] = field(default_factory=dict)
    mismatched: int = 0
    recording: bool = False
    flushes: list[float] = field(default_factory=list)  # when the publisher began writing to the socket


@dataclass(frozen=True)
class Applied:
    """Stamps of one card input in the service: apply begun, journal commit, state queued."""

    start: float
    commit_s: float  # BEGIN..COMMIT (inserts + fsync)
    committed: float
    state_queued: float


class BenchCrew(SimCrew):
    """The demo's crew; while sampling, each card waits for an idle publisher and a settle pause."""

    def __init__(self, table: DemoTable, dealer: SimulatedDealer, settle_s: float) -> None:
        super().__init__(table.service, table.sim, dealer, pace=PACE["max"], rounds=0)
        self.demo = table
        self.settle_s = settle_s
        self.sample = Sample()
        #: (e) sampled between the cards (step 2), or None
        self.bare: BarePath | None = None

    async def _deal(self, expected: str) -> None:
        sample = self.sample
        if sample.on:
            if len(sample.written) >= sample.wanted:
                sample.on = False
                self.rounds = self.table.rounds_settled + 1  # finish this round, then stop
            else:
                await self.demo.publisher.wait_drained(timeout=30)
                await asyncio.sleep(self.settle_s)
                if self.bare is not None:  # (e) at the same moments, the same disk and load: one before each card
                    await self.bare.sample(counted=self.bare.n >= BARE_WARMUP)
                    await asyncio.sleep(self.settle_s)
        await super()._deal(expected)


def instrument(table: DemoTable, crew: BenchCrew) -> None:
    """Stamp the shoe's frame writes, the engine's card inputs and their journal commits."""
    sample, shoe, core, journal = crew.sample, table.sim.shoe, table.core, table.journal
    deal = shoe.deal
    apply = core.apply
    transaction = journal.transaction
    last_commit = [0.0, 0.0]  # duration, end
    last_state = [0.0]
    publisher = table.publisher
    make_client = publisher._make_client
    publish_state = publisher.publish_state

    port = shoe._pty
    port_write = port.write
    wrote = [0.0]

    def timed_write(data: bytes) -> None:
        wrote[0] = time.monotonic()  # the frame's write to the pty: where (e)'s stamp is too
        port_write(data)

    def timed_deal(*, face_down: bool = False) -> str:
        wrote[0] = 0.0
        card = deal(face_down=face_down)
        if sample.on and wrote[0]:
            sample.written[(core.table.shuffles, shoe.position)] = wrote[0]
        return card

    def timed_apply(event: ev.Event, **options: Any) -> list[Effect]:
        t0 = time.monotonic()
        effects = apply(event, **options)  # shoe_read: the shoe's number of the read
        if event.TYPE in CARD_INPUTS:
            key = (core.table.shuffles, core.table.cards_dealt)
            if key in sample.written:
                sample.applied[key] = Applied(t0, last_commit[0], last_commit[1], last_state[0])
            elif sample.on:
                sample.mismatched += 1
        return effects

    @contextlib.contextmanager
    def timed_transaction() -> Iterator[None]:
        t0 = time.monotonic()
        with transaction():
            yield
        t1 = time.monotonic()
        last_commit[:] = [t1 - t0, t1]  # the outermost one ends last: insert + COMMIT (fsync)

    def timed_publish_state(seq: int, state: Any) -> None:
        last_state[0] = time.monotonic()  # the state's JSON is built; publish_state writes it now if it can
        publish_state(seq, state)

    def timed_client() -> Any:
        client = make_client()
        flush = client.flush

        def timed_flush() -> None:
            if sample.recording:  # before: paho's send wakes the broker, which may run (and the subscriber
                sample.flushes.append(time.monotonic())  # receive) before the send returns on two cores
            flush()

        setattr(client, "flush", timed_flush)  # noqa: B010
        return client

    setattr(publisher, "publish_state", timed_publish_state)  # noqa: B010
    setattr(publisher, "_make_client", timed_client)  # noqa: B010
    setattr(port, "write", timed_write)  # noqa: B010
    setattr(shoe, "deal", timed_deal)  # noqa: B010 - instance patches, the classes stay untouched
    setattr(core, "apply", timed_apply)  # noqa: B010
    setattr(journal, "transaction", timed_transaction)  # noqa: B010


class GcPauses:
    """The cyclic collector's pauses while it is installed (``gc.callbacks``), in ms, by generation: a full
    collection walks every object the process holds, and stops the loop while a card may be on its way."""

    def __init__(self) -> None:
        self.started = 0.0
        self.ms: dict[int, list[float]] = {0: [], 1: [], 2: []}

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self.started = time.perf_counter()
        else:
            self.ms[info["generation"]].append((time.perf_counter() - self.started) * 1e3)

    def line(self) -> str:
        return "; ".join(f"gen{g} {len(v)} collections, max {max(v):.2f} ms, total {sum(v):.1f} ms"
                         if v else f"gen{g} none" for g, v in self.ms.items())


def rss_mb() -> float:
    """Resident memory of this process in MiB, after a full collection."""
    gc.collect()
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


async def play(crew: BenchCrew, rounds: int) -> float:
    """Play ``rounds`` more rounds; rounds per second."""
    if rounds <= 0:
        return 0.0
    crew.rounds = crew.table.rounds_settled + rounds
    t0 = time.monotonic()
    await play_until_done(crew)
    return rounds / (time.monotonic() - t0)


async def play_until_done(crew: BenchCrew) -> None:
    """``crew.play()``, ended by the service's own failure when the service reports one."""
    failed: asyncio.Future[None] | None = getattr(crew.service, "failed", None)
    playing = asyncio.ensure_future(crew.play())
    if failed is None:
        await playing
        return
    try:
        await asyncio.wait({playing, failed}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if not playing.done():
            playing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await playing
    if failed.done():
        failed.result()
    playing.result()


# -- figures --------------------------------------------------------------------------------------


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def summary(ms: list[float]) -> str:
    if not ms:
        return "no samples"
    return (f"p50 {pct(ms, 0.50):6.2f} ms  p99 {pct(ms, 0.99):6.2f} ms  mean {statistics.fmean(ms):6.2f} ms  "
            f"max {max(ms):7.2f} ms  n {len(ms)}")


def verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


@dataclass
class Latencies:
    total: list[float] = field(default_factory=list)
    wire: list[float] = field(default_factory=list)
    engine: list[float] = field(default_factory=list)
    journal: list[float] = field(default_factory=list)
    publish: list[float] = field(default_factory=list)
    written: list[float] = field(default_factory=list)
    delivery: list[float] = field(default_factory=list)
    lost: int = 0
    state_sizes: list[int] = field(default_factory=list)
    sampled: int = 0
    mismatched: int = 0
    #: (e) sampled between these cards (ms), when it was, and where its time went (:func:`bare_steps`)
    bare: list[float] = field(default_factory=list)
    bare_steps: dict[str, list[float]] = field(default_factory=dict)
    #: each measured card's stamps (CLOCK_MONOTONIC seconds), for ``--stamps``
    stamps: list[dict[str, float]] = field(default_factory=list)

    def extend(self, other: Latencies) -> None:
        """Add another block's figures to these."""
        for name in ("total", "wire", "engine", "journal", "publish", "written", "delivery", "state_sizes", "stamps",
                     "bare"):
            getattr(self, name).extend(getattr(other, name))
        for step, ms in other.bare_steps.items():
            self.bare_steps.setdefault(step, []).extend(ms)
        self.lost += other.lost
        self.sampled += other.sampled
        self.mismatched += other.mismatched


def match_states(sample: Sample, messages: list[dict[str, Any]]) -> Latencies:
    first: dict[Key, float] = {}
    out = Latencies()
    for m in messages:
        if "key" not in m or m["retain"]:  # the retained state sent on subscribing
            continue
        key = (int(m["key"][0]), int(m["key"][1]))
        out.state_sizes.append(int(m["size"]))
        written = sample.written.get(key)
        if written is not None and m["t"] >= written and key not in first:
            first[key] = float(m["t"])
    for key, t_write in sample.written.items():
        t_recv = first.get(key)
        applied = sample.applied.get(key)
        if t_recv is None or applied is None:
            out.lost += 1
            continue
        out.total.append((t_recv - t_write) * 1e3)
        out.wire.append((applied.start - t_write) * 1e3)
        out.engine.append((applied.committed - applied.start) * 1e3)
        out.journal.append(applied.commit_s * 1e3)
        out.publish.append((t_recv - applied.committed) * 1e3)
        stamps = {"written": t_write, "applied": applied.start, "committed": applied.committed,
                  "state_queued": applied.state_queued, "received": t_recv}
        i = bisect.bisect_left(sample.flushes, applied.state_queued)  # the first write after it holds the state
        if i < len(sample.flushes) and sample.flushes[i] <= t_recv:
            out.written.append((sample.flushes[i] - applied.committed) * 1e3)
            out.delivery.append((t_recv - sample.flushes[i]) * 1e3)
            stamps["flushed"] = sample.flushes[i]
        out.stamps.append(stamps)
    return out


async def sample_cards(crew: BenchCrew, table: DemoTable, sub: Subscriber, state_topic: str, cards: int) -> Latencies:
    """Deal ``cards`` sampled cards (see step 2 of the module docstring) and match them to the states received."""
    sample = crew.sample
    sample.written.clear()
    sample.applied.clear()
    sample.flushes.clear()
    sample.mismatched = 0
    await sub.call(f"sub {state_topic}")
    if crew.bare is not None:
        crew.bare.sent.clear()
        await sub.call(f"sub {BARE_TOPIC}")
    sample.wanted = cards
    sample.recording = sample.on = True
    crew.rounds = None
    await play_until_done(crew)
    await table.publisher.wait_drained(timeout=30)
    await asyncio.sleep(0.2)
    sample.recording = False
    await sub.call(f"unsub {state_topic}")
    if crew.bare is not None:
        await sub.call(f"unsub {BARE_TOPIC}")
    messages = (await sub.call("dump"))["messages"]
    lat = match_states(sample, messages)
    lat.sampled, lat.mismatched = len(sample.written), sample.mismatched
    if crew.bare is not None:
        lat.bare = _received(messages, crew.bare.sent)
        lat.bare_steps = bare_steps(_arrivals(messages), crew.bare)
        crew.bare.steps.clear()
    return lat


def _warmup(n: int) -> int:
    """Messages sent and not counted before a measured series of ``n`` (connection, caches)."""
    return min(50, max(5, n // 20))


async def baseline(url: str, sub: Subscriber, n: int, size: int, settle_s: float) -> list[float]:
    """Plain aiomqtt publisher (this process) -> the subscriber process: QoS 1, retained, ``size`` bytes."""
    parts = urlsplit(url)
    warmup = _warmup(n)
    sent: dict[int, float] = {}
    await sub.call(f"sub {BASELINE_TOPIC}")
    async with aiomqtt.Client(parts.hostname or "127.0.0.1", parts.port or 1883,
                              identifier=f"latency-bench-pub-{os.getpid()}") as client:
        for i in range(warmup + n):
            payload = f"{i:08d}".encode().ljust(size, b"x")
            t = time.monotonic()
            await client.publish(BASELINE_TOPIC, payload, qos=1, retain=True)
            if i >= warmup:
                sent[i] = t
            await asyncio.sleep(settle_s)
        await asyncio.sleep(0.2)
        await client.publish(BASELINE_TOPIC, b"", qos=1, retain=True)  # clear the retained message
    await sub.call(f"unsub {BASELINE_TOPIC}")
    return await _received_after(sub, sent)


async def _received_after(sub: Subscriber, sent: dict[int, float]) -> list[float]:
    """Milliseconds from each numbered message's stamp to its (live) arrival at the subscriber."""
    return _received((await sub.call("dump"))["messages"], sent)


#: (e)'s steps, beside (a)'s of the same name
BARE_STEPS = ("frame -> read by the loop", "read -> committed", "committed -> write begun", "write begun -> received")


def bare_steps(received: dict[int, float], bare: BarePath) -> dict[str, list[float]]:
    """Where each received sample of (e) spent its time (ms), by :data:`BARE_STEPS`; ``received`` from
    :func:`_arrivals`."""
    out: dict[str, list[float]] = {step: [] for step in BARE_STEPS}
    for i, (t_read, t_committed, t_flushed) in bare.steps.items():
        if i in received:
            stamps = (bare.sent[i], t_read, t_committed, t_flushed, received[i])
            for step, start, end in zip(BARE_STEPS, stamps, stamps[1:], strict=False):
                out[step].append((end - start) * 1e3)
    return out


def _arrivals(messages: list[dict[str, Any]]) -> dict[int, float]:
    """When each numbered message first arrived live (retained copies left out)."""
    received: dict[int, float] = {}
    for m in messages:
        if "i" in m and not m["retain"]:
            received.setdefault(int(m["i"]), float(m["t"]))
    return received


def _received(messages: list[dict[str, Any]], sent: dict[int, float]) -> list[float]:
    received = _arrivals(messages)
    return [(received[i] - t) * 1e3 for i, t in sent.items() if i in received]


async def disk_sync(directory: Path, n: int, settle_s: float) -> list[float]:
    """``fdatasync`` of one rewritten 4 KiB page in ``directory``, paced like the sampled cards.

    The floor the journal's durable commit stands on: on a virtual machine a sync issued after
    an idle pause costs several times one issued back to back (the vCPU sleeps meanwhile).
    """
    path = directory / "disk-sync-probe"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, bytes(64 * 4096))
        os.fsync(fd)
        times: list[float] = []
        for i in range(n):
            os.pwrite(fd, os.urandom(4096), (i % 64) * 4096)
            t = time.monotonic()
            os.fdatasync(fd)
            times.append((time.monotonic() - t) * 1e3)
            await asyncio.sleep(settle_s)
        return times
    finally:
        os.close(fd)
        path.unlink()


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class BarePath:
    """(e) The card's path with nothing of the table's code on it, one sample at a time (:meth:`sample`).

    A 21-byte frame written to a pty (raw mode, as the shoe's), read by this loop, one commit of
    the journal's shape (an input row and two outbox rows, WAL, ``synchronous=FULL``) with plain
    :mod:`sqlite3`, then one publish of a state-sized payload (QoS 1, retained) to the same
    subscriber, put on the socket at once (``TCP_NODELAY``, paho's write in the same turn: the
    publisher's client class, the fastest this stack writes; a plain ``await publish()`` waits
    a loop turn more). What any implementation on this stack and this machine pays before its
    own code: (a) minus this is what the drivers, the engine, the journal's and the publisher's
    code cost. Its database is in the same directory as the table's journal (the same disk), so
    its samples taken between the table's cards (step 2) pay the disk of the same moments.
    """

    def __init__(self, client: MqttClient, db: sqlite3.Connection, size: int) -> None:
        self.client, self.db, self.size = client, db, size
        self.master, self.slave = os.openpty()
        tty.setraw(self.slave)
        self.sent: dict[int, float] = {}
        #: each counted sample's stamps after the frame's write: read, committed, written to the socket
        self.steps: dict[int, tuple[float, float, float]] = {}
        self.n = 0

    @classmethod
    @contextlib.asynccontextmanager
    async def opened(cls, url: str, directory: Path, size: int) -> Any:
        parts = urlsplit(url)
        db = sqlite3.connect(directory / f"bare-{os.getpid()}-{time.monotonic_ns()}.sqlite", isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        db.execute("CREATE TABLE inputs (id INTEGER PRIMARY KEY, ts REAL NOT NULL, event TEXT NOT NULL)")
        db.execute("CREATE TABLE outbox (seq INTEGER PRIMARY KEY, input_id INTEGER, body TEXT NOT NULL,"
                   " delivered INTEGER NOT NULL DEFAULT 0)")
        try:
            async with MqttClient(parts.hostname or "127.0.0.1", parts.port or 1883,
                                  identifier=f"latency-bench-bare-{os.getpid()}-{time.monotonic_ns()}") as client:
                client.tune_socket()
                self = cls(client, db, size)
                try:
                    yield self
                finally:
                    os.close(self.master)
                    os.close(self.slave)
                await asyncio.sleep(0.2)
                await client.publish(BARE_TOPIC, b"", qos=1, retain=True)  # clear the retained message
        finally:
            db.close()

    async def sample(self, *, counted: bool = True) -> None:
        """One frame -> commit -> publish, stamped at the frame's write; returns once the broker acknowledged."""
        i, loop = self.n, asyncio.get_running_loop()
        self.n += 1
        readable: asyncio.Future[None] = loop.create_future()
        loop.add_reader(self.slave, _resolve, readable)
        t = time.monotonic()
        os.write(self.master, f"~{i:08d}CARD-KH-~".encode().ljust(21, b"~"))
        await readable
        loop.remove_reader(self.slave)
        t_read = time.monotonic()
        frame = os.read(self.slave, 64).decode()
        event = json.dumps({"type": "card_drawn", "card": "KH", "frame": frame})
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        input_id = db.execute("INSERT INTO inputs (ts, event) VALUES (?, ?)", (time.time(), event)).lastrowid
        db.executemany("INSERT INTO outbox (seq, input_id, body) VALUES (?, ?, ?)",
                       [(2 * i + 1, input_id, event), (2 * i + 2, input_id, event)])
        db.execute("COMMIT")
        t_committed = time.monotonic()
        acked = self.client.publish_now(BARE_TOPIC, f"{i:08d}".encode().ljust(self.size, b"x"), retain=True)
        t_flushed = time.monotonic()
        self.client.flush()
        await acked.wait()
        if counted:
            self.sent[i] = t
            self.steps[i] = (t_read, t_committed, t_flushed)


async def bare_path(url: str, sub: Subscriber, directory: Path, n: int, size: int, settle_s: float) -> list[float]:
    """(e) on its own, after (a): ``n`` samples of :class:`BarePath` paced like the sampled cards."""
    warmup = _warmup(n)
    await sub.call(f"sub {BARE_TOPIC}")
    async with BarePath.opened(url, directory, size) as bare:
        for i in range(warmup + n):
            await bare.sample(counted=i >= warmup)
            await asyncio.sleep(settle_s)
        sent = bare.sent
    await sub.call(f"unsub {BARE_TOPIC}")
    return await _received_after(sub, sent)


# -- the run --------------------------------------------------------------------------------------


async def run(args: argparse.Namespace) -> None:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from tests.mqtt_broker import Mosquitto

    out: Callable[..., None] = print
    work = Path(tempfile.mkdtemp(prefix="latency-bench-", dir=args.dir))
    broker = Mosquitto(work / "mosquitto")
    broker.start()
    sub: Subscriber | None = None
    table: DemoTable | None = None
    stack = contextlib.AsyncExitStack()
    try:
        sub = await Subscriber.start(broker.url)
        opts = DemoOptions(rules=load_rules(args.profile), rounds=None, seed=args.seed, speed="max",
                           broker=broker.url, state_dir=work / "journals", prefix=PREFIX, quiet=True,
                           dashboard=False, carded=args.carded)
        assert opts.state_dir is not None
        opts.state_dir.mkdir(parents=True)
        table = DemoTable(TABLE_ID, opts, opts.state_dir, broker.url, sys.stdout)
        crew = BenchCrew(table, table.crew.dealer, args.settle_ms / 1e3)
        table.crew = crew
        instrument(table, crew)
        service: TableService = table.service
        sim: SimTable = table.sim
        service.recover()
        crew.restore()
        if sim.cards is not None:  # the carded players' cards in their readers: rated play
            for player in table.carded:
                sim.cards.insert(player.spot, player.number)
        await sim.start()
        await service.start()
        await table.publisher.wait_connected(10)

        out(f"table {TABLE_ID} profile {args.profile} seed {args.seed}: devices on ptys, real drivers, "
            f"journal synchronous={table.journal.synchronous} in {opts.state_dir}, Mosquitto {broker.url}")
        out(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at start")

        # 1. warm rounds, RSS
        rss0 = rss_mb()
        rate_warm = await play(crew, args.warm_rounds)
        rss_warm = rss_mb()
        out(f"\n[c] memory: RSS at start {rss0:.1f} MiB; after {args.warm_rounds} rounds "
            f"({rate_warm:.1f} rounds/s): {rss_warm:.1f} MiB   target < {TARGET_RSS_MB:g} MB: "
            f"{verdict(rss_warm < TARGET_RSS_MB)}", flush=True)

        # 2. card -> state latency, ratings on and off in alternate blocks (one run, one table, one load)
        state_topic = f"{PREFIX}/{TABLE_ID}/state"
        ratings = table.core.ratings
        lat, lat_off = Latencies(), Latencies()
        blocks = RATING_BLOCKS if ratings is not None else 1
        pauses = GcPauses()
        # (e) between the cards: the disk's sync and the machine's load move from one minute to the next
        crew.bare = await stack.enter_async_context(
            BarePath.opened(broker.url, opts.state_dir, len(json_payload(table.core.state()))))
        gc.callbacks.append(pauses)
        for block in range(blocks):
            rated = block % 2 == 0
            table.core.ratings = ratings if rated else None
            got = await sample_cards(crew, table, sub, state_topic, args.cards // blocks if blocks > 1 else args.cards)
            (lat if rated else lat_off).extend(got)
        table.core.ratings = ratings
        gc.callbacks.remove(pauses)
        crew.bare = None
        await stack.aclose()
        if args.stamps is not None:
            args.stamps.write_text(json.dumps({"on": lat.stamps, "off": lat_off.stamps}))
        p50, p99 = (pct(lat.total, 0.5), pct(lat.total, 0.99)) if lat.total else (float("inf"), float("inf"))
        rated_text = f", {len(table.carded)} carded players rated" if ratings is not None else ""
        out(f"\n[a] card frame written by the simulated shoe -> matching {state_topic} received by a "
            f"subscriber process (journal synchronous={table.journal.synchronous}{rated_text}):")
        out(f"    {summary(lat.total)}")
        out(f"    targets p50 < {TARGET_P50_MS:g} ms: {verdict(p50 < TARGET_P50_MS)}, "
            f"p99 < {TARGET_P99_MS:g} ms: {verdict(p99 < TARGET_P99_MS)}")
        out("    where it goes:")
        out(f"      frame -> engine input (pty, link, driver, pump)    {summary(lat.wire)}")
        out(f"      engine + journal (apply begun -> committed)        {summary(lat.engine)}")
        out(f"        of which journal commit (insert + fsync)         {summary(lat.journal)}")
        out(f"      committed -> received (publisher, broker, sub)     {summary(lat.publish)}")
        out(f"        committed -> state's write to the socket begun   {summary(lat.written)}")
        out(f"        write begun -> received (events first, broker, sub) {summary(lat.delivery)}")
        out(f"    measured on {len(lat.total)} of {lat.sampled} sampled cards (no state matched: "
            f"{lat.lost}, card inputs not sampled while sampling: {lat.mismatched}); each card dealt "
            f"after the publisher had every message acknowledged + {args.settle_ms:g} ms, other acts unpaced; "
            "clock: CLOCK_MONOTONIC in both processes")
        out(f"    the cyclic collector while sampling (this process): {pauses.line()}", flush=True)
        if lat.bare:
            blocks_text = "; the ratings-on blocks" if lat_off.total else ""
            out(f"\n[e] sampled between the cards of [a] (one before each card, after the same pause; the same "
                f"minutes, disk and load{blocks_text}): {summary(lat.bare)}")
            r50, r99 = p50 / pct(lat.bare, 0.5), p99 / pct(lat.bare, 0.99)
            above = p50 - pct(lat.bare, 0.5)
            out(f"    the table's own code at the same moments: (a) p50 {above:.2f} ms above (e) (the ratio also "
                "moves with the disk: a slow sync dilutes a fixed cost)")
            out("    where (e) goes (compare with (a)'s steps above):")
            for step, ms in lat.bare_steps.items():
                out(f"      {step:<50} {summary(ms)}")
            out(f"    ratio (a)/(e) at the same moments{rated_text}: p50 {r50:.2f} (target issue #40 <= "
                f"{TARGET_RATIO_P50:g}: {verdict(r50 <= TARGET_RATIO_P50)}), p99 {r99:.2f} (<= {TARGET_RATIO_P99:g}: "
                f"{verdict(r99 <= TARGET_RATIO_P99)})", flush=True)
        if lat_off.total:
            out(f"\n[f] rated play's cost on the card's path: the same table in the same run, the ratings off "
                f"(core.ratings = None) in every other block of {args.cards // blocks} cards:")
            out(f"    ratings on   {summary(lat.total)}")
            out(f"    ratings off  {summary(lat_off.total)}")
            size_on, size_off = statistics.median(lat.state_sizes), statistics.median(lat_off.state_sizes)
            out(f"      engine + journal p50 on {pct(lat.engine, 0.5):.3f} ms, off {pct(lat_off.engine, 0.5):.3f} ms; "
                f"state size on {size_on:.0f} B, off {size_off:.0f} B")
            out(f"    p50 difference {pct(lat.total, 0.5) - pct(lat_off.total, 0.5):+.3f} ms, "
                f"p99 difference {pct(lat.total, 0.99) - pct(lat_off.total, 0.99):+.3f} ms; "
                f"ratio on/off p50 {pct(lat.total, 0.5) / pct(lat_off.total, 0.5):.2f}, "
                f"p99 {pct(lat.total, 0.99) / pct(lat_off.total, 0.99):.2f}", flush=True)

        # 3. the broker alone
        size = int(statistics.median(lat.state_sizes)) if lat.state_sizes else 2000
        base = await baseline(broker.url, sub, args.cards, size, args.settle_ms / 1e3)
        out(f"\n[b] the same Mosquitto alone: aiomqtt publish (this process, QoS 1, retained, {size} B) -> "
            f"the same subscriber process, one at a time + {args.settle_ms:g} ms:")
        out(f"    {summary(base)}", flush=True)

        # 4. the disk alone
        disk = await disk_sync(work, args.cards, args.settle_ms / 1e3)
        out(f"\n[d] the same disk alone: fdatasync of one rewritten 4 KiB page in {work}, one at a time "
            f"+ {args.settle_ms:g} ms:")
        out(f"    {summary(disk)}")
        if lat.total and base:
            floor = pct(disk, 0.5) + pct(base, 0.5)
            out(f"    floor of (a) on this machine, disk sync + broker alone (sum of medians): {floor:.2f} ms; "
                f"(a) p50 above it (pty, drivers, engine, SQLite, paho): {p50 - floor:.2f} ms", flush=True)

        # 5. the card's path with nothing of ours
        bare = await bare_path(broker.url, sub, work, args.cards, size, args.settle_ms / 1e3)
        out(f"\n[e] the card's path with none of the table's code: a frame written to a pty and read by this "
            f"loop, one journal-shaped SQLite commit (WAL, FULL), one publish written at once ({size} B, QoS 1, "
            f"retained) -> the same subscriber, one at a time + {args.settle_ms:g} ms, on its own after (a), "
            "(b) and (d) (minutes later: compare with the ratio at the same moments above):")
        out(f"    {summary(bare)}")
        if lat.total and bare:
            out(f"    the table's own code in (a) (drivers, link, engine, state, journal and publisher code): "
                f"p50 {p50 - pct(bare, 0.5):.2f} ms above (e)")
            r50, r99 = p50 / pct(bare, 0.5), p99 / pct(bare, 0.99)
            out(f"    ratio (a)/(e) minutes apart{rated_text}: p50 {r50:.2f} (issue #40 <= {TARGET_RATIO_P50:g}: "
                f"{verdict(r50 <= TARGET_RATIO_P50)}), p99 {r99:.2f} (<= {TARGET_RATIO_P99:g}: "
                f"{verdict(r99 <= TARGET_RATIO_P99)})", flush=True)

        # 6. more rounds, RSS growth
        if args.more_rounds > 0:
            rss_before = rss_mb()
            chunks = max(1, min(10, args.more_rounds // 100))
            series: list[float] = []
            t0 = time.monotonic()
            done = 0
            for i in range(chunks):
                n = args.more_rounds * (i + 1) // chunks - done
                await play(crew, n)
                done += n
                series.append(rss_mb())
                print(f"  ... {done} more rounds, RSS {series[-1]:.1f} MiB", file=sys.stderr, flush=True)
            rate_more = args.more_rounds / (time.monotonic() - t0)
            growth = series[-1] - rss_before
            out(f"\n[c] memory: RSS before {args.more_rounds} more rounds {rss_before:.1f} MiB, after "
                f"{series[-1]:.1f} MiB ({rate_more:.1f} rounds/s): growth {growth:+.1f} MiB "
                f"({growth * 1024 * 1000 / args.more_rounds:+.1f} KiB per 1000 rounds)   target: none beyond "
                f"noise (< {NOISE_MB:g} MiB): {verdict(growth < NOISE_MB)}")
            per_1000 = growth * 1000 / args.more_rounds
            out(f"    per 1,000 rounds {per_1000:+.2f} MiB   target (issue #40) under {TARGET_MIB_PER_1000:g} MiB per "
                f"1,000 rounds: {verdict(per_1000 < TARGET_MIB_PER_1000)}")
            out(f"    RSS after each {args.more_rounds // chunks} rounds: "
                + " ".join(f"{r:.1f}" for r in series) + " MiB")
        out(f"\nrounds settled {table.core.table.rounds_settled}, load average {os.getloadavg()[0]:.2f} at end",
            flush=True)
    finally:
        await stack.aclose()
        if table is not None:
            await table.close()
        if sub is not None:
            await sub.close()
        broker.close()
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--warm-rounds", type=int, default=1000, help="rounds before the first RSS reading")
    ap.add_argument("--more-rounds", type=int, default=10000, help="rounds over which RSS growth is measured")
    ap.add_argument("--cards", type=int, default=2000, help="cards in the latency sample (and broker messages)")
    ap.add_argument("--profile", default="house-h17", help="house rules profile")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--carded", type=int, default=5,
                    help="carded players (rated play, docs/ratings.md); step 2 then measures ratings on and off "
                         "in alternate blocks (0: no ratings)")
    ap.add_argument("--settle-ms", type=float, default=5.0, help="pause before each sampled card / message")
    ap.add_argument("--dir", type=Path, default=None, help="where the journal and broker live (default: a temp dir)")
    ap.add_argument("--stamps", type=Path, default=None,
                    help="write each sampled card's stamps (CLOCK_MONOTONIC seconds: frame written, input applied, "
                         "committed, state queued, flushed, received) to this JSON file")
    ap.add_argument("--subscriber", metavar="URL", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.subscriber:
        asyncio.run(subscriber_main(args.subscriber))
    else:
        asyncio.run(run(args))


if __name__ == "__main__":
    main()
