"""``tablectl recorder``: every table's published record into the central database, acknowledged only once stored.

How it works
------------
The recorder holds one persistent MQTT session (``clean_session`` false, client id = its user name,
``recorder``) on a pit's Mosquitto or on any node of the floor's NATS cluster, subscribed to every table's
``events``, ``ratings`` and ``ratings/open`` (QoS 1) and ``state`` (QoS 0: only the newest matters, and its
retained copy comes with each subscription). While it is away the broker keeps the QoS 1 messages for the
session; when it comes back they come first.

Each message is written through :class:`controller.recorder.store.RecorderStore` (one transaction each,
on one worker thread, so the event loop keeps the connection alive while the database works) and its
PUBACK goes to the broker only after that commit (:class:`controller.recorder.client.AckingClient`), in the
order the messages came. A recorder killed at any moment loses nothing: what it had not acknowledged comes
again, and the store drops a repeat after checking it is the same body. A database that cannot be reached
(PostgreSQL restarting) is retried with a backoff while the messages wait unacknowledged; the broker sends
no more than its in-flight window meanwhile. States wait as the newest per table (:mod:`intake`).

After each commit the table's position is due on ``<prefix>/recorder/<table_id>`` (retained, QoS 1), at
most every ``interval`` seconds per table, and the alarms on ``<prefix>/recorder/alarms`` when they change
(:class:`controller.recorder.board.Board`); a new connection publishes all of them again.

Brokers are tried in the order given; a lost connection moves to the next at once, a round of failures
waits (exponential backoff with jitter) and starts again, one log line per outage. :meth:`Recorder.stop`
(SIGTERM, Ctrl-C) finishes the commit in hand, acknowledges it, publishes the positions due and
disconnects cleanly.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import random
import ssl
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, TypeVar

import aiomqtt
from paho.mqtt.reasoncodes import ReasonCode

from controller.mqtt.addresses import BrokerAddress, parse_broker_url, redact_url, tls_context
from controller.mqtt.session import ExpectedPipelining
from controller.recorder.board import DEFAULT_INTERVAL, Board
from controller.recorder.client import AckingClient
from controller.recorder.intake import RECORDER_LEVEL, EventIn, RatingsIn, StateIn, Unreadable, parse, subscriptions
from controller.recorder.store import BadRecord, RecorderStore, StoreUnavailable, open_store, redact

__all__ = ["Recorder", "RecorderOptions", "Tally"]

log = logging.getLogger("controller.recorder")
_paho_log = logging.getLogger("controller.recorder.paho")
_paho_log.addFilter(ExpectedPipelining())

#: messages written per trip to the database thread (each still its own transaction)
_BATCH: Final = 256
T = TypeVar("T")


@dataclass(frozen=True)
class RecorderOptions:
    """Where the recorder reads (``brokers``, tried in order) and writes (``db``: a path or ``postgresql://``)."""

    brokers: Sequence[str]
    db: str = "recorder.db"
    prefix: str = "tables"
    username: str = "recorder"
    password: str | None = field(default=None, repr=False)
    tls_ca: str | Path | None = None
    keepalive: int = 15
    timeout: float = 10.0
    backoff_min: float = 0.05
    backoff_max: float = 5.0
    #: at most one position per table this often (seconds)
    interval: float = DEFAULT_INTERVAL
    #: longest wait between two tries of a database that cannot be reached (seconds)
    store_retry_max: float = 2.0


@dataclass
class Tally:
    """What the recorder did since it started (for its log, the tests and the benchmarks)."""

    stored: int = 0
    repeats: int = 0
    held: int = 0
    conflicts: int = 0
    states: int = 0
    ratings: int = 0
    #: messages that could not be placed (no seq, not JSON, refused by the store), acknowledged and logged
    dropped: int = 0
    acked: int = 0
    connections: int = 0
    store_outages: int = 0
    positions: int = 0


@dataclass
class _Item:
    """A message taken in: what it carries (None: skip it) and whether it waits for a PUBACK."""

    message: aiomqtt.Message | None
    record: EventIn | StateIn | RatingsIn | None


class Recorder:
    """The central recorder: :meth:`run` until :meth:`stop`."""

    def __init__(self, options: RecorderOptions, *, clock: Callable[[], float] = time.time) -> None:
        if not options.brokers:
            raise ValueError("no broker given")
        self.options = options
        self.addresses: tuple[BrokerAddress, ...] = tuple(parse_broker_url(u) for u in options.brokers)
        if len({a.tls for a in self.addresses}) > 1:
            raise ValueError("brokers: all plain or all TLS (mqtts://, wss://), not a mix")
        self._shown = tuple(redact_url(u) for u in options.brokers)
        self._clock = clock
        self._current = 0
        self._stop = asyncio.Event()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="recorder-store")
        self._store: RecorderStore | None = None
        self._board = Board(interval=options.interval)
        self._board_changed = asyncio.Event()
        self._known: set[str] = set()
        #: conflicts found on the database thread, raised as alarms back on the loop
        self._conflicts: list[tuple[str, int, str]] = []
        self.tally = Tally()
        #: set once the store is open and the first connection subscribed
        self.ready = asyncio.Event()
        self.connected = False

    # -- public ----------------------------------------------------------------------------------------

    @property
    def broker_url(self) -> str:
        """The broker in use (or tried next), its password hidden."""
        return self._shown[self._current]

    def stop(self) -> None:
        """Finish the commit in hand, acknowledge it, publish what is due, disconnect: :meth:`run` returns."""
        self._stop.set()

    async def run(self) -> None:
        """Open the database (retrying one that cannot be reached), then record until :meth:`stop`.

        Raises :class:`controller.recorder.store.StoreRefused` for a database that is not a recorder's and
        :class:`controller.recorder.store.StoreError` for a database that fails otherwise."""
        try:
            if not await self._open_store():
                return
            await self._broker_loop()
        finally:
            store, self._store = self._store, None
            if store is not None:
                with contextlib.suppress(Exception):
                    await self._in_thread(store.close)
            self._executor.shutdown(wait=True)

    # -- the database, on its own thread --------------------------------------------------------------

    async def _in_thread(self, fn: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn)

    async def _open_store(self) -> bool:
        """Open the store and load what it holds (positions due, gaps as alarms); False when stopped first."""
        delay = 0.1
        logged = False
        while not self._stop.is_set():
            try:
                store = await self._in_thread(lambda: open_store(self.options.db))
                break
            except StoreUnavailable as exc:
                if not logged:
                    log.warning("database %s not reachable (%s): retrying", redact(self.options.db), exc)
                    logged = True
                await self._pause(delay)
                delay = min(self.options.store_retry_max, delay * 2)
        else:
            return False
        self._store = store

        def known() -> dict[str, list[tuple[int, int]]]:
            return {t.table_id: store.gaps(t.table_id) for t in store.tables()}

        now = self._clock()
        for table_id, gaps in (await self._retrying(known)).items():
            self._known.add(table_id)
            self._board.set_gaps(table_id, gaps, now)
        log.info("recording into %s (%d table(s) known)", store.where, len(self._known))
        return True

    async def _retrying(self, fn: Callable[[], T]) -> T:
        """``fn`` on the database thread, tried again while the database cannot be reached."""
        delay = 0.1
        while True:
            try:
                return await self._in_thread(fn)
            except StoreUnavailable as exc:
                log.debug("database not reachable (%s): retrying", exc)
                await self._pause(delay)
                delay = min(self.options.store_retry_max, delay * 2)

    async def _pause(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stop.wait(), seconds)

    # -- brokers -------------------------------------------------------------------------------------

    def _make_client(self) -> AckingClient:
        address = self.addresses[self._current]
        o = self.options
        return AckingClient(
            address.host, address.port,
            username=address.username or o.username,
            password=address.password if address.password is not None else o.password,
            identifier=address.username or o.username,  # the client id is the user name: one session, its own
            clean_session=False,
            transport=address.transport,
            websocket_path=address.path,
            keepalive=o.keepalive,
            timeout=o.timeout,
            tls_context=tls_context(address.tls, o.tls_ca, None, None),
            logger=_paho_log,
        )

    async def _broker_loop(self) -> None:
        delay = self.options.backoff_min
        outage_logged = False
        round_start = self._current
        while not self._stop.is_set():
            was_connected = False
            try:
                async with self._make_client() as client:
                    self.connected = was_connected = True
                    self.tally.connections += 1
                    delay = self.options.backoff_min
                    outage_logged = False
                    log.info("connected to %s as %s", self.broker_url, self.options.username)
                    await self._session(client)
                    return  # stopped: clean disconnect in __aexit__
            except (aiomqtt.MqttError, OSError, ssl.SSLError) as exc:
                if not outage_logged:
                    log.warning("broker %s not reachable (%s): trying the others", self.broker_url, exc)
                    outage_logged = True
            finally:
                self.connected = False
            if self._stop.is_set():
                return
            if len(self.addresses) > 1:
                if was_connected:
                    round_start = self._current
                self._current = (self._current + 1) % len(self.addresses)
                if self._current != round_start:
                    continue
            await self._pause(delay * (0.5 + random.random()))
            delay = min(self.options.backoff_max, delay * 2)

    async def _session(self, client: AckingClient) -> None:
        """One connection: subscribe, then read, write and publish until it is lost (raises) or stopped."""
        client.tune_socket()
        for topic, qos in subscriptions(self.options.prefix):
            granted = await client.subscribe(topic, qos=qos)
            if any((g.value if isinstance(g, ReasonCode) else g) >= 0x80 for g in granted):
                raise aiomqtt.MqttError(f"subscription to {topic} refused")
        inbox: deque[_Item] = deque()
        states: dict[str, StateIn] = {}
        arrived = asyncio.Event()
        self._board.reconnected(self._known)
        self._board_changed.set()
        self.ready.set()
        reader = asyncio.create_task(self._read(client, inbox, states, arrived))
        writer = asyncio.create_task(self._write(client, inbox, states, arrived))
        publisher = asyncio.create_task(self._publish(client))
        stopping = asyncio.create_task(self._stop.wait())
        tasks = (reader, writer, publisher, stopping)
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            if stopping in done:
                reader.cancel()
                inbox.clear()  # not acknowledged: the broker keeps them for the session
                states.clear()
                arrived.set()
                await writer  # the commit in hand, acknowledged
                await self._flush_positions(client)
                return
            for task in done:
                task.result()  # raises why the connection ended
            raise aiomqtt.MqttError("connection closed")
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _read(self, client: AckingClient, inbox: deque[_Item], states: dict[str, StateIn],
                    arrived: asyncio.Event) -> None:
        prefix = self.options.prefix
        async for message in client.messages:
            payload = message.payload if isinstance(message.payload, bytes | bytearray) else b""
            try:
                record = parse(prefix, message.topic.value, bytes(payload))
            except Unreadable as exc:
                log.warning("dropped: %s", exc)
                self.tally.dropped += 1
                record = None
            if isinstance(record, StateIn) and message.qos == 0:
                states[record.table_id] = record  # only the newest waits
            else:
                inbox.append(_Item(message, record))
            arrived.set()

    async def _write(self, client: AckingClient, inbox: deque[_Item], states: dict[str, StateIn],
                     arrived: asyncio.Event) -> None:
        """Write what came, in order, a batch per trip to the database thread; acknowledge each once stored."""
        delay = 0.1
        outage = False
        while True:
            if not inbox and not states:
                if self._stop.is_set():
                    return
                arrived.clear()
                await arrived.wait()
                continue
            batch = [inbox.popleft() for _ in range(min(len(inbox), _BATCH))]
            pending = list(states.values())
            states.clear()
            gapped = frozenset(t for t in self._known if self._board.has_gaps(t))
            done, checked, error = await self._in_thread(functools.partial(self._store_batch, batch, pending, gapped))
            for item in batch[:done]:
                if item.message is not None:
                    client.ack(item.message)
                    self.tally.acked += 1
            self._after_commit(checked)
            if error is None:
                if outage:
                    log.info("database %s reachable again: writing", redact(self.options.db))
                    outage = False
                delay = 0.1
                continue
            if self._stop.is_set():
                return  # what was not stored stays unacknowledged: the broker keeps it for the session
            # the database went away: what was not stored waits, unacknowledged, in order
            for item in reversed(batch[done:]):
                inbox.appendleft(item)
            for s in pending:
                states.setdefault(s.table_id, s)
            if not outage:
                self.tally.store_outages += 1
                log.warning("database %s not reachable (%s): %d message(s) wait unacknowledged, retrying",
                            redact(self.options.db), error, len(inbox))
                outage = True
            await self._pause(delay)
            delay = min(self.options.store_retry_max, delay * 2)

    def _store_batch(self, batch: list[_Item], states: list[StateIn], gapped: frozenset[str]
                     ) -> tuple[int, dict[str, list[tuple[int, int]] | None], StoreUnavailable | None]:
        """On the database thread: write ``batch`` in order, then ``states``. Returns how many of ``batch`` are
        stored (or dropped), each touched table with its gaps when they may have changed (else None), and the
        :class:`StoreUnavailable` that stopped it. ``gapped``: the tables with gaps before."""
        store = self._store
        assert store is not None
        touched: dict[str, bool] = {}
        done = 0
        error: StoreUnavailable | None = None
        try:
            for item in batch:
                record = item.record
                if record is not None:
                    self._store_one(store, record, touched, gapped)
                done += 1
            for state in states:
                self._store_one(store, state, touched, gapped)
        except StoreUnavailable as exc:
            error = exc
        checked: dict[str, list[tuple[int, int]] | None] = {}
        for table_id, gaps_may_change in touched.items():
            checked[table_id] = None
            if gaps_may_change and error is None:
                with contextlib.suppress(StoreUnavailable):
                    checked[table_id] = store.gaps(table_id)
        return done, checked, error

    def _store_one(self, store: RecorderStore, record: EventIn | StateIn | RatingsIn,
                   touched: dict[str, bool], gapped: frozenset[str]) -> None:
        """Write one record (on the database thread); a record the store refuses is logged and skipped."""
        t = record.table_id
        try:
            if isinstance(record, EventIn):
                outcome = store.add_event(t, record.seq, record.body)
                self._count_event(t, record.seq, outcome)
                # gaps change when something is held, or stored while the table had gaps
                touched[t] = touched.get(t, False) or outcome == "held" or (
                    outcome == "stored" and t in gapped)
            elif isinstance(record, StateIn):
                head = store.note_state(t, record.seq, record.journal_id, record.head, record.pit)
                self.tally.states += 1
                if head == "conflict":
                    self.tally.conflicts += 1
                    log.warning("%s: a second, different chain head at seq %d: the first is kept", t, record.seq)
                    self._conflicts.append((t, record.seq, "state head"))
                touched.setdefault(t, False)
            else:
                for body in record.bodies:
                    store.add_rating(t, body)
                    self.tally.ratings += 1
                touched.setdefault(t, False)
        except BadRecord as exc:
            self.tally.dropped += 1
            log.warning("dropped: %s", exc)

    def _count_event(self, table_id: str, seq: int, outcome: str) -> None:
        if outcome == "stored":
            self.tally.stored += 1
        elif outcome == "repeat":
            self.tally.repeats += 1
        elif outcome == "held":
            self.tally.held += 1
        else:
            self.tally.conflicts += 1
            log.warning("%s: a second, different body at seq %d: the first is kept", table_id, seq)
            self._conflicts.append((table_id, seq, "event"))

    def _after_commit(self, checked: dict[str, list[tuple[int, int]] | None]) -> None:
        """Back on the loop: positions due for the tables written, the alarms brought up to date."""
        now = self._clock()
        conflicts, self._conflicts = self._conflicts, []
        for table_id, seq, what in conflicts:
            self._board.conflict(table_id, seq, what, now)
        for table_id, gaps in checked.items():
            self._known.add(table_id)
            self._board.changed(table_id)
            if gaps is not None:
                self._board.set_gaps(table_id, gaps, now)
        if checked or conflicts:
            self._board_changed.set()

    # -- positions and alarms ------------------------------------------------------------------------

    def _position_topic(self, table_id: str) -> str:
        return f"{self.options.prefix}/{RECORDER_LEVEL}/{table_id}"

    async def _publish(self, client: AckingClient) -> None:
        """Publish each due position and the alarms (retained, QoS 1), batched by the board."""
        loop = asyncio.get_running_loop()
        while True:
            wait = self._board.wait(loop.time())
            if wait is None or wait > 0:
                self._board_changed.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._board_changed.wait(), wait)
                continue
            await self._publish_due(client, loop.time())

    async def _publish_due(self, client: AckingClient, now: float) -> list[asyncio.Event]:
        """Publish what the board says is due; the PUBACK events of what was sent."""
        tables, alarms = self._board.due(now)
        store = self._store
        assert store is not None
        try:
            positions = await self._in_thread(lambda: [store.position(t) for t in tables])
        except StoreUnavailable:
            for t in tables:
                self._board.changed(t)  # again once the database is back
            if alarms:
                self._board.alarms_changed()
            await self._pause(0.5)
            return []
        ts = self._clock()
        sent = []
        for p in positions:
            if p is None:
                continue
            body = p.as_dict() | {"ts": ts}
            sent.append(client.publish_now(self._position_topic(p.table_id), json.dumps(body).encode(), retain=True))
            self.tally.positions += 1
        if alarms:
            body_alarms = [a.as_dict() for a in self._board.alarms()]
            sent.append(client.publish_now(f"{self.options.prefix}/{RECORDER_LEVEL}/alarms",
                                           json.dumps(body_alarms).encode(), retain=True))
        client.flush()
        return sent

    async def _flush_positions(self, client: AckingClient) -> None:
        """On stop: publish every position still due now, whatever the interval, and wait (briefly) for the
        broker to take them."""
        if not self._board.pending():
            return
        self._board.reconnected(())
        with contextlib.suppress(Exception):
            sent = await asyncio.wait_for(self._publish_due(client, asyncio.get_running_loop().time()), 5.0)
            await asyncio.wait_for(asyncio.gather(*(e.wait() for e in sent)), 5.0)
