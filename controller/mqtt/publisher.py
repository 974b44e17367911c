"""Publishes a table over MQTT from the journal's outbox; takes commands in.

How it works
------------
The table service never waits on the network. After each durable journal commit it calls the
synchronous, non-blocking :meth:`Publisher.publish_state` (the new ``state`` snapshot, whose
``seq`` is that of the last event applied; the new ``events`` in the outbox go before it) or
:meth:`Publisher.notify` (new ``events`` only); :meth:`Publisher.publish_alarms` replaces the
retained ``alarms`` list, :meth:`HistoryPublisher.publish_history` the retained ``history`` (the
last settled rounds, handed over at each settlement and at start; sent once the events before it are), and
:meth:`AnalyticsPublisher.publish_analytics` the retained ``analytics`` (hold against theoretical and pace,
at each settlement and shoe end; the same way: only the newest waits, sent once the events before it are).

:class:`MqttPublisher` runs one task with our own reconnect loop (aiomqtt 2.x clients are not
reusable and start with nothing in flight, so the outbox is the journal, never the library's
queue). For each connection it:

1. connects with the last will ``<root>/status`` = ``offline`` (retained, QoS 1) and publishes
   ``online`` (retained, QoS 1);
2. subscribes to ``<root>/cmd/+`` and hands each command to ``on_command``; the answer goes to
   ``<root>/cmd/<verb>/result``;
3. sends the outbox: the undelivered records in ``seq`` order from the journal with QoS 1,
   pipelined (up to ``window`` in flight, in order on the wire), each pending ``state`` right
   after the events it reflects, and marks records delivered up to the last contiguous PUBACK.
   While connected, :meth:`notify` puts new records on the socket at once, in the caller's
   turn of the loop (the journal commit is done by then); PUBACKs are followed by a task that
   sends what the window held back. After a reconnect it restarts from the first
   unacknowledged record, so a subscriber may see a repeat (same ``seq``, same body) but never
   a gap. The latest ``state``, ``alarms``, ``history`` and ``analytics`` are republished on every connection
   (a restarted broker may have lost its retained messages).

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
import os
import random
import re
import socket
import ssl
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, Protocol, runtime_checkable
from urllib.parse import unquote, urlsplit

import aiomqtt
import paho.mqtt.client as mqtt

from controller.service.commands import CommandResult, refused

__all__ = [
    "AnalyticsPublisher",
    "BrokerAddress",
    "CommandHandler",
    "HistoryPublisher",
    "MemoryPublisher",
    "MqttPublisher",
    "Outbox",
    "Publisher",
    "client_id_for",
    "json_payload",
    "parse_broker_url",
    "redact_url",
    "topic_root",
]

log = logging.getLogger("controller.mqtt.publisher")


class _ExpectedPipelining(logging.Filter):
    """aiomqtt warns whenever QoS 1 publishes are in flight; ours keeps up to ``window`` so by design."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("There are %d pending publish calls")


_paho_log = logging.getLogger("controller.mqtt.publisher.paho")
_paho_log.addFilter(_ExpectedPipelining())

#: ``await on_command(verb, payload)`` -> the result to publish on ``.../cmd/<verb>/result``.
CommandHandler = Callable[[str, bytes], Awaitable[CommandResult | Mapping[str, Any]]]

Json = Mapping[str, Any] | Sequence[Any] | str | bytes


class Outbox(Protocol):
    """What the publisher needs of the journal (see :class:`controller.service.journal.Journal`)."""

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
        """Queue the retained ``state`` that follows the event ``seq``; the outbox's new records
        go first (this notifies)."""

    def publish_alarms(self, alarms: Json) -> None:
        """Replace the retained ``alarms`` list."""

    @property
    def connected(self) -> bool: ...

    async def start(self) -> None: ...

    async def close(self, timeout: float = 5.0) -> None: ...


@runtime_checkable
class HistoryPublisher(Protocol):
    """A publisher that also keeps the retained ``<root>/history`` (both of ours do; a publisher
    without it simply gets no history from the table)."""

    def publish_history(self, history: Json) -> None:
        """Replace the retained ``history`` (the last settled rounds, :mod:`controller.service.recall`);
        sent once the outbox's records committed before it are out."""


@runtime_checkable
class AnalyticsPublisher(Protocol):
    """A publisher that also keeps the retained ``<root>/analytics`` (both of ours do)."""

    def publish_analytics(self, analytics: Json) -> None:
        """Replace the retained ``analytics`` (:mod:`controller.analytics.live`): latest wins, sent once the
        outbox's records committed before it are out; never blocks."""


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


def redact_url(url: str) -> str:
    """``url`` with the password of its ``user:password@`` part replaced by ``***``, for logs and messages.

    Broker URLs may carry credentials; only this form of one is ever logged or printed.
    """
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    # Up to the last "@": a password with an unencoded "/" or "@" is hidden too (at worst, more is).
    userinfo, at, after = rest.rpartition("@")
    if not at or ":" not in userinfo:
        return url
    user = userinfo.split(":", 1)[0]
    return f"{scheme}{sep}{user}:***@{after}"


def parse_broker_url(url: str) -> BrokerAddress:
    """Parse a broker URL; raises ``ValueError`` naming what is wrong (never its password)."""
    shown = redact_url(url)
    try:
        parts = urlsplit(url)
    except ValueError:
        raise ValueError(f"broker URL {shown!r}: not a URL") from None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        raise ValueError(f"broker URL {shown!r}: scheme must be mqtt://, mqtts://, ws:// or wss://")
    if not parts.hostname:
        raise ValueError(f"broker URL {shown!r}: no host")
    try:
        port = parts.port or _DEFAULT_PORTS[scheme]
    except ValueError:
        raise ValueError(f"broker URL {shown!r}: bad port") from None
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


def _reason(exc: BaseException) -> str:
    """Why a connection failed, short: ``Connection refused`` rather than ``[Errno 111] Connection refused``."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    text = re.sub(r"^\[Errno -?\d+\] ", "", str(exc)).strip()
    return text or type(exc).__name__


def json_payload(value: Json) -> bytes:
    """The bytes published for a value: bytes as they are, text as UTF-8, else compact JSON."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def _result_payload(result: CommandResult | Mapping[str, Any]) -> bytes:
    if isinstance(result, CommandResult):
        return result.payload()
    return json_payload(dict(result))


class _PendingState(NamedTuple):
    serial: int  # 1, 2, ... in the order the service queued them
    seq: int  # the event seq the state follows
    body: bytes


class _StateQueue:
    """Pending ``state`` snapshots in seq order, bounded; the newest is always kept."""

    def __init__(self, maxlen: int) -> None:
        self._items: deque[_PendingState] = deque(maxlen=max(1, maxlen))
        self.latest: _PendingState | None = None
        self.pushed = 0  # serial of the newest state queued

    def push(self, seq: int, body: bytes) -> None:
        self.pushed += 1
        self.latest = _PendingState(self.pushed, seq, body)
        self._items.append(self.latest)

    def __bool__(self) -> bool:
        return bool(self._items)

    def peek(self) -> _PendingState:
        return self._items[0]

    def pop(self) -> _PendingState:
        return self._items.popleft()

    def ensure_latest(self) -> None:
        """Re-queue the newest state (after a reconnect) unless it is already pending."""
        if self.latest is not None and not self._items:
            self._items.append(self.latest)


class _Client(aiomqtt.Client):
    """aiomqtt's client plus a publish that puts the packet on the socket before it returns.

    ``await Client.publish()`` hands its packet to paho only when its task first runs, and paho
    writes it a loop turn or two later (aiomqtt registers a writer with ``call_soon_threadsafe``):
    with the rest of the table sharing the loop that was ~0.7 ms between a journal commit and the
    bytes leaving. :meth:`publish_now` does the same as ``publish()`` up to its ``await`` (the
    paho call, then the confirmation registered under the message id, which aiomqtt's
    ``on_publish`` sets on the PUBACK) and :meth:`flush` is what aiomqtt's writer callback does.
    Written against aiomqtt 2.x (``pyproject.toml`` keeps it below 3); tested on a real broker.
    """

    def publish_now(self, topic: str, payload: bytes, *, retain: bool) -> asyncio.Event:
        """Queue a QoS 1 publish in paho now; the event is set when its PUBACK arrives."""
        info = self._client.publish(topic, payload, 1, retain)
        if info.rc != mqtt.MQTT_ERR_SUCCESS:
            raise aiomqtt.MqttCodeError(info.rc, "Could not publish message")
        acked = asyncio.Event()
        if info.is_published():
            acked.set()
        else:
            self._pending_publishes[info.mid] = acked
        return acked

    def tune_socket(self) -> None:
        """Turn Nagle off (``TCP_NODELAY``) on a TCP connection (plain or TLS).

        paho leaves Nagle on, so a publish written while the previous one is unacknowledged
        waits for the broker's ACK: the card's ``state`` could wait a broker round trip behind
        its events. (Corking the socket around a flush, to send a commit's messages in one
        segment, was measured slower: the broker then starts on the first one later.)
        """
        sock = self._client.socket()
        if isinstance(sock, socket.socket):  # ssl.SSLSocket is one; paho's websocket wrapper is not
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _on_socket_register_write(self, client: mqtt.Client, userdata: Any, sock: Any) -> None:
        """Watch the socket for writability at once when called on the loop's own thread.

        aiomqtt always defers ``add_writer`` with ``call_soon_threadsafe`` (paho may call from
        the connect thread) while its ``remove_writer`` is immediate. :meth:`flush` writes in
        the caller's turn, so paho registers and unregisters within one turn and the deferred
        add came *after* the remove: a writer stayed registered on an always-writable socket
        with nothing to write, waking the loop at every turn (a core spent on nothing), and a
        deferred add could land on a descriptor already closed. Adding in order keeps paho and
        the loop in step.
        """
        try:
            on_loop_thread = asyncio.get_running_loop() is self._loop
        except RuntimeError:
            on_loop_thread = False
        if not on_loop_thread:
            super()._on_socket_register_write(client, userdata, sock)
            return

        def write_ready() -> None:  # what aiomqtt's own writer callback does
            try:
                client.loop_write()
            except Exception as exc:
                if not self._disconnected.done():
                    self._disconnected.set_exception(exc)

        self._loop.add_writer(sock.fileno(), write_ready)

    def connection_lost(self) -> BaseException | None:
        """Why paho or the socket dropped the connection, if they did.

        aiomqtt keeps it in a future that only its message reader awaits; our acknowledgement
        follower often sees the failure first and the reader is cancelled, so the publisher
        reads it once the connection is over (else asyncio reports it as never retrieved).
        """
        lost = self._disconnected
        return lost.exception() if lost.done() and not lost.cancelled() else None

    def flush(self) -> None:
        """Write the queued packets now, as far as the socket takes them (paho keeps the rest
        for the writer callback)."""
        rc = self._client.loop_write()
        if rc not in (mqtt.MQTT_ERR_SUCCESS, mqtt.MQTT_ERR_AGAIN):
            raise aiomqtt.MqttCodeError(rc, "Could not write to the broker")


@dataclass(frozen=True, slots=True)
class _Flight:
    """A message sent and not yet acknowledged: an event (its ``seq``), a state (its ``state``
    serial), the alarms (the ``alarms`` version), the round history (the ``history`` version) or the
    analytics (the ``analytics`` version)."""

    acked: asyncio.Event
    seq: int | None = None
    state: int = 0
    alarms: int = 0
    history: int = 0
    analytics: int = 0


def _batches(rows: Iterable[Any], size: int) -> Iterator[list[Any]]:
    batch: list[Any] = []
    for row in rows:
        batch.append(row)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def tls_context(tls: bool, ca: str | os.PathLike[str] | None, cert: str | os.PathLike[str] | None,
                key: str | os.PathLike[str] | None) -> ssl.SSLContext | None:
    """The TLS context for a broker (``mqtts``/``wss``, or a CA or client certificate given), else None."""
    if not tls and ca is None and cert is None:
        return None
    ctx = ssl.create_default_context(cafile=str(ca) if ca else None)
    if cert is not None:
        ctx.load_cert_chain(str(cert), str(key) if key else None)
    return ctx


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
        #: the broker URL as logged: its password, if any, replaced by ``***``
        self.broker_url = redact_url(broker_url)
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
        self._alarms_version = 0  # alarms lists queued so far
        self._history: bytes | None = None
        self._history_dirty = False
        self._history_version = 0  # history payloads queued so far
        self._history_acked = 0
        self._analytics: bytes | None = None
        self._analytics_dirty = False
        self._analytics_version = 0  # analytics payloads queued so far
        self._analytics_acked = 0
        #: what the broker has acknowledged: the newest state serial and alarms version
        self._states_acked = 0
        self._alarms_acked = 0
        self._wake = asyncio.Event()
        self._progress = asyncio.Event()  # set when acknowledgements arrive or the publisher idles
        #: the connection records and states are sent on right away (None: not connected)
        self._live: _Client | None = None
        self._flights: deque[_Flight] = deque()  # sent, PUBACK awaited, in send order
        self._sent_upto = 0  # the last event seq handed to the socket on this connection
        self._failure: BaseException | None = None
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
        self._send()
        self._wake.set()

    def publish_state(self, seq: int, state: Json) -> None:
        self._states.push(seq, json_payload(state))
        self.notify()

    def publish_alarms(self, alarms: Json) -> None:
        self._alarms = json_payload(alarms)
        self._alarms_dirty = True
        self._alarms_version += 1
        self.notify()

    def publish_history(self, history: Json) -> None:
        self._history = json_payload(history)
        self._history_dirty = True
        self._history_version += 1
        self.notify()

    def publish_analytics(self, analytics: Json) -> None:
        self._analytics = json_payload(analytics)
        self._analytics_dirty = True
        self._analytics_version += 1
        self.notify()

    @property
    def connected(self) -> bool:
        return self._connected

    @property
    def topics(self) -> dict[str, str]:
        r = self.root
        return {"status": f"{r}/status", "state": f"{r}/state", "events": f"{r}/events", "alarms": f"{r}/alarms",
                "history": f"{r}/history", "analytics": f"{r}/analytics"}

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
        """Wait until the broker has acknowledged everything queued before this call: the
        outbox's records, the states, the alarms list, the round history and the analytics.

        The table may go on publishing meanwhile: what it queues later is not waited for (a
        table that never pauses would otherwise never count as drained). A publisher that was
        never started has nothing on its way: it returns at once.
        """
        if self._task is None:
            return
        events, states, alarms = self._outbox.last_seq, self._states.pushed, self._alarms_version
        history, analytics = self._history_version, self._analytics_version
        async with asyncio.timeout(timeout):
            while not (self._connected and self._outbox.delivered_upto >= events
                       and self._states_acked >= states and self._alarms_acked >= alarms
                       and self._history_acked >= history and self._analytics_acked >= analytics):
                self._progress.clear()
                await self._progress.wait()

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
        return (self._outbox.delivered_upto >= self._outbox.last_seq and not self._states and not self._alarms_dirty
                and not self._history_dirty and not self._analytics_dirty and not self._flights)

    def _tls_context(self) -> ssl.SSLContext | None:
        return tls_context(self.address.tls, self._tls_ca, self._tls_cert, self._tls_key)

    def _make_client(self) -> _Client:
        return _Client(
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
            max_inflight_messages=0,  # no limit in paho: ``window`` bounds what we send
            tls_context=self._tls_context(),
            logger=_paho_log,
        )

    async def _run(self) -> None:
        delay = self._backoff_min
        outage_logged = False
        while not self._closing:
            client: _Client | None = None
            try:
                client = self._make_client()
                async with client:
                    self._client = client
                    self._connected = True
                    self._progress.set()
                    self.connections += 1
                    delay = self._backoff_min
                    log.info("mqtt connected to %s as %s", self.broker_url, self.client_id)
                    outage_logged = False
                    await self._session(client)
                    return  # closing: clean exit (offline published, disconnect in __aexit__)
            except (aiomqtt.MqttError, OSError, ssl.SSLError) as exc:
                if not outage_logged:  # one line per outage, the operator's: the retries are quiet
                    log.warning("%s: MQTT broker %s not reachable (%s): playing on, publishing from the journal "
                                "once it is up", self.table_id, self.broker_url, _reason(exc))
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
                if client is not None:
                    lost = client.connection_lost()
                    if lost is not None:
                        log.debug("mqtt connection to %s lost: %r", self.broker_url, lost)
            if self._closing:
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), delay * (0.5 + random.random()))
            delay = min(self._backoff_max, delay * 2)

    async def _session(self, client: _Client) -> None:
        client.tune_socket()
        await client.publish(f"{self.root}/status", b"online", qos=1, retain=True)
        self._states.ensure_latest()
        if self._alarms is not None:
            self._alarms_dirty = True
        if self._history is not None:
            self._history_dirty = True
        if self._analytics is not None:
            self._analytics_dirty = True
        if self._on_command is not None:
            await client.subscribe(f"{self.root}/cmd/+", qos=1)
        await self._resend_acknowledged(client)
        self._flights.clear()
        self._failure = None
        self._sent_upto = self._outbox.delivered_upto  # restart from the first unacknowledged record
        self._live = client
        try:
            self._send()
            # The reader also notices a lost connection while nothing is in flight (aiomqtt leaves
            # pending publishes waiting until their timeout).
            reader = asyncio.create_task(self._read_commands(client))
            acks = asyncio.create_task(self._follow_acks())
            try:
                done, _ = await asyncio.wait((reader, acks), return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in (reader, acks):
                    task.cancel()
                await asyncio.gather(reader, acks, return_exceptions=True)
        finally:
            self._live = None
            self._flights.clear()
        if acks in done:
            acks.result()  # raises the failure, if any
            # closing: drained (or given up); say goodbye before the clean disconnect
            await client.publish(f"{self.root}/status", b"offline", qos=1, retain=True)
            return
        reader.result()  # raises the MqttError of the lost connection
        raise aiomqtt.MqttError("connection closed")

    async def _resend_acknowledged(self, client: _Client) -> None:
        """Publish the last ``resend`` acknowledged events again at every (re)connection.

        A broker can acknowledge a message and still lose it: one stopped while it held the
        message for a subscriber (seen with Mosquitto 2.0 on SIGTERM), or one restarted without
        persistence. The contract allows a repeat (same ``seq``, same body, subscribers skip it)
        and forbids a gap, so the newest acknowledged events go out once more, in order.
        """
        upto = self._outbox.delivered_upto
        if self._resend == 0 or upto == 0:
            return
        topic = f"{self.root}/events"
        for batch in _batches(self._outbox.records(max(1, upto - self._resend + 1), upto), self._window):
            acks = [client.publish_now(topic, row.body.encode(), retain=False) for row in batch]
            client.flush()
            for ack in acks:
                await self._puback(ack)
            self.published += len(acks)

    def _send(self) -> None:
        """Hand what is ready to the socket now, in ``seq`` order, up to ``window`` in flight.

        Called synchronously from :meth:`notify` (right after the journal commit, so a record
        leaves without waiting for a turn of the loop) and after each acknowledgement. Events go
        in ``seq`` order, each pending ``state`` right after the events it reflects, the
        ``alarms`` once every event is out. Never raises: a failure ends the connection
        through :meth:`_follow_acks`, which reconnects.
        """
        client = self._live
        if client is None or self._failure is not None:
            return
        try:
            outbox, states, flights = self._outbox, self._states, self._flights
            room = self._window - len(flights)
            sent = False
            if room > 0 and outbox.last_seq > self._sent_upto:
                events_topic = f"{self.root}/events"
                for row in outbox.undelivered(after_seq=self._sent_upto, limit=room):
                    while states and states.peek().seq < row.seq:
                        flights.append(self._send_state(client, states.pop()))
                    flights.append(_Flight(client.publish_now(events_topic, row.body.encode(), retain=False),
                                           seq=row.seq))
                    self._sent_upto = row.seq
                    sent = True
            while states and states.peek().seq <= self._sent_upto:
                flights.append(self._send_state(client, states.pop()))
                sent = True
            if self._alarms_dirty and self._alarms is not None and self._sent_upto >= outbox.last_seq:
                self._alarms_dirty = False
                flights.append(_Flight(client.publish_now(f"{self.root}/alarms", self._alarms, retain=True),
                                       alarms=self._alarms_version))
                sent = True
            if self._history_dirty and self._history is not None and self._sent_upto >= outbox.last_seq:
                self._history_dirty = False
                flights.append(_Flight(client.publish_now(f"{self.root}/history", self._history, retain=True),
                                       history=self._history_version))
                sent = True
            if self._analytics_dirty and self._analytics is not None and self._sent_upto >= outbox.last_seq:
                self._analytics_dirty = False
                flights.append(_Flight(client.publish_now(f"{self.root}/analytics", self._analytics, retain=True),
                                       analytics=self._analytics_version))
                sent = True
            if sent:
                client.flush()
                self._wake.set()  # the acknowledgement follower has something to wait for
        except Exception as exc:  # a lost socket, paho refusing: reconnect, never fail the caller
            log.warning("mqtt publish to %s failed: %r; reconnecting", self.broker_url, exc)
            self._failure = exc
            self._wake.set()

    async def _puback(self, acked: asyncio.Event) -> None:
        """Wait for one PUBACK; one that does not come within ``timeout`` drops the connection."""
        try:
            await asyncio.wait_for(acked.wait(), self._timeout)
        except TimeoutError:
            raise aiomqtt.MqttError(f"no PUBACK within {self._timeout:g} s") from None

    def _send_state(self, client: _Client, state: _PendingState) -> _Flight:
        return _Flight(client.publish_now(f"{self.root}/state", state.body, retain=True), state=state.serial)

    async def _follow_acks(self) -> None:
        """Wait for the PUBACKs in order, mark the acknowledged events delivered, send more.

        Returns when closing and drained (or given up); raises on a failure or a PUBACK that
        does not come within ``timeout`` (the connection is then dropped and made again).
        """
        flights = self._flights
        while True:
            if self._failure is not None:
                raise self._failure
            if not flights:
                self._send()
            if not flights:
                if self._closing and (self._abandon or self._idle()):
                    return
                self._progress.set()
                self._wake.clear()
                await self._wake.wait()
                continue
            if self._abandon:
                return
            await self._puback(flights[0].acked)
            acked_upto: int | None = None
            while flights and flights[0].acked.is_set():
                flight = flights.popleft()
                self.published += 1
                if flight.seq is not None:
                    acked_upto = flight.seq
                self._states_acked = max(self._states_acked, flight.state)
                self._alarms_acked = max(self._alarms_acked, flight.alarms)
                self._history_acked = max(self._history_acked, flight.history)
                self._analytics_acked = max(self._analytics_acked, flight.analytics)
            if acked_upto is not None:
                self._outbox.mark_delivered(acked_upto)
            self._progress.set()
            self._send()

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
            self._put(f"{self.root}/state", json_payload(state), True)

    def publish_alarms(self, alarms: Json) -> None:
        if self._running:
            self._put(f"{self.root}/alarms", json_payload(alarms), True)

    def publish_history(self, history: Json) -> None:
        self.notify()
        if self._running:
            self._put(f"{self.root}/history", json_payload(history), True)

    def publish_analytics(self, analytics: Json) -> None:
        self.notify()
        if self._running:
            self._put(f"{self.root}/analytics", json_payload(analytics), True)

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
