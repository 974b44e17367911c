"""``tablectl recorder``: every table's published record into the central database, acknowledged only once stored.

How it works
------------
The recorder holds one persistent MQTT session (``clean_session`` false, client id = its user name,
``recorder``) on a pit's Mosquitto or on any node of the floor's NATS cluster, subscribed to every table's
``events``, ``ratings`` and ``ratings/open`` (QoS 1) and ``state`` (QoS 0: only the newest matters, and its
retained copy comes with each subscription). While it is away the broker keeps the QoS 1 messages for the
session; when it comes back they come first.

Messages are written through :class:`controller.recorder.store.RecorderStore`, what came since the last
write in one transaction (``store.batch()``: one commit for many, since commits bound a catch-up), on one
worker thread, so the event loop keeps the connection alive while the database works; each PUBACK goes to
the broker only after that commit (:class:`controller.mqtt.client.MqttClient`, ``manual_acks``), in the
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
import ssl
import time
from collections import Counter, deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Final, TypeVar

from paho.mqtt.reasoncodes import ReasonCode

from controller.cancelling import cancel_and_wait
from controller.floor.nats_client import NatsError
from controller.mqtt.addresses import BrokerAddress, tls_context
from controller.mqtt.client import Message, MqttClient, MqttError
from controller.mqtt.failover import Failover
from controller.mqtt.options import BrokerOptions
from controller.recorder.backfill import StreamSource
from controller.recorder.board import DEFAULT_INTERVAL, Board
from controller.recorder.intake import RECORDER_LEVEL, EventIn, RatingsIn, StateIn, Unreadable, parse, subscriptions
from controller.recorder.store import BadRecord, Position, RecorderStore, StoreUnavailable, open_store, redact

__all__ = ["RECORDER_USER", "Recorder", "RecorderOptions", "Tally", "start_recorder"]

log = logging.getLogger("controller.recorder")
_paho_log = logging.getLogger("controller.recorder.paho")

#: messages written per trip to the database thread (each still its own transaction)
_BATCH: Final = 256
T = TypeVar("T")


#: the recorder's user name on the broker when its options name none (its client id too: one session, its own)
RECORDER_USER: Final = "recorder"


@dataclass(frozen=True)
class RecorderOptions:
    """Where the recorder reads (``broker``: the brokers, tried in order, and how to reach them; its user name
    :data:`RECORDER_USER` when none is given) and writes (``db``: a path or ``postgresql://``)."""

    broker: BrokerOptions
    db: str = "recorder.db"
    prefix: str = "tables"
    #: at most one position per table this often (seconds)
    interval: float = DEFAULT_INTERVAL
    #: longest wait between two tries of a database that cannot be reached (seconds)
    store_retry_max: float = 2.0
    #: the floor's ``TABLES`` stream, where a gap is filled from (None: gaps wait for the table's own events)
    stream: StreamSource | None = None
    #: a gap is looked for in the stream once it is this old, then again this often while it stays (seconds)
    fill_after: float = 2.0

    def __post_init__(self) -> None:
        if self.broker.username is None:
            object.__setattr__(self, "broker", replace(self.broker, username=RECORDER_USER))


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
    #: events written from the floor's stream (gaps filled)
    filled: int = 0


@dataclass
class _Written:
    """What one transaction wrote, applied to the tally and the board only once it committed."""

    events: Counter[str] = field(default_factory=Counter)
    states: int = 0
    ratings: int = 0
    conflicts: list[tuple[str, int, str]] = field(default_factory=list)
    #: the tables that started a new record (a new journal on purpose), with the seq it begins at
    new_journals: list[tuple[str, int]] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    #: each table written, and whether its gaps may have changed
    touched: dict[str, bool] = field(default_factory=dict)
    #: each table written, with its gaps when they may have changed (else None)
    gaps: dict[str, list[tuple[int, int]] | None] = field(default_factory=dict)


@dataclass
class _Item:
    """One record to write, in arrival order: what it carries (None: nothing to write, only acknowledge) and
    the message to acknowledge once committed (None: nothing to acknowledge, a record read from the stream)."""

    message: Message | None
    record: EventIn | StateIn | RatingsIn | None


class Recorder:
    """The central recorder: :meth:`run` until :meth:`stop`."""

    def __init__(self, options: RecorderOptions, *, clock: Callable[[], float] = time.time) -> None:
        self.options = options
        self.addresses: tuple[BrokerAddress, ...] = options.broker.addresses
        self._shown = options.broker.shown
        self._clock = clock
        #: which broker is in use or tried next, and when to try it (sans-I/O)
        self._failover = Failover(len(self.addresses), backoff_min=options.broker.backoff_min,
                                  backoff_max=options.broker.backoff_max)
        self._stop = asyncio.Event()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="recorder-store")
        self._store: RecorderStore | None = None
        self._board = Board(interval=options.interval)
        self._board_changed = asyncio.Event()
        self._known: set[str] = set()
        self.tally = Tally()
        #: the gaps looked for in the stream: when last, and those it was found not to hold (warned once)
        self._gaps_tried: dict[tuple[str, int, int], float] = {}
        self._gaps_absent: set[tuple[str, int, int]] = set()
        #: set once the store is open and the first connection subscribed
        self.ready = asyncio.Event()
        self.connected = False

    # -- public ----------------------------------------------------------------------------------------

    @property
    def broker_url(self) -> str:
        """The broker in use (or tried next), its password hidden."""
        return self._shown[self._failover.current]

    async def wait_recorded(self, lasts: dict[str, int], *, timeout: float) -> bool:
        """Wait until the database holds each table's events up to its ``seq`` in ``lasts`` (True), or
        ``timeout`` seconds (False)."""
        store = self._store
        if store is None:
            return False

        def behind() -> bool:
            for table_id, last in lasts.items():
                p = store.position(table_id)
                if last > (p.seq if p is not None else 0):
                    return True
            return False

        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            with contextlib.suppress(StoreUnavailable):
                if not await self._in_thread(behind):
                    return True
            if loop.time() > deadline:
                return False
            await asyncio.sleep(0.1)

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
            filler = asyncio.create_task(self._fill_gaps()) if self.options.stream is not None else None
            try:
                await self._broker_loop()
            finally:
                if filler is not None:
                    await cancel_and_wait((filler,))
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

    def _make_client(self) -> MqttClient:
        address = self.addresses[self._failover.current]
        o = self.options.broker
        return MqttClient(
            address.host, address.port,
            username=address.username or o.username,
            password=address.password if address.password is not None else o.password,
            identifier=address.username or o.username or RECORDER_USER,  # the client id is the user name: its session
            clean_session=False,
            transport=address.transport,
            websocket_path=address.path,
            keepalive=o.keepalive,
            timeout=o.timeout,
            tls_context=tls_context(address.tls, o.tls_ca, None, None),
            manual_acks=True,  # each PUBACK only once the message is stored
            logger=_paho_log,
        )

    async def _broker_loop(self) -> None:
        failover = self._failover
        while not self._stop.is_set():
            try:
                async with self._make_client() as client:
                    self.connected = True
                    self.tally.connections += 1
                    failover.connected()
                    log.info("connected to %s as %s", self.broker_url, self.options.broker.username)
                    await self._session(client)
                    return  # stopped: clean disconnect in __aexit__
            except (MqttError, OSError, ssl.SSLError) as exc:
                if failover.failed():  # one line per outage
                    log.warning("broker %s not reachable (%s): trying the others", self.broker_url, exc)
            finally:
                self.connected = False
            if self._stop.is_set():
                return
            retry = failover.ended()  # the next broker at once; a round of failures waits
            if retry.wait is not None:
                await self._pause(retry.wait)

    async def _session(self, client: MqttClient) -> None:
        """One connection: subscribe, then read, write and publish until it is lost (raises) or stopped."""
        client.tune_socket()
        for topic, qos in subscriptions(self.options.prefix):
            granted = await client.subscribe(topic, qos=qos)
            if any((g.value if isinstance(g, ReasonCode) else g) >= 0x80 for g in granted):
                raise MqttError(f"subscription to {topic} refused")
        if not self.ready.is_set():
            log.info("subscribed to every table's events, state and ratings under %s/", self.options.prefix)
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
            raise MqttError("connection closed")
        finally:
            await cancel_and_wait(tasks)

    async def _read(self, client: MqttClient, inbox: deque[_Item], states: dict[str, StateIn],
                    arrived: asyncio.Event) -> None:
        prefix = self.options.prefix
        async for message in client.messages:
            try:
                record = parse(prefix, message.topic, message.payload)
            except Unreadable as exc:
                log.warning("dropped: %s", exc)
                self.tally.dropped += 1
                record = None
            if isinstance(record, StateIn) and message.qos == 0:
                states[record.table_id] = record  # only the newest waits
            else:
                inbox.append(_Item(message, record))
            arrived.set()

    async def _write(self, client: MqttClient, inbox: deque[_Item], states: dict[str, StateIn],
                     arrived: asyncio.Event) -> None:
        """Write what came, in order, a batch per transaction; acknowledge each message once it is committed."""
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
            written = await self._committed(functools.partial(self._store_batch, batch, pending, gapped))
            if isinstance(written, _Written):
                for item in batch:
                    if item.message is not None:
                        client.ack(item.message)
                        self.tally.acked += 1
                self._after_commit(written)
                if outage:
                    log.info("database %s reachable again: writing", redact(self.options.db))
                    outage = False
                delay = 0.1
                continue
            if self._stop.is_set():
                return  # nothing of the batch committed or acknowledged: the broker keeps it for the session
            # the database went away: the batch waits, unacknowledged, in order
            inbox.extendleft(reversed(batch))
            for s in pending:
                states.setdefault(s.table_id, s)
            if not outage:
                self.tally.store_outages += 1
                log.warning("database %s not reachable (%s): %d message(s) wait unacknowledged, retrying",
                            redact(self.options.db), written, len(inbox))
                outage = True
            await self._pause(delay)
            delay = min(self.options.store_retry_max, delay * 2)

    async def _committed(self, job: Callable[[], _Written | StoreUnavailable]) -> _Written | StoreUnavailable:
        """Run a write on the database thread. Cancelled (the connection lost), the write still ends there: what
        it committed is then applied to the board (alarms, positions) when it does, never acknowledged."""
        future = asyncio.ensure_future(self._in_thread(job))
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            def apply(done: asyncio.Future[_Written | StoreUnavailable]) -> None:
                if done.cancelled() or done.exception() is not None:
                    return
                result = done.result()
                if isinstance(result, _Written):
                    self._after_commit(result)

            future.add_done_callback(apply)
            raise

    def _store_batch(self, batch: list[_Item], states: list[StateIn], gapped: frozenset[str]
                     ) -> _Written | StoreUnavailable:
        """On the database thread: ``batch`` in order, then ``states``, in one transaction (all or nothing).
        ``gapped``: the tables with gaps before. Returns what was written, or why nothing was."""
        store = self._store
        assert store is not None
        written = _Written()
        tables = {item.record.table_id for item in batch if isinstance(item.record, EventIn | StateIn)}
        try:
            with store.batch(tables | {s.table_id for s in states}):
                for item in batch:
                    if item.record is not None:
                        self._store_one(store, item.record, written, gapped)
                for state in states:
                    self._store_one(store, state, written, gapped)
                for table_id, gaps_may_change in written.touched.items():
                    written.gaps[table_id] = store.gaps(table_id) if gaps_may_change else None
        except StoreUnavailable as exc:
            return exc
        return written

    @staticmethod
    def _store_one(store: RecorderStore, record: EventIn | StateIn | RatingsIn, written: _Written,
                   gapped: frozenset[str]) -> None:
        """Write one record (on the database thread); a record the store refuses is noted and skipped."""
        t = record.table_id
        try:
            if isinstance(record, EventIn):
                outcome = store.add_event(t, record.seq, record.body)
                written.events[outcome] += 1
                if outcome == "conflict":
                    written.conflicts.append((t, record.seq, "event"))
                if outcome == "new_journal":  # the conflicts before it, in this batch too, were the old record's
                    written.conflicts = [c for c in written.conflicts if c[0] != t]
                    written.new_journals.append((t, record.seq))
                # gaps change when something is held, or stored while the table had gaps, or a new record starts
                written.touched[t] = written.touched.get(t, False) or outcome in ("held", "new_journal") or (
                    outcome == "stored" and t in gapped)
            elif isinstance(record, StateIn):
                if store.note_state(t, record.seq, record.journal_id, record.head, record.pit) == "conflict":
                    written.conflicts.append((t, record.seq, "state head"))
                written.states += 1
                written.touched.setdefault(t, False)
            else:
                for body in record.bodies:
                    if store.add_rating(t, body) == "conflict":
                        rating_id = _rating_id(body)
                        written.conflicts.append((t, _rating_seq(rating_id), f"rating {rating_id}"))
                    written.ratings += 1
                written.touched.setdefault(t, False)
        except BadRecord as exc:
            written.refused.append(str(exc))

    def _after_commit(self, written: _Written) -> None:
        """Back on the loop, once committed: the tally, the log, positions due, the alarms up to date."""
        now = self._clock()
        tally = self.tally
        tally.stored += written.events["stored"]
        tally.repeats += written.events["repeat"]
        tally.held += written.events["held"]
        tally.conflicts += len(written.conflicts)
        tally.states += written.states
        tally.ratings += written.ratings
        tally.dropped += len(written.refused)
        for why in written.refused:
            log.warning("dropped: %s", why)
        for table_id, seq in written.new_journals:  # its old journal's alarms go with its old record
            log.info("%s: a new journal on purpose at seq %d: a new record, the old one kept (%s@<journal id>)",
                     table_id, seq, table_id)
            self._board.forget_conflicts(table_id)
        for table_id, seq, what in written.conflicts:
            log.warning("%s: a second, different %s at seq %d: the first is kept", table_id, what, seq)
            self._board.conflict(table_id, seq, what, now)
        for table_id, gaps in written.gaps.items():
            self._known.add(table_id)
            self._board.changed(table_id)
            if gaps is not None:
                self._board.set_gaps(table_id, gaps, now)
        if written.gaps or written.conflicts or written.new_journals:
            self._board_changed.set()

    # -- gaps filled from the floor's stream -------------------------------------------------------

    @property
    def gaps_noted(self) -> int:
        """How many gaps the gap filler holds notes on (when it last looked for each in the stream)."""
        return len(self._gaps_tried)

    async def _fill_gaps(self) -> None:
        """Every ``fill_after`` seconds, each gap at least that old is looked for in the ``TABLES`` stream and
        what it holds is written as if the table had sent it again (the store checks every body)."""
        source = self.options.stream
        assert source is not None
        tried, absent = self._gaps_tried, self._gaps_absent
        while not self._stop.is_set():
            await self._pause(self.options.fill_after)
            now = self._clock()
            alarms = self._board.alarms()
            still_open = {(a.table_id, a.from_seq, a.to_seq) for a in alarms if a.code == "recorder_gap"}
            for gone in tried.keys() - still_open:  # filled (or split by a fill): forgotten, months on end
                del tried[gone]
            absent.intersection_update(still_open)
            for alarm in alarms:
                key = (alarm.table_id, alarm.from_seq, alarm.to_seq)
                if alarm.code != "recorder_gap" or now - max(alarm.ts, tried.get(key, 0.0)) < self.options.fill_after:
                    continue
                tried[key] = now
                try:
                    found = await source.events(alarm.table_id, alarm.from_seq, alarm.to_seq)
                except NatsError as exc:
                    log.warning("%s: seqs %d to %d not read from the stream (%s)", alarm.table_id, alarm.from_seq,
                                alarm.to_seq, exc)
                    continue
                if not found:  # a warning the first time: the record stays incomplete unless the table sends them
                    (log.info if key in absent else log.warning)(
                        "%s: seqs %d to %d are not in the stream either (asked again every %g s)", alarm.table_id,
                        alarm.from_seq, alarm.to_seq, self.options.fill_after)
                    absent.add(key)
                    continue
                items = [_Item(None, EventIn(alarm.table_id, seq, body)) for seq, body in found]
                gapped = frozenset(t for t in self._known if self._board.has_gaps(t))
                written = await self._in_thread(functools.partial(self._store_batch, items, [], gapped))
                if isinstance(written, _Written):
                    self._after_commit(written)
                    log.info("%s: %d event(s) of seqs %d to %d filled from the stream", alarm.table_id,
                             written.events["stored"] + written.events["held"], alarm.from_seq, alarm.to_seq)
                    self.tally.filled += written.events["stored"] + written.events["held"]

    # -- positions and alarms ------------------------------------------------------------------------

    def _position_topic(self, table_id: str) -> str:
        return f"{self.options.prefix}/{RECORDER_LEVEL}/{table_id}"

    async def _publish(self, client: MqttClient) -> None:
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

    async def _publish_due(self, client: MqttClient, now: float) -> list[asyncio.Event]:
        """Publish what the board says is due; the PUBACK events of what was sent."""
        tables, alarms = self._board.due(now)
        store = self._store
        assert store is not None
        try:
            positions = await self._in_thread(functools.partial(_positions, store, tables))
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
            body = p.as_dict() | {"ts": ts}
            sent.append(client.publish_now(self._position_topic(p.table_id), json.dumps(body).encode(), retain=True))
            self.tally.positions += 1
        if alarms:
            body_alarms = [a.as_dict() for a in self._board.alarms()]
            sent.append(client.publish_now(f"{self.options.prefix}/{RECORDER_LEVEL}/alarms",
                                           json.dumps(body_alarms).encode(), retain=True))
        client.flush()
        return sent

    async def _flush_positions(self, client: MqttClient) -> None:
        """On stop: publish every position still due now, whatever the interval, and wait (briefly) for the
        broker to take them."""
        if not self._board.pending():
            return
        self._board.reconnected(())
        with contextlib.suppress(Exception):
            sent = await asyncio.wait_for(self._publish_due(client, asyncio.get_running_loop().time()), 5.0)
            await asyncio.wait_for(asyncio.gather(*(e.wait() for e in sent)), 5.0)


def _rating_id(body: str | bytes) -> str:
    """The ``rating_id`` of a rating body the store has read (so a JSON object with one)."""
    return str(json.loads(body)["rating_id"])


def _rating_seq(rating_id: str) -> int:
    """The seq a rating's id names (``t01-8509`` or ``t01-8509.3``: 8509), for its alarm; 0 when it names none."""
    digits = rating_id.rsplit("-", 1)[-1].split(".", 1)[0]
    return int(digits) if digits.isdigit() else 0


def _positions(store: RecorderStore, tables: Sequence[str]) -> list[Position]:
    """The positions of ``tables`` (on the database thread): one query for all, not one per table (a catch-up
    makes every table's position due every interval)."""
    wanted = set(tables)
    if len(wanted) <= 2:
        return [p for p in (store.position(t) for t in tables) if p is not None]
    return [Position(r.table_id, r.last_seq, r.journal_id, r.head_seq, r.head)
            for r in store.tables() if r.table_id in wanted]


async def start_recorder(options: RecorderOptions, *, timeout: float = 60.0) -> tuple[Recorder, asyncio.Task[None]]:
    """A recorder running in this event loop, returned once it is subscribed (its session exists, so nothing
    published from now on escapes it); stop it with ``recorder.stop()`` then await the task. Raises what made
    it end before that, or ``TimeoutError``."""
    recorder = Recorder(options)
    task = asyncio.create_task(recorder.run(), name="recorder")
    ready = asyncio.create_task(recorder.ready.wait())
    try:
        done, _ = await asyncio.wait((task, ready), timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        ready.cancel()
    if task in done:
        task.result()
        raise RuntimeError("the recorder stopped before it was subscribed")
    if not done:
        recorder.stop()
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(task, 10)
        raise TimeoutError(f"the recorder was not subscribed within {timeout:g} s")
    return recorder, task
