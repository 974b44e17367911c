"""The outbox's flow-control window, sans-I/O: what to publish next, what the broker has acknowledged.

No socket, no asyncio, no clock, no journal: the publisher tells an :class:`OutboxWindow` what
happened and asks it what to do, so every rule of the delivery guarantee (docs/mqtt.md) is here and
can be tested without a broker. The outbox records themselves stay in the journal; the window
only keeps their ``seq`` numbers, plus the retained payloads that live in memory only (``state``
snapshots, ``alarms``, ``history``, ``analytics``: the journal rebuilds them after a crash).

One connection, in the publisher's words::

    connection_made()                 the broker may have lost its retained messages: the newest
                                      state is queued again (unless one waits) and each retained
                                      payload is marked to go again
    resend_span(delivered_upto)       the acknowledged records to publish once more (a broker can
                                      acknowledge and still lose): read them, send batches(...)
    opened(delivered_upto)            sending starts again from the first unacknowledged record
    wanted(last_seq) -> (after, n)    read up to n records after ``after`` from the outbox, then
    sends(records, last_seq)          the publishes to make now, in order on the wire
    acknowledge(ticket)               a PUBACK came; the records acknowledged as a contiguous
                                      prefix are ``delivered_upto`` (mark them in the journal)
    connection_lost()                 what was in flight is forgotten: it goes again, in order,
                                      from ``delivered_upto`` after the next opened()
    refresh(names)                    the refresh timer's tick (:class:`RefreshTicks` says which are
                                      due): the newest payload of each topic named goes again, the
                                      same bytes, as after connection_made()

Order on the wire: records in ``seq`` order, each pending ``state`` right after the records it
reflects (a state follows the event whose ``seq`` it carries), and ``alarms``, ``history`` and
``analytics`` only once every record in the outbox has been sent. At most ``size`` publishes are
in flight when records are read: the window bounds how many records are read, while the states
and retained payloads due with them go along (as the publisher always did).

The retained refresh: a broker can acknowledge a retained message and fail to store it (a NATS cluster
losing its quorum: "unable to store retained message ... timeout"), leaving its copy older than the
table's for whoever subscribes later. The table cannot see that, so a retained topic that went a whole
refresh period without being published goes again: :meth:`OutboxWindow.refresh` queues the newest
payload once more (the same bytes: the same snapshot, ``seq`` and ``ts``), with the rules of any
other: a ``state`` never while a newer one waits, after the record it follows; ``alarms``,
``history`` and ``analytics`` once every record is sent. :class:`RefreshTicks` says which topics are due
from counters the table moves anyway, so nothing is added to a record's or a state's way out.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Final, Literal, NamedTuple, Protocol

__all__ = ["RETAINED", "Marks", "OutboxWindow", "Record", "RefreshTicks", "Send", "TopicName", "batches"]

#: The table's topics a window publishes on, by their short names (:class:`controller.contract.topics.Topics`).
TopicName = Literal["events", "state", "alarms", "history", "analytics"]
RetainedName = Literal["alarms", "history", "analytics"]
#: The retained payloads besides ``state``, in the order they go once the records are out.
RETAINED: Final[tuple[RetainedName, ...]] = ("alarms", "history", "analytics")


class Record(Protocol):
    """An outbox record as the journal gives it (:class:`controller.journal.outbox.OutboxRow`)."""

    @property
    def seq(self) -> int: ...

    @property
    def body(self) -> str: ...


@dataclass(frozen=True, slots=True)
class Send:
    """One QoS 1 publish to make now; ``ticket`` names it when its PUBACK comes (:meth:`OutboxWindow.acknowledge`)."""

    ticket: int
    topic: TopicName
    payload: bytes
    retain: bool
    seq: int | None = None  # a record's seq (``events`` only)


@dataclass(frozen=True, slots=True)
class Marks:
    """Counters of the in-memory payloads: states queued (or acknowledged), and each retained one's version."""

    states: int = 0
    alarms: int = 0
    history: int = 0
    analytics: int = 0

    def covers(self, other: Marks) -> bool:
        """Every counter here has reached ``other``'s: all that ``other`` counted is acknowledged."""
        return (self.states >= other.states and self.alarms >= other.alarms and self.history >= other.history
                and self.analytics >= other.analytics)


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

    def __len__(self) -> int:
        return len(self._items)

    def peek(self) -> _PendingState:
        return self._items[0]

    def pop(self) -> _PendingState:
        return self._items.popleft()

    def ensure_latest(self) -> None:
        """Re-queue the newest state (after a reconnect) unless it is already pending."""
        if self.latest is not None and not self._items:
            self._items.append(self.latest)


class _Retained:
    """The newest payload of one retained topic: replaced whole, sent when dirty, counted by version."""

    __slots__ = ("acked", "dirty", "payload", "version")

    def __init__(self) -> None:
        self.payload: bytes | None = None
        self.dirty = False
        self.version = 0  # payloads queued so far
        self.acked = 0  # the newest version the broker acknowledged


@dataclass(slots=True)
class _Flight:
    """A publish made and not yet acknowledged; ``mark`` is the record's seq, the state's serial
    or the retained payload's version, by ``topic``."""

    ticket: int
    topic: TopicName
    mark: int
    acked: bool = False


class OutboxWindow:
    """The QoS 1 flow-control window of one table's publisher (see the module's docstring).

    ``size`` bounds the records read while others are in flight, ``resend`` is how many
    acknowledged records go again at each connection, ``max_pending_states`` how many ``state``
    snapshots wait while the broker is away (older ones are dropped, the newest always survives).
    """

    def __init__(self, *, size: int = 64, resend: int = 64, max_pending_states: int = 512) -> None:
        self.size = max(1, size)
        self.resend = max(0, resend)
        self._states = _StateQueue(max_pending_states)
        self._states_acked = 0
        self._retained = {name: _Retained() for name in RETAINED}
        self._flights: deque[_Flight] = deque()  # sent, PUBACK awaited, in send order
        self._tickets = 0  # the last ticket given
        self._sent_upto = 0  # the last record seq handed out on this connection
        self._delivered_upto = 0  # the end of the contiguous acknowledged prefix of records
        self._open = False

    # -- what the table queues ------------------------------------------------------------------

    def queue_state(self, seq: int, body: bytes) -> None:
        """A ``state`` snapshot that follows the record ``seq``: sent right after it."""
        self._states.push(seq, body)

    def replace(self, name: RetainedName, payload: bytes) -> None:
        """The new ``alarms``, ``history`` or ``analytics``: only the newest goes, after the records."""
        slot = self._retained[name]
        slot.payload = payload
        slot.dirty = True
        slot.version += 1

    # -- the connection -------------------------------------------------------------------------

    def connection_made(self) -> None:
        """A new connection: its broker may have lost the retained messages, so they go again."""
        self._states.ensure_latest()
        for slot in self._retained.values():
            if slot.payload is not None:
                slot.dirty = True

    def resend_span(self, delivered_upto: int) -> tuple[int, int] | None:
        """The records ``(from_seq, to_seq)`` to publish once more on a new connection, or None.

        A broker can acknowledge a message and still lose it (one stopped while it held it for a
        subscriber, one restarted without persistence); a repeat is allowed, a gap is not, so the
        newest ``resend`` acknowledged records go again, in order, in :func:`batches` of ``size``.
        """
        if self.resend == 0 or delivered_upto == 0:
            return None
        return max(1, delivered_upto - self.resend + 1), delivered_upto

    def opened(self, delivered_upto: int) -> None:
        """Start sending on this connection from the record after ``delivered_upto``."""
        self._flights.clear()
        self._sent_upto = self._delivered_upto = delivered_upto
        self._open = True

    def refresh(self, names: Iterable[str]) -> None:
        """Publish the newest payload of each retained topic named again (``state``, ``alarms``, ``history``,
        ``analytics``; other names are not the window's and are passed over): the same bytes as before.

        The newest ``state`` is queued again unless a state is pending (the newest is then on its way, and
        an older one must never follow it), and goes right after the record it follows, as
        :meth:`connection_made` queues it; a retained payload goes once every record is sent, once even
        if it was replaced meanwhile (the newest). A topic the table never gave a payload stays unpublished.
        Nothing is counted as queued: :attr:`queued` stays as it was (it is the same snapshot).
        """
        wanted = set(names)
        if "state" in wanted:
            self._states.ensure_latest()
        for name, slot in self._retained.items():
            if name in wanted and slot.payload is not None:
                slot.dirty = True

    def connection_lost(self) -> None:
        """The connection is gone: nothing is in flight any more; the unacknowledged records go
        again from ``delivered_upto`` after the next :meth:`opened` (states and retained payloads
        sent but not acknowledged are not queued again: the newest of each is, by :meth:`connection_made`)."""
        self._flights.clear()
        self._open = False

    # -- sending --------------------------------------------------------------------------------

    def wanted(self, last_seq: int) -> tuple[int, int] | None:
        """``(after_seq, limit)``: the records to read from the outbox for :meth:`sends`, or None
        (the window is full, nothing new was committed, or the connection is not open)."""
        room = self.size - len(self._flights)
        if self._open and room > 0 and last_seq > self._sent_upto:
            return self._sent_upto, room
        return None

    def sends(self, records: Iterable[Record], last_seq: int) -> Iterator[Send]:
        """The publishes to make now, in order on the wire; ``records`` as :meth:`wanted` asked.

        Each :class:`Send` is in flight once it is yielded: make it before asking for the next.
        If making one fails, drop the connection (:meth:`connection_lost`); nothing is lost.
        """
        if not self._open:
            return
        states = self._states
        for row in records:
            while states and states.peek().seq < row.seq:
                yield self._send_state(states.pop())
            yield self._fly("events", row.body.encode(), row.seq, retain=False, seq=row.seq)
            self._sent_upto = row.seq
        while states and states.peek().seq <= self._sent_upto:
            yield self._send_state(states.pop())
        if self._sent_upto >= last_seq:
            for name, slot in self._retained.items():
                if slot.dirty and slot.payload is not None:
                    slot.dirty = False
                    yield self._fly(name, slot.payload, slot.version, retain=True)

    def _send_state(self, state: _PendingState) -> Send:
        return self._fly("state", state.body, state.serial, retain=True)

    def _fly(self, topic: TopicName, payload: bytes, mark: int, *, retain: bool, seq: int | None = None) -> Send:
        self._tickets += 1
        self._flights.append(_Flight(self._tickets, topic, mark))
        return Send(self._tickets, topic, payload, retain, seq)

    # -- acknowledgements -----------------------------------------------------------------------

    def acknowledge(self, ticket: int) -> int:
        """The PUBACK of ``ticket`` arrived; returns how many publishes that completed.

        A publish completes when it and every one sent before it are acknowledged, so an
        out-of-order PUBACK moves nothing until the ones before it come; ``delivered_upto``
        advances over the records of the contiguous acknowledged prefix only. A ticket of a
        connection that was lost since (or one already acknowledged) changes nothing.
        """
        flights = self._flights
        if not flights:
            return 0
        index = ticket - flights[0].ticket  # tickets in flight are consecutive
        if not 0 <= index < len(flights):
            return 0
        flights[index].acked = True
        done = 0
        while flights and flights[0].acked:
            flight = flights.popleft()
            done += 1
            if flight.topic == "events":
                self._delivered_upto = flight.mark
            elif flight.topic == "state":
                self._states_acked = max(self._states_acked, flight.mark)
            else:
                slot = self._retained[flight.topic]
                slot.acked = max(slot.acked, flight.mark)
        return done

    # -- what the publisher reads ---------------------------------------------------------------

    @property
    def delivered_upto(self) -> int:
        """Every record up to this ``seq`` is acknowledged (what the journal may mark delivered)."""
        return self._delivered_upto

    @property
    def sent_upto(self) -> int:
        """The last record ``seq`` handed out on this connection."""
        return self._sent_upto

    @property
    def in_flight(self) -> int:
        """Publishes made and not yet completed (see :meth:`acknowledge`)."""
        return len(self._flights)

    @property
    def oldest(self) -> int | None:
        """The ticket of the oldest publish in flight: the PUBACK that completes the next ones."""
        return self._flights[0].ticket if self._flights else None

    @property
    def pending_states(self) -> int:
        """``state`` snapshots waiting to be sent."""
        return len(self._states)

    @property
    def queued(self) -> Marks:
        """How many states were queued, and each retained payload's version, so far."""
        r = self._retained
        return Marks(self._states.pushed, r["alarms"].version, r["history"].version, r["analytics"].version)

    @property
    def acked(self) -> Marks:
        """The newest state and retained versions the broker acknowledged."""
        r = self._retained
        return Marks(self._states_acked, r["alarms"].acked, r["history"].acked, r["analytics"].acked)

    def idle(self) -> bool:
        """Nothing in memory waits to be sent or acknowledged (the records are the journal's to say)."""
        return not self._states and not self._flights and not any(s.dirty for s in self._retained.values())


class RefreshTicks:
    """Which retained topics went a whole refresh period unpublished: the refresh timer's bookkeeping, sans-I/O.

    The publisher's timer calls :meth:`tick` every ``period / ticks`` with a counter per topic that moves
    whenever the topic gets a new payload (:attr:`OutboxWindow.queued`: the states queued, each retained
    payload's version); a topic whose counter stood still over ``ticks`` ticks in a row is due. A topic is
    then refreshed between ``period`` and ``period * (ticks + 1) / ticks`` after it was last published, and
    every ``period`` while nothing new comes; one published at every tick never is. A refresh does not move
    a counter. Reading counters, not clocks, keeps the records' and states' way out as it was: nothing is
    noted per publish.
    """

    def __init__(self, ticks: int = 2) -> None:
        self.ticks = max(1, ticks)
        self._seen: dict[str, tuple[int, int]] = {}  # topic -> (its counter at the last tick, quiet ticks since)

    def tick(self, marks: Mapping[str, int]) -> list[str]:
        """The topics of ``marks`` due for a refresh now, in the order given."""
        due: list[str] = []
        seen = self._seen
        for name, mark in marks.items():
            last = seen.get(name)
            quiet = 0 if last is None or last[0] != mark else last[1] + 1
            if quiet >= self.ticks:
                due.append(name)
                quiet = 0
            seen[name] = (mark, quiet)
        return due


def batches(rows: Iterable[Record], size: int) -> Iterator[list[Record]]:
    """``rows`` in lists of ``size`` (the last may be shorter): a resend waits for each batch's PUBACKs."""
    batch: list[Record] = []
    for row in rows:
        batch.append(row)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch
