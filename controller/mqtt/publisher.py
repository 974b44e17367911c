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

This module is the glue; each job has its own module: :mod:`controller.mqtt.addresses` (broker URLs,
client ids, TLS), :mod:`controller.contract.topics` (topic names, payload bytes),
:mod:`controller.mqtt.window` (what to send and what is acknowledged, sans-I/O) and
:mod:`controller.mqtt.client` (the asyncio MQTT client over paho that writes in the caller's turn).

:class:`MqttPublisher` runs one task with our own reconnect loop (our clients are not
reusable and start with nothing in flight, so the outbox is the journal, never the library's
queue). For each connection it:

1. connects with the last will ``<root>/status`` = ``offline`` (retained, QoS 1) and publishes
   ``online`` (retained, QoS 1);
2. subscribes to ``<root>/cmd/+/+/+`` and hands each command (its role, user and verb, as the topic
   ``<root>/cmd/<role>/<user>/<verb>`` says them) to ``on_command``; the answer goes to
   ``<root>/cmd/<role>/<user>/<verb>/result``;
3. sends the outbox: the undelivered records in ``seq`` order from the journal with QoS 1,
   pipelined (up to ``window`` in flight, in order on the wire), each pending ``state`` right
   after the events it reflects, and marks records delivered up to the last contiguous PUBACK.
   While connected, :meth:`notify` puts new records on the socket at once, in the caller's
   turn of the loop (the journal commit is done by then); PUBACKs are followed by a task that
   sends what the window held back. After a reconnect it restarts from the first
   unacknowledged record, so a subscriber may see a repeat (same ``seq``, same body) but never
   a gap. The latest ``state``, ``alarms``, ``history`` and ``analytics`` are republished on every connection
   (a restarted broker may have lost its retained messages).
4. after ``retained_refresh`` seconds of quiet (30 s by default; 0: never), publishes again each
   retained topic the table did not publish meanwhile: the newest ``state``, ``alarms``, ``history``,
   ``analytics`` and ``ratings/open`` (the same bytes; the first four through the window, so never a
   ``state`` older than one sent nor while a newer one waits) and ``status`` ``online``. A broker can
   acknowledge a retained message and fail to store it (a NATS cluster losing its quorum: "unable to
   store retained message ... timeout"), and a subscriber that comes later then gets an older copy;
   the table cannot see that, so the refresh bounds how long such a copy lasts (docs/floor.md). It is
   a timer of its own task: nothing is added per event.

The brokers and how to reach them are one :class:`controller.mqtt.options.BrokerOptions`. A table may name
several (``brokers``: the nodes of the floor's cluster, DESIGN.md "The casino floor"): it connects to the
first that answers and, when it loses its broker or one does not answer, tries the next one in the list at
once; the outbox resends from the journal on the new connection as after any reconnect. On failure of every
broker in turn it waits (exponential backoff with jitter, ``backoff_min`` to ``backoff_max``) and goes round
again; connection errors are logged once per outage (the policy: :mod:`controller.mqtt.failover`).
:meth:`close` drains what it can within its timeout, publishes ``offline`` and disconnects cleanly.

States are kept in memory only (the journal rebuilds them): up to ``max_pending_states`` wait
while the broker is away; older ones are dropped, the newest always survives.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import re
import ssl
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol, runtime_checkable

from paho.mqtt.reasoncodes import ReasonCode

from controller.cancelling import cancel_and_wait
from controller.contract.results import CommandResult, refused
from controller.contract.topics import CommandTopic, Json, Topics, json_payload, topic_root
from controller.journal import JournalError
from controller.mqtt.addresses import BrokerAddress, client_id_for, tls_context
from controller.mqtt.client import MqttClient, MqttError, Will
from controller.mqtt.failover import Failover
from controller.mqtt.options import BrokerOptions
from controller.mqtt.window import OutboxWindow, RefreshTicks, batches

__all__ = [
    "AnalyticsPublisher",
    "CommandHandler",
    "HistoryPublisher",
    "MemoryPublisher",
    "MqttPublisher",
    "Outbox",
    "Publisher",
    "RatingsPublisher",
]

log = logging.getLogger("controller.mqtt.publisher")

_paho_log = logging.getLogger("controller.mqtt.publisher.paho")

#: ``await on_command(command, payload)`` -> the result to publish on ``.../cmd/<role>/<user>/<verb>/result``.
CommandHandler = Callable[[CommandTopic, bytes], Awaitable[CommandResult | Mapping[str, Any]]]
#: asked on a new connection before anything is published: (the connected client, its broker URL as logged)
FirstContact = Callable[[MqttClient, str], Awaitable[None]]


def _reason(exc: BaseException) -> str:
    """Why a connection failed, short: ``Connection refused`` rather than ``[Errno 111] Connection refused``."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    text = re.sub(r"^\[Errno -?\d+\] ", "", str(exc)).strip()
    return text or type(exc).__name__


def _result_payload(result: CommandResult | Mapping[str, Any]) -> bytes:
    if isinstance(result, CommandResult):
        return result.payload()
    return json_payload(dict(result))


class Outbox(Protocol):
    """What the publisher needs of the journal (see :class:`controller.journal.writer.Journal`)."""

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
        """Replace the retained ``history`` (the last settled rounds, :mod:`controller.records`);
        sent once the outbox's records committed before it are out."""


@runtime_checkable
class RatingsPublisher(Protocol):
    """A publisher that also carries the player ratings (DESIGN "Rated play"; both of ours do)."""

    def publish_rating(self, rating: Json) -> None:
        """Publish one ended rating on ``<root>/ratings`` (QoS 1, not retained), once, in order."""

    def publish_open_ratings(self, ratings: Json) -> None:
        """Replace the retained ``<root>/ratings/open`` (the running ratings)."""


@runtime_checkable
class AnalyticsPublisher(Protocol):
    """A publisher that also keeps the retained ``<root>/analytics`` (both of ours do)."""

    def publish_analytics(self, analytics: Json) -> None:
        """Replace the retained ``analytics`` (:mod:`controller.analytics.live`): latest wins, sent once the
        outbox's records committed before it are out; never blocks."""


class MqttPublisher:
    """The production :class:`Publisher`: our MQTT client over paho, our reconnect loop, the journal as outbox."""

    def __init__(
        self,
        outbox: Outbox,
        *,
        table_id: str,
        broker: BrokerOptions | None = None,
        prefix: str = "tables",
        on_command: CommandHandler | None = None,
        window: int = 64,
        resend: int = 64,
        max_pending_states: int = 512,
        retained_refresh: float = 30.0,
        first_contact: FirstContact | None = None,
        on_halt: Callable[[JournalError], None] | None = None,
    ) -> None:
        if not (retained_refresh == 0 or 0 < retained_refresh < math.inf):
            raise ValueError(f"retained_refresh: {retained_refresh!r} is not 0 (off) or a number of seconds")
        self._outbox = outbox
        self.table_id = table_id
        self.root = topic_root(prefix, table_id)
        self._topics = Topics.under(self.root)
        self._topic_of = self._topics.published()  # the window's topic names -> this table's topics
        #: how to reach the broker (checked when made: :class:`BrokerOptions`; None: a Mosquitto on this PC)
        self.broker = broker = broker if broker is not None else BrokerOptions()
        #: every broker the table may use, in the order it tries them
        self.addresses = broker.addresses
        self._shown_urls = broker.shown
        #: which broker is in use or tried next, when to try it (sans-I/O; made again at each :meth:`start`)
        self._failover = Failover(len(self.addresses), backoff_min=broker.backoff_min, backoff_max=broker.backoff_max)
        self._username_given, self._password_given = broker.username, broker.password
        self._tls_ca, self._tls_cert, self._tls_key = broker.tls_ca, broker.tls_cert, broker.tls_key
        self._on_command = on_command
        self.client_id = broker.client_id or client_id_for(prefix, table_id)
        self._keepalive = broker.keepalive
        self._timeout = broker.timeout
        #: seconds of quiet after which a retained topic is published again (0: never; :meth:`_refresh_retained`)
        self.retained_refresh = float(retained_refresh)
        #: what to send and what the broker acknowledged (sans-I/O); the PUBACK of each ticket in flight
        self._window = OutboxWindow(size=window, resend=resend, max_pending_states=max_pending_states)
        self._acks: dict[int, asyncio.Event] = {}
        self._wake = asyncio.Event()
        self._progress = asyncio.Event()  # set when acknowledgements arrive or the publisher idles
        #: the connection records and states are sent on right away (None: not connected)
        self._live: MqttClient | None = None
        self._failure: BaseException | None = None
        self._connected = False
        self._closing = False
        self._abandon = False
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._client: MqttClient | None = None
        self.connections = 0
        self.published = 0
        #: ended ratings not yet on a connection, and those sent whose PUBACK has not come (sent again on the next)
        self._ratings: deque[bytes] = deque()
        self._ratings_flying: list[tuple[bytes, asyncio.Event]] = []
        self._ratings_open: bytes | None = None
        self._ratings_open_sent = False
        self._ratings_open_version = 0  # open ratings published so far (the refresh's counter of them)
        #: asked on each new connection before anything is published (the journal's witnesses silent at start:
        #: :mod:`controller.mqtt.late_witness`); a :class:`JournalError` from it halts the publisher for good
        self._first_contact = first_contact
        self._on_halt = on_halt
        #: why the publisher stopped for good without publishing (a witness holds the journal behind it)
        self.halted: JournalError | None = None

    # -- the service's side (never blocks) ----------------------------------------------------

    def notify(self) -> None:
        self._send()
        self._wake.set()

    def publish_state(self, seq: int, state: Json) -> None:
        self._window.queue_state(seq, json_payload(state))
        self.notify()

    def publish_alarms(self, alarms: Json) -> None:
        self._window.replace("alarms", json_payload(alarms))
        self.notify()

    def publish_history(self, history: Json) -> None:
        self._window.replace("history", json_payload(history))
        self.notify()

    def publish_analytics(self, analytics: Json) -> None:
        self._window.replace("analytics", json_payload(analytics))
        self.notify()

    def publish_rating(self, rating: Json) -> None:
        self._ratings.append(json_payload(rating))
        self._send_ratings()

    def publish_open_ratings(self, ratings: Json) -> None:
        self._ratings_open, self._ratings_open_sent = json_payload(ratings), False
        self._ratings_open_version += 1
        self._send_ratings()

    def _send_ratings(self) -> None:
        """Put the queued ratings on the live connection now (QoS 1); what a lost connection took without a
        PUBACK goes again on the next (:meth:`_ratings_reconnected`). Never raises: the events' path reconnects."""
        client = self._live
        if client is None or self._failure is not None:
            return
        try:
            self._ratings_flying = [(p, ack) for p, ack in self._ratings_flying if not ack.is_set()]
            sent = False
            while self._ratings:
                payload = self._ratings.popleft()
                self._ratings_flying.append((payload, client.publish_now(self._topics.ratings, payload, retain=False)))
                sent = True
            if self._ratings_open is not None and not self._ratings_open_sent:
                client.publish_now(self._topics.ratings_open, self._ratings_open, retain=True)
                self._ratings_open_sent = sent = True
            if sent:
                client.flush()
        except Exception as exc:
            log.warning("mqtt publish of the ratings to %s failed: %r", self.broker_url, exc)

    @property
    def ratings_pending(self) -> int:
        """Ended ratings not yet acknowledged by the broker (queued, or sent without a PUBACK so far)."""
        return len(self._ratings) + sum(1 for _, ack in self._ratings_flying if not ack.is_set())

    def _ratings_reconnected(self) -> None:
        """A new connection: the ratings sent without a PUBACK go again first, and the retained open ones."""
        unacked = [p for p, ack in self._ratings_flying if not ack.is_set()]
        self._ratings_flying = []
        self._ratings.extendleft(reversed(unacked))
        self._ratings_open_sent = False
        self._send_ratings()

    @property
    def connected(self) -> bool:
        return self._connected

    @property
    def address(self) -> BrokerAddress:
        """The broker in use (or tried next)."""
        return self.addresses[self._failover.current]

    @property
    def broker_url(self) -> str:
        """The URL of the broker in use as logged: its password, if any, replaced by ``***``."""
        return self._shown_urls[self._failover.current]

    @property
    def _username(self) -> str | None:
        return self._username_given if self._username_given is not None else self.address.username

    @property
    def _password(self) -> str | None:
        return self._password_given if self._password_given is not None else self.address.password

    @property
    def topics(self) -> dict[str, str]:
        return self._topics.published()

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
        events, queued = self._outbox.last_seq, self._window.queued
        async with asyncio.timeout(timeout):
            while not (self._connected and self._outbox.delivered_upto >= events
                       and self._window.acked.covers(queued)):
                if self.halted is not None:
                    raise self.halted
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
        await cancel_and_wait((task,))  # its end taken, or its cancellation sent until it ends

    async def __aenter__(self) -> MqttPublisher:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- internals ---------------------------------------------------------------------------

    def _idle(self) -> bool:
        return self._outbox.delivered_upto >= self._outbox.last_seq and self._window.idle()

    def _tls_context(self) -> ssl.SSLContext | None:
        return tls_context(self.address.tls, self._tls_ca, self._tls_cert, self._tls_key)

    def _make_client(self) -> MqttClient:
        return MqttClient(
            self.address.host,
            self.address.port,
            username=self._username,
            password=self._password,
            identifier=self.client_id,
            will=Will(self._topics.status, b"offline", qos=1, retain=True),
            clean_session=True,
            transport=self.address.transport,
            websocket_path=self.address.path,
            keepalive=self._keepalive,
            timeout=self._timeout,
            max_inflight_messages=0,  # no limit in paho: ``window`` bounds what we send
            tls_context=self._tls_context(),
            logger=_paho_log,
        )

    async def _run(self) -> None:
        failover = self._failover = Failover(len(self.addresses), backoff_min=self.broker.backoff_min,
                                             backoff_max=self.broker.backoff_max, start=self._failover.current)
        while not self._closing:
            client: MqttClient | None = None
            try:
                client = self._make_client()
                async with client:
                    self._client = client
                    self._connected = True
                    self._progress.set()
                    self.connections += 1
                    failover.connected()
                    log.info("mqtt connected to %s as %s", self.broker_url, self.client_id)
                    await self._session(client)
                    return  # closing: clean exit (offline published, disconnect in __aexit__)
            except JournalError as exc:  # a witness holds the journal behind it: publish nothing, ever
                self.halted = exc
                log.critical("%s: %s", self.table_id, exc)
                self._progress.set()
                if self._on_halt is not None:
                    self._on_halt(exc)
                return
            except (MqttError, OSError, ssl.SSLError) as exc:
                if failover.failed():  # one line per outage, the operator's: the retries are quiet
                    log.warning("%s: MQTT broker %s not reachable (%s): playing on, publishing from the journal "
                                "once it is up", self.table_id, self.broker_url, _reason(exc))
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
            retry = failover.ended()  # another broker of the floor at once: a lost node is not waited for
            if retry.moved:
                (log.info if retry.was_connected else log.debug)("%s: trying the next broker, %s", self.table_id,
                                                                 self.broker_url)
            if retry.wait is not None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), retry.wait)

    async def _session(self, client: MqttClient) -> None:
        topics, window = self._topics, self._window
        client.tune_socket()
        if self._first_contact is not None:  # before anything is published on this broker
            await self._first_contact(client, self.broker_url)
        await client.publish(topics.status, b"online", qos=1, retain=True)
        window.connection_made()
        if self._on_command is not None:
            # QoS 1, though the session is clean: on the floor's NATS cluster a QoS 1 publish of a person's command
            # is kept by JetStream for this subscription, while a QoS 0 subscription's interest reaches the other
            # nodes a moment after its SUBACK, and a command sent on another node meanwhile reaches nobody (the
            # cluster soak, seed 138: "t01 cmd/explode: no result in 20 s" with QoS 0). It costs each reconnect
            # a consumer to delete and make again while the cluster elects leaders (docs/floor.md).
            granted = await client.subscribe(topics.commands, qos=1)
            # a broker may refuse it (SUBACK 0x80: a NATS cluster electing leaders after a node loss): never
            # stay connected without the commands; connect again (the next node) and ask again
            if any(g.is_failure if isinstance(g, ReasonCode) else g >= 0x80 for g in granted):
                raise MqttError(f"subscription to {topics.commands} refused")
        await self._resend_acknowledged(client)
        self._acks.clear()
        self._failure = None
        window.opened(self._outbox.delivered_upto)  # restart from the first unacknowledged record
        self._live = client
        try:
            self._send()
            self._ratings_reconnected()
            # The reader also notices a lost connection while nothing is in flight (the client leaves
            # pending publishes waiting until their timeout).
            reader = asyncio.create_task(self._read_commands(client))
            acks = asyncio.create_task(self._follow_acks())
            tasks = [reader, acks]
            if self.retained_refresh > 0:
                tasks.append(asyncio.create_task(self._refresh_retained(client)))
            try:
                done, _ = await asyncio.wait((reader, acks), return_when=asyncio.FIRST_COMPLETED)
            finally:
                await cancel_and_wait(tasks)
        finally:
            self._live = None
            window.connection_lost()
            self._acks.clear()
        if acks in done:
            acks.result()  # raises the failure, if any
            # closing: drained (or given up); say goodbye before the clean disconnect
            await client.publish(topics.status, b"offline", qos=1, retain=True)
            return
        reader.result()  # raises the MqttError of the lost connection
        raise MqttError("connection closed")

    async def _refresh_retained(self, client: MqttClient) -> None:
        """The retained refresh of one connection: every half ``retained_refresh``, the retained topics that
        went a whole period unpublished (:class:`RefreshTicks`) go again, the same bytes.

        ``state``, ``alarms``, ``history`` and ``analytics`` through the window (:meth:`OutboxWindow.refresh`:
        its order and acknowledgement rules hold), ``ratings/open`` as it always goes (right away), and
        ``status`` ``online``, true while this connection lasts (the task ends before a clean close
        publishes ``offline``; a lost connection's will comes after anything it sent). Never raises: a
        failed publish ends the connection as :meth:`_send`'s do.
        """
        ticks = RefreshTicks(2)
        window = self._window
        while True:
            await asyncio.sleep(self.retained_refresh / ticks.ticks)
            if self._closing or self._live is not client or self._failure is not None:
                continue  # closing: draining, then offline; nothing more of ours
            queued = window.queued
            due = ticks.tick({"state": queued.states, "alarms": queued.alarms, "history": queued.history,
                              "analytics": queued.analytics, "ratings/open": self._ratings_open_version,
                              "status": self.connections})
            if not due:
                continue
            log.debug("%s: publishing again, unchanged for %g s: %s", self.table_id, self.retained_refresh,
                      ", ".join(due))
            window.refresh(due)
            self._send()
            if "ratings/open" in due and self._ratings_open is not None:
                self._ratings_open_sent = False
                self._send_ratings()
            if "status" in due:
                try:
                    client.publish_now(self._topics.status, b"online", retain=True)
                    client.flush()
                except Exception as exc:
                    log.warning("mqtt publish to %s failed: %r; reconnecting", self.broker_url, exc)
                    self._failure = exc
                    self._wake.set()

    async def _resend_acknowledged(self, client: MqttClient) -> None:
        """Publish the last ``resend`` acknowledged events again at every (re)connection.

        A broker can acknowledge a message and still lose it: one stopped while it held the
        message for a subscriber (seen with Mosquitto 2.0 on SIGTERM), or one restarted without
        persistence. The contract allows a repeat (same ``seq``, same body, subscribers skip it)
        and forbids a gap, so the newest acknowledged events go out once more, in order.
        """
        span = self._window.resend_span(self._outbox.delivered_upto)
        if span is None:
            return
        topic = self._topics.events
        for batch in batches(self._outbox.records(*span), self._window.size):
            acks = [client.publish_now(topic, row.body.encode(), retain=False) for row in batch]
            client.flush()
            for ack in acks:
                await self._puback(ack)
            self.published += len(acks)

    def _send(self) -> None:
        """Hand what the window says is ready to the socket now (:meth:`OutboxWindow.sends`).

        Called synchronously from :meth:`notify` (right after the journal commit, so a record
        leaves without waiting for a turn of the loop) and after each acknowledgement. Never
        raises: a failure ends the connection through :meth:`_follow_acks`, which reconnects.
        """
        client = self._live
        if client is None or self._failure is not None:
            return
        try:
            outbox, window, acks, topic_of = self._outbox, self._window, self._acks, self._topic_of
            last_seq = outbox.last_seq
            wanted = window.wanted(last_seq)
            records = () if wanted is None else outbox.undelivered(after_seq=wanted[0], limit=wanted[1])
            sent = False
            for send in window.sends(records, last_seq):
                acks[send.ticket] = client.publish_now(topic_of[send.topic], send.payload, retain=send.retain)
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
            raise MqttError(f"no PUBACK within {self._timeout:g} s") from None

    async def _follow_acks(self) -> None:
        """Wait for the PUBACKs in order, mark the acknowledged events delivered, send more.

        Returns when closing and drained (or given up); raises on a failure or a PUBACK that
        does not come within ``timeout`` (the connection is then dropped and made again).
        """
        window, acks = self._window, self._acks
        while True:
            if self._failure is not None:
                raise self._failure
            if not window.in_flight:
                self._send()
            oldest = window.oldest
            if oldest is None:
                if self._closing and (self._abandon or self._idle()):
                    return
                self._progress.set()
                self._wake.clear()
                await self._wake.wait()
                continue
            if self._abandon:
                return
            # Every ticket in flight has its PUBACK event: a publish that failed set _failure (checked above).
            await self._puback(acks[oldest])
            delivered = window.delivered_upto
            while (ticket := window.oldest) is not None and (acked := acks.get(ticket)) is not None and acked.is_set():
                del acks[ticket]
                self.published += window.acknowledge(ticket)
            if window.delivered_upto > delivered:
                self._outbox.mark_delivered(window.delivered_upto)
            self._progress.set()
            self._send()

    async def _read_commands(self, client: MqttClient) -> None:
        topics = self._topics
        async for message in client.messages:
            topic = message.topic
            command = topics.command(topic)
            if command is None:
                continue  # its own subtree's other topics (a table reads them all), or a broker's stray retained
            if message.retain:
                log.warning("ignoring retained command on %s (commands must not be retained)", topic)
                continue
            await self._answer(client, command, message.payload)

    async def _answer(self, client: MqttClient, command: CommandTopic, payload: bytes) -> None:
        assert self._on_command is not None
        try:
            result = await self._on_command(command, payload)
        except Exception:
            log.exception("command %s failed", command.verb[:64])
            result = refused(command.verb, "internal error while handling the command")
        await client.publish(self._topics.result(command), _result_payload(result), qos=1)


class MemoryPublisher:
    """A :class:`Publisher` for tests and benches: 'publishes' into a list, acknowledges at once."""

    def __init__(self, outbox: Outbox, *, table_id: str = "t01", prefix: str = "tables") -> None:
        self._outbox = outbox
        self.root = topic_root(prefix, table_id)
        self._topics = Topics.under(self.root)
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
            self._put(self._topics.events, row.body.encode(), False)
            last = row.seq
        if last:
            self._outbox.mark_delivered(last)

    def publish_state(self, seq: int, state: Json) -> None:
        self.notify()
        if self._running:
            self._put(self._topics.state, json_payload(state), True)

    def publish_alarms(self, alarms: Json) -> None:
        if self._running:
            self._put(self._topics.alarms, json_payload(alarms), True)

    def publish_history(self, history: Json) -> None:
        self.notify()
        if self._running:
            self._put(self._topics.history, json_payload(history), True)

    def publish_analytics(self, analytics: Json) -> None:
        self.notify()
        if self._running:
            self._put(self._topics.analytics, json_payload(analytics), True)

    def publish_rating(self, rating: Json) -> None:
        if self._running:
            self._put(self._topics.ratings, json_payload(rating), False)

    def publish_open_ratings(self, ratings: Json) -> None:
        if self._running:
            self._put(self._topics.ratings_open, json_payload(ratings), True)

    @property
    def connected(self) -> bool:
        return self._running

    async def start(self) -> None:
        self._running = True
        self._put(self._topics.status, b"online", True)
        self.notify()

    async def close(self, timeout: float = 5.0) -> None:
        if self._running:
            self.notify()
            self._put(self._topics.status, b"offline", True)
        self._running = False

    def events(self) -> list[dict[str, Any]]:
        """Every ``events`` body published so far, decoded."""
        return [json.loads(p) for t, p, _ in self.messages if t.endswith("/events")]
