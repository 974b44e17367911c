"""Publishes a table over MQTT from the journal's outbox; takes commands in.

How it works
------------
The table service never waits on the network. After each durable journal commit it calls the
synchronous, non-blocking :meth:`Publisher.notify` (new ``events`` in the outbox) and
:meth:`Publisher.publish_state` (the new ``state`` snapshot, whose ``seq`` is that of the last
event applied); :meth:`Publisher.publish_alarms` replaces the retained ``alarms`` list.

:class:`MqttPublisher` runs one task with our own reconnect loop (aiomqtt 2.x clients are not
reusable and start with nothing in flight, so the outbox is the journal, never the library's
queue). For each connection it:

1. connects with the last will ``<root>/status`` = ``offline`` (retained, QoS 1) and publishes
   ``online`` (retained, QoS 1);
2. subscribes to ``<root>/cmd/+`` and hands each command to ``on_command``; the answer goes to
   ``<root>/cmd/<verb>/result``;
3. drains the outbox: reads the undelivered records in ``seq`` order from the journal, publishes
   them with QoS 1 pipelined (up to ``window`` in flight, in order on the wire), interleaving
   each pending ``state`` right after the events it reflects, and marks records delivered up to
   the last contiguous PUBACK. After a reconnect it restarts from the first unacknowledged
   record, so a subscriber may see a repeat (same ``seq``, same body) but never a gap. The
   latest ``state`` and ``alarms`` are republished on every connection (a restarted broker may
   have lost its retained messages).

On failure it waits (exponential backoff with jitter, ``backoff_min`` to ``backoff_max``) and
connects again; connection errors are logged once per outage. :meth:`close` drains what it can
within its timeout, publishes ``offline`` and disconnects cleanly.

States are kept in memory only (the journal rebuilds them): up to ``max_pending_states`` wait
while the broker is away; older ones are dropped, the newest always survives.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import ssl
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable
from urllib.parse import unquote, urlsplit

import aiomqtt

from controller.commands import CommandResult, refused

__all__ = [
    "BrokerAddress",
    "CommandHandler",
    "MemoryPublisher",
    "MqttPublisher",
    "Outbox",
    "Publisher",
    "client_id_for",
    "parse_broker_url",
    "topic_root",
]

log = logging.getLogger("controller.publisher")


class _ExpectedPipelining(logging.Filter):
    """aiomqtt warns whenever QoS 1 publishes are in flight; ours keeps up to ``window`` so by design."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("There are %d pending publish calls")


_paho_log = logging.getLogger("controller.publisher.paho")
_paho_log.addFilter(_ExpectedPipelining())

#: ``await on_command(verb, payload)`` -> the result to publish on ``.../cmd/<verb>/result``.
CommandHandler = Callable[[str, bytes], Awaitable[CommandResult | Mapping[str, Any]]]

Json = Mapping[str, Any] | Sequence[Any] | str | bytes


class Outbox(Protocol):
    """What the publisher needs of the journal (see :class:`controller.journal.Journal`)."""

    @property
    def delivered_upto(self) -> int: ...

    @property
    def last_seq(self) -> int: ...

    def undelivered(self, after_seq: int | None = None, *, limit: int | None = None) -> Any: ...

    def records(self, from_seq: int = 1, to_seq: int | None = None) -> Any: ...

    def mark_delivered(self, upto_seq: int) -> None: ...


@runtime_checkable
class Publisher(Protocol):
    """The table service's view of the publisher; every method but start/close returns at once."""

    def notify(self) -> None:
        """New records are in the outbox."""

    def publish_state(self, seq: int, state: Json) -> None:
        """Queue the retained ``state`` that follows the event ``seq``."""

    def publish_alarms(self, alarms: Json) -> None:
        """Replace the retained ``alarms`` list."""

    @property
    def connected(self) -> bool: ...

    async def start(self) -> None: ...

    async def close(self, timeout: float = 5.0) -> None: ...


def topic_root(prefix: str, table_id: str) -> str:
    """``<prefix>/<table_id>`` (prefix may itself contain ``/``)."""
    return f"{prefix.strip('/')}/{table_id}" if prefix.strip("/") else table_id


def client_id_for(prefix: str, table_id: str) -> str:
    """MQTT client id holding prefix and table id, so two demos can share a broker."""
    safe = prefix.strip("/").replace("/", "-") or "root"
    return f"tablectl-{safe}-{table_id}"[:64]


@dataclass(frozen=True, slots=True)
class BrokerAddress:
    """A parsed broker URL: ``mqtt://``, ``mqtts://``, ``ws://`` or ``wss://`` host, port, path."""

    host: str
    port: int
    tls: bool
    transport: str  # "tcp" or "websockets"
    path: str | None = None
    username: str | None = None
    password: str | None = None


_DEFAULT_PORTS = {"mqtt": 1883, "tcp": 1883, "mqtts": 8883, "ssl": 8883, "ws": 80, "wss": 443}


def parse_broker_url(url: str) -> BrokerAddress:
    """Parse a broker URL; raises ``ValueError`` naming what is wrong."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        raise ValueError(f"broker URL {url!r}: scheme must be mqtt://, mqtts://, ws:// or wss://")
    if not parts.hostname:
        raise ValueError(f"broker URL {url!r}: no host")
    try:
        port = parts.port or _DEFAULT_PORTS[scheme]
    except ValueError as exc:
        raise ValueError(f"broker URL {url!r}: bad port") from exc
    websockets = scheme in ("ws", "wss")
    return BrokerAddress(
        host=parts.hostname,
        port=port,
        tls=scheme in ("mqtts", "ssl", "wss"),
        transport="websockets" if websockets else "tcp",
        path=(parts.path or "/mqtt") if websockets else None,
        username=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password else None,
    )


def _payload(value: Json) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def _result_payload(result: CommandResult | Mapping[str, Any]) -> bytes:
    if isinstance(result, CommandResult):
        return result.payload()
    return _payload(dict(result))


class _StateQueue:
    """Pending ``state`` snapshots in seq order, bounded; the newest is always kept."""

    def __init__(self, maxlen: int) -> None:
        self._items: deque[tuple[int, bytes]] = deque(maxlen=max(1, maxlen))
        self.latest: tuple[int, bytes] | None = None

    def push(self, seq: int, body: bytes) -> None:
        self.latest = (seq, body)
        self._items.append((seq, body))

    def __bool__(self) -> bool:
        return bool(self._items)

    def peek(self) -> tuple[int, bytes]:
        return self._items[0]

    def pop(self) -> tuple[int, bytes]:
        return self._items.popleft()

    def ensure_latest(self) -> None:
        """Re-queue the newest state (after a reconnect) unless it is already pending."""
        if self.latest is not None and not self._items:
            self._items.append(self.latest)


class MqttPublisher:
    """The production :class:`Publisher`: aiomqtt, our reconnect loop, the journal as outbox."""

    def __init__(
        self,
        outbox: Outbox,
        *,
        table_id: str,
        broker_url: str = "mqtt://127.0.0.1:1883",
        prefix: str = "tables",
        username: str | None = None,
        password: str | None = None,
        tls_ca: str | Path | None = None,
        tls_cert: str | Path | None = None,
        tls_key: str | Path | None = None,
        on_command: CommandHandler | None = None,
        client_id: str | None = None,
        keepalive: int = 15,
        timeout: float = 10.0,
        window: int = 64,
        resend: int = 64,
        backoff_min: float = 0.05,
        backoff_max: float = 5.0,
        max_pending_states: int = 512,
    ) -> None:
        self._outbox = outbox
        self.table_id = table_id
        self.root = topic_root(prefix, table_id)
        self.address = parse_broker_url(broker_url)
        self.broker_url = broker_url
        self._username = username if username is not None else self.address.username
        self._password = password if password is not None else self.address.password
        self._tls_ca, self._tls_cert, self._tls_key = tls_ca, tls_cert, tls_key
        if tls_key is not None and tls_cert is None:
            raise ValueError("tls_key given without tls_cert")
        self._on_command = on_command
        self.client_id = client_id or client_id_for(prefix, table_id)
        self._keepalive = keepalive
        self._timeout = timeout
        self._window = max(1, window)
        self._resend = max(0, resend)
        self._backoff_min = backoff_min
        self._backoff_max = backoff_max
        self._states = _StateQueue(max_pending_states)
        self._alarms: bytes | None = None
        self._alarms_dirty = False
        self._wake = asyncio.Event()
        self._drained = asyncio.Event()
        self._connected = False
        self._closing = False
        self._abandon = False
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._client: aiomqtt.Client | None = None
        self.connections = 0
        self.published = 0

    # -- the service's side (never blocks) ----------------------------------------------------

    def notify(self) -> None:
        self._drained.clear()
        self._wake.set()

    def publish_state(self, seq: int, state: Json) -> None:
        self._states.push(seq, _payload(state))
        self.notify()

    def publish_alarms(self, alarms: Json) -> None:
        self._alarms = _payload(alarms)
        self._alarms_dirty = True
        self.notify()

    @property
    def connected(self) -> bool:
        return self._connected

    @property
    def topics(self) -> dict[str, str]:
        r = self.root
        return {"status": f"{r}/status", "state": f"{r}/state", "events": f"{r}/events", "alarms": f"{r}/alarms"}

    async def start(self) -> None:
        """Start the background task (returns at once; connection happens in the background)."""
        if self._task is None:
            self._closing = self._abandon = False
            self._stop.clear()
            self._task = asyncio.create_task(self._run(), name=f"mqtt-publisher-{self.table_id}")

    async def wait_connected(self, timeout: float | None = None) -> None:
        async with asyncio.timeout(timeout):
            while not self._connected:
                await asyncio.sleep(0.01)

    async def wait_drained(self, timeout: float | None = None) -> None:
        """Wait until every record in the outbox and every pending state is acknowledged."""
        async with asyncio.timeout(timeout):
            while not (self._idle() and self._connected):
                self._drained.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._drained.wait(), 0.05)

    async def close(self, timeout: float = 5.0) -> None:
        """Drain within ``timeout``, publish ``offline``, disconnect cleanly, stop the task."""
        task, self._task = self._task, None
        if task is None:
            return
        self._closing = True
        self._stop.set()
        self._wake.set()
        done, _ = await asyncio.wait((task,), timeout=timeout)
        if not done:
            # Not drained in time: stop draining, publish offline and disconnect (bounded too).
            self._abandon = True
            self._wake.set()
            done, _ = await asyncio.wait((task,), timeout=1.0)
        if not done:
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task

    async def __aenter__(self) -> MqttPublisher:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- internals ---------------------------------------------------------------------------

    def _idle(self) -> bool:
        return self._outbox.delivered_upto >= self._outbox.last_seq and not self._states and not self._alarms_dirty

    def _tls_context(self) -> ssl.SSLContext | None:
        if not self.address.tls and self._tls_ca is None and self._tls_cert is None:
            return None
        ctx = ssl.create_default_context(cafile=str(self._tls_ca) if self._tls_ca else None)
        if self._tls_cert is not None:
            ctx.load_cert_chain(str(self._tls_cert), str(self._tls_key) if self._tls_key else None)
        return ctx

    def _make_client(self) -> aiomqtt.Client:
        return aiomqtt.Client(
            self.address.host,
            self.address.port,
            username=self._username,
            password=self._password,
            identifier=self.client_id,
            will=aiomqtt.Will(f"{self.root}/status", b"offline", qos=1, retain=True),
            clean_session=True,
            transport=self.address.transport,  # type: ignore[arg-type]
            websocket_path=self.address.path,
            keepalive=self._keepalive,
            timeout=self._timeout,
            max_inflight_messages=self._window,
            tls_context=self._tls_context(),
            logger=_paho_log,
        )

    async def _run(self) -> None:
        delay = self._backoff_min
        outage_logged = False
        while not self._closing:
            try:
                client = self._make_client()
                async with client:
                    self._client = client
                    self._connected = True
                    self.connections += 1
                    delay = self._backoff_min
                    log.info("mqtt connected to %s as %s", self.broker_url, self.client_id)
                    outage_logged = False
                    await self._session(client)
                    return  # closing: clean exit (offline published, disconnect in __aexit__)
            except (aiomqtt.MqttError, OSError, ssl.SSLError) as exc:
                if not outage_logged:
                    log.warning("mqtt broker %s unavailable: %s; retrying", self.broker_url, exc)
                    outage_logged = True
                else:
                    log.debug("mqtt retry failed: %s", exc)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("mqtt publisher error; reconnecting")
            finally:
                self._connected = False
                self._client = None
            if self._closing:
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), delay * (0.5 + random.random()))
            delay = min(self._backoff_max, delay * 2)

    async def _session(self, client: aiomqtt.Client) -> None:
        await client.publish(f"{self.root}/status", b"online", qos=1, retain=True)
        self._states.ensure_latest()
        if self._alarms is not None:
            self._alarms_dirty = True
        if self._on_command is not None:
            await client.subscribe(f"{self.root}/cmd/+", qos=1)
        # The reader also notices a lost connection while the drain is idle or waiting for PUBACKs
        # (aiomqtt leaves pending publishes waiting until their timeout).
        await self._resend_acknowledged(client)
        reader = asyncio.create_task(self._read_commands(client))
        drain = asyncio.create_task(self._drain(client))
        try:
            done, _ = await asyncio.wait((reader, drain), return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (reader, drain):
                task.cancel()
            await asyncio.gather(reader, drain, return_exceptions=True)
        if drain in done:
            drain.result()  # raises the drain's error, if any
            # closing: drained (or given up); say goodbye before the clean disconnect
            await client.publish(f"{self.root}/status", b"offline", qos=1, retain=True)
            return
        reader.result()  # raises the MqttError of the lost connection
        raise aiomqtt.MqttError("connection closed")

    async def _resend_acknowledged(self, client: aiomqtt.Client) -> None:
        """Publish the last ``resend`` acknowledged events again at every (re)connection.

        A broker can acknowledge a message and still lose it: one stopped while it held the
        message for a subscriber (seen with Mosquitto 2.0 on SIGTERM), or one restarted without
        persistence. The contract allows a repeat (same ``seq``, same body, subscribers skip it)
        and forbids a gap, so the newest acknowledged events go out once more, in order.
        """
        upto = self._outbox.delivered_upto
        if self._resend == 0 or upto == 0:
            return
        rows = list(self._outbox.records(max(1, upto - self._resend + 1), upto))
        if rows:
            topic = f"{self.root}/events"
            await self._publish_plan(client, [(topic, row.body.encode(), False, row.seq) for row in rows])

    async def _drain(self, client: aiomqtt.Client) -> None:
        outbox = self._outbox
        state_topic, events_topic = f"{self.root}/state", f"{self.root}/events"
        while True:
            self._wake.clear()
            cursor = outbox.delivered_upto
            rows = list(outbox.undelivered(after_seq=cursor, limit=self._window))
            plan: list[tuple[str, bytes, bool, int | None]] = []  # topic, payload, retain, event seq
            for row in rows:
                while self._states and self._states.peek()[0] < row.seq:
                    plan.append((state_topic, self._states.pop()[1], True, None))
                plan.append((events_topic, row.body.encode(), False, row.seq))
            horizon = rows[-1].seq if rows else cursor
            while self._states and self._states.peek()[0] <= horizon:
                plan.append((state_topic, self._states.pop()[1], True, None))
            if not rows and self._alarms_dirty and self._alarms is not None:
                self._alarms_dirty = False
                plan.append((f"{self.root}/alarms", self._alarms, True, None))
            if self._closing and (self._abandon or not plan):
                return
            if not plan:
                if self._idle():
                    self._drained.set()
                await self._wake.wait()
                continue
            await self._publish_plan(client, plan)

    async def _publish_plan(self, client: aiomqtt.Client, plan: list[tuple[str, bytes, bool, int | None]]) -> None:
        # Each publish() hands its packet to paho synchronously before its first await, and the
        # tasks start in list order, so the packets go out in order; the PUBACKs are awaited together.
        results = await asyncio.gather(
            *(client.publish(topic, payload, qos=1, retain=retain) for topic, payload, retain, _ in plan),
            return_exceptions=True,
        )
        acked_upto: int | None = None
        failure: BaseException | None = None
        for (_, _, _, seq), result in zip(plan, results, strict=True):
            if isinstance(result, BaseException):
                failure = result
                break
            self.published += 1
            if seq is not None:
                acked_upto = seq
        if acked_upto is not None:
            self._outbox.mark_delivered(acked_upto)
        if failure is not None:
            if self._states.latest is not None:
                self._states.ensure_latest()
            raise failure

    async def _read_commands(self, client: aiomqtt.Client) -> None:
        prefix = f"{self.root}/cmd/"
        async for message in client.messages:
            topic = message.topic.value
            if not topic.startswith(prefix):
                continue  # amqtt may hand a new session retained messages of other topics
            verb = topic[len(prefix) :]
            if not verb or "/" in verb:
                continue
            if message.retain:
                log.warning("ignoring retained command on %s (commands must not be retained)", topic)
                continue
            payload = message.payload if isinstance(message.payload, bytes | bytearray) else b""
            await self._answer(client, verb, bytes(payload))

    async def _answer(self, client: aiomqtt.Client, verb: str, payload: bytes) -> None:
        assert self._on_command is not None
        try:
            result = await self._on_command(verb, payload)
        except Exception:
            log.exception("command %s failed", verb)
            result = refused(verb, "internal error while handling the command")
        await client.publish(f"{self.root}/cmd/{verb}/result", _result_payload(result), qos=1)


class MemoryPublisher:
    """A :class:`Publisher` for tests and benches: 'publishes' into a list, acknowledges at once."""

    def __init__(self, outbox: Outbox, *, table_id: str = "t01", prefix: str = "tables") -> None:
        self._outbox = outbox
        self.root = topic_root(prefix, table_id)
        self.messages: list[tuple[str, bytes, bool]] = []
        self.retained: dict[str, bytes] = {}
        self._running = False

    def _put(self, topic: str, payload: bytes, retain: bool) -> None:
        self.messages.append((topic, payload, retain))
        if retain:
            self.retained[topic] = payload

    def notify(self) -> None:
        if not self._running:
            return
        last = 0
        for row in self._outbox.undelivered(after_seq=self._outbox.delivered_upto):
            self._put(f"{self.root}/events", row.body.encode(), False)
            last = row.seq
        if last:
            self._outbox.mark_delivered(last)

    def publish_state(self, seq: int, state: Json) -> None:
        self.notify()
        if self._running:
            self._put(f"{self.root}/state", _payload(state), True)

    def publish_alarms(self, alarms: Json) -> None:
        if self._running:
            self._put(f"{self.root}/alarms", _payload(alarms), True)

    @property
    def connected(self) -> bool:
        return self._running

    async def start(self) -> None:
        self._running = True
        self._put(f"{self.root}/status", b"online", True)
        self.notify()

    async def close(self, timeout: float = 5.0) -> None:
        if self._running:
            self.notify()
            self._put(f"{self.root}/status", b"offline", True)
        self._running = False

    def events(self) -> list[dict[str, Any]]:
        """Every ``events`` body published so far, decoded."""
        return [json.loads(p) for t, p, _ in self.messages if t.endswith("/events")]
