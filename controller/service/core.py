"""The table service's core: the engine, its durable journal, and the publisher, in one place.

:meth:`TableCore.apply` is the only way an input reaches the engine:

1. the engine tries the event; a refusal raises :class:`GameError` and changes nothing
   (the engine checks before it changes anything), so nothing is journaled;
2. the input and the public records it produced are committed to the journal in one
   durable transaction, the records numbered with the table's next gapless ``seq``;
3. only then does anything leave the process: the publisher is woken to send the new
   records, the new ``state`` (its ``seq`` the last record's) and the alarms; device
   commands are returned to the caller.

A crash between 1 and 2 loses only an in-memory change whose effects never left, so after
a restart the journal and the world agree.

Every ``snapshot_every`` inputs (input ids that are multiples of it) the engine's state
(:func:`controller.game.snapshot.export_state`) is saved in the same commit as the input, and
only the newest two snapshots are kept. :meth:`TableCore.recover` rebuilds the engine from the
newest snapshot that restores, then replays only the inputs journaled after it (narration off:
their records are in the outbox already); with no usable snapshot (none yet, another profile or
engine version, a damaged one: logged as a warning) it replays every input from the start.

Time in phase: every ``state`` carries ``ts`` (when it was built, epoch seconds) and ``phase_since``
(the journaled ``ts`` of the input that moved the table into its current phase; before that, of the
first input). The engine has no clock, so the core keeps ``phase_since`` beside it: set in
:meth:`TableCore.apply`, rebuilt from the inputs' ``ts`` on replay, and saved in each snapshot next
to the engine's state (key :data:`PHASE_SINCE_KEY`), so a recovered table publishes the very value
the uninterrupted one would. A snapshot without it (written before it existed) is not usable and
recovery falls back as for any other. With no input journaled yet, ``phase_since`` is the state's ``ts``.

The dealer on duty's ``since`` (``state.dealer_on_duty``) is kept the same way: the journaled ``ts`` of the input
that made the engine's dealer on duty the one it is (a sign-in between rounds, or the settlement a relief waited
for), rebuilt on replay and saved beside the engine's state (:data:`DEALER_SINCE_KEY`; a snapshot without it was
saved before dealers were known, with none on duty). The table's ``require_dealer`` setting is journaled as an
input (:meth:`TableCore.dealer_binding`) whenever it differs from the journal's, so a replay refuses and takes
exactly the wagers the table did.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from controller.contract.alarms import alarm_kind
from controller.contract.topics import json_payload
from controller.game import events as ev
from controller.game.effects import AlarmCleared, AlarmRaised, Effect, Record
from controller.game.errors import GameError
from controller.game.rules import Rules, rules_digest, rules_to_json
from controller.game.snapshot import SnapshotError, export_state, restore_state, snapshot_rules
from controller.game.table import Table
from controller.game.view import TableView
from controller.journal import Journal, JournalError
from controller.mqtt.publisher import HistoryPublisher, Publisher, RatingsPublisher
from controller.ratings import Rating
from controller.records import RoundHistory
from controller.service.ratings import (
    OPEN_AFTER,
    RATING_INPUT,
    TableRatings,
    card_input,
    for_book,
    is_engine_input,
    public_card_body,
    rating_rows,
)

log = logging.getLogger("controller.service.core")

#: snapshots kept in the journal (the newest, and one to fall back on)
SNAPSHOTS_KEPT = 2
#: the key of a snapshot (beside the engine's ``format``, ``table``, ...) holding the core's ``phase_since``
PHASE_SINCE_KEY = "phase_since"
#: the key of a snapshot holding the core's ``dealer_since`` (absent from a snapshot saved before dealers: None)
DEALER_SINCE_KEY = "dealer_since"
#: the key of a journaled input, beside the engine event's fields, holding ``[load, read]``: the shoe's number
#: of the read the input came from (``docs/protocols.md``, "Card reads across a crash")
SHOE_READ_KEY = "shoe_read"
#: how far back from the journal's end :meth:`TableCore.recover` looks for the last shoe read
SHOE_READ_LOOKBACK = 100_000

#: the key of a journaled ``clock_jump`` alarm input, beside the engine event's fields, holding the table's time
#: minus the wall clock's from then on (controller/service/clock.py): a restart carries the table's time on with it
CLOCK_OFFSET_KEY = "clock_offset"
#: the keys the core journals beside an engine event's fields
_BESIDE = (SHOE_READ_KEY, CLOCK_OFFSET_KEY)

ShoeRead = tuple[int, int]
#: meta (bookkeeping, only a hint): the id of the last ``rules_changed`` input, so a start finds it at once
RULES_INPUT_META = "rules_input"
#: meta (bookkeeping, signed: Journal.signed_mark): the last input id whose ended ratings the broker acknowledged
#: before a clean stop; one that does not check counts as none (every ended rating is sent again)
RATINGS_SENT_META = "ratings_sent"


def engine_input(journaled: dict[str, Any]) -> ev.Event:
    """The engine's input in a journaled input row (the shoe's read number, a clock offset beside it set aside)."""
    if SHOE_READ_KEY in journaled or CLOCK_OFFSET_KEY in journaled:
        journaled = {k: v for k, v in journaled.items() if k not in _BESIDE}
    return ev.from_json(journaled)


class _ReplayFailed(RuntimeError):
    """A journaled input the engine refuses on replay."""


class TableCore:
    """One table: engine + journal + publisher. Not thread-safe: call from the service's loop."""

    def __init__(
        self,
        table_id: str,
        rules: Rules,
        journal: Journal,
        publisher: Publisher | None = None,
        *,
        clock: Callable[[], float] = time.time,
        snapshot_every: int = 500,
        pit: str | None = None,
        require_dealer: bool = False,
    ) -> None:
        if snapshot_every < 0:
            raise ValueError(f"snapshot_every must be 0 (never) or more, not {snapshot_every}")
        self.table_id = table_id
        #: the pit the table stands in (setting ``pit``), in ``state`` and ``analytics``: the floor groups by it
        self.pit = pit
        #: the setting ``require_dealer``: journaled (:meth:`dealer_binding`) when the engine's differs
        self.require_dealer = require_dealer
        self.rules = rules
        self.journal = journal
        self.publisher = publisher
        self.clock = clock
        #: save the engine's state with every input whose id is a multiple of this (0: never)
        self.snapshot_every = snapshot_every
        self._engine = Table(rules)
        self.seq = 0
        #: inputs the last :meth:`recover` replayed (after its snapshot, if it started from one)
        self.replayed = 0
        #: the input id of the snapshot the last :meth:`recover` started from (0: the journal's start)
        self.recovered_from = 0
        #: the journaled ts of the input that moved the table into its phase (None: no input yet)
        self.phase_since: float | None = None
        #: the journaled ts of the input that put the dealer on duty where it is (None: none yet)
        self.dealer_since: float | None = None
        #: the last settled rounds, for the retained ``history`` (seeded from the journal when first published)
        self.history = RoundHistory()
        #: ``(load, read)`` of the last shoe read journaled (None: none yet): where the shoe's replay starts
        self.last_shoe_read: ShoeRead | None = None
        #: the player ratings (controller/service/ratings.py), fed every record; None: the table rates no one
        self.ratings: TableRatings | None = None
        self._ratings_unsent = False  # an ended rating failed to reach the publisher since this start
        #: ``state``'s ``software`` (version and build digest: controller/selfcheck), None: not checked here
        self.software: dict[str, Any] | None = None

    @property
    def table(self) -> TableView:
        """The engine, read-only: what it waits for, what the public sees (inputs go through :meth:`apply`)."""
        return self._engine

    def recover(self) -> int:
        """Rebuild the engine from the newest usable snapshot and the inputs after it; return how many
        inputs were replayed. Without a usable snapshot every input is replayed (see the module docstring).

        First, when the journal was opened with the key it is chained under and not yet checked, every row
        of it is verified (:meth:`Journal.verify`): a break raises :class:`JournalIntegrityError` naming the
        first bad row, and the table stays offline (``docs/journal.md``)."""
        journal = self.journal
        if journal.verifiable and not journal.verified:
            journal.verify()  # the whole chain and SQLite's check first: a break raises, naming the row
        tried = 0
        for snap_id in journal.snapshot_ids():
            tried += 1
            try:
                if snap_id > journal.last_input_id:
                    raise SnapshotError(f"it is past the journal's last input {journal.last_input_id}")
                snap = journal.snapshot_at(snap_id)
                table = restore_state(snapshot_rules(snap.state), snap.state, narrate=False)
                count, phase_since, dealer_since = self._replay(table, snap_id, _saved_phase_since(snap.state),
                                                                _saved_dealer_since(snap.state))
            except (SnapshotError, JournalError, _ReplayFailed) as exc:
                log.warning("table %s: the snapshot at input %d is not usable (%s); trying an older one",
                            self.table_id, snap_id, exc)
                continue
            return self._recovered(table, snap_id, count, phase_since, dealer_since)
        if journal.base.input:
            raise JournalError(f"journal {journal.path}: continues an archive after input {journal.base.input} "
                               "and no snapshot of it is usable: recovery needs the archive (docs/journal.md)")
        if tried:
            log.warning("table %s: no usable snapshot: replaying all %d journaled inputs",
                        self.table_id, journal.last_input_id)
        table = Table(self.rules, narrate=False)
        try:
            count, phase_since, dealer_since = self._replay(table, 0, None, None)
        except _ReplayFailed as e:  # the table stays offline: nothing is played on a journal it cannot replay
            raise JournalError(f"journal {journal.path}: {e} (docs/journal.md)") from e
        return self._recovered(table, 0, count, phase_since, dealer_since)

    def _replay(self, table: Table, after: int, phase_since: float | None,
                dealer_since: float | None) -> tuple[int, float | None, float | None]:
        """Replay the inputs after ``after``; return how many, and ``phase_since`` and ``dealer_since`` as
        :meth:`apply` kept them."""
        count = 0
        for row in self.journal.inputs_since(after):
            if not is_engine_input(row.event):
                continue  # a card reader's input, a rating ended: not the engine's
            try:
                event = engine_input(row.event)
            except ev.EventFormatError as e:  # chained like the rest, but not an input this engine reads
                raise _ReplayFailed(f"journal input {row.id}: {e}") from e
            before, dealer = table.phase, table.dealer_on_duty
            try:
                table.handle(event)
            except GameError as e:  # a journal written by this engine never holds a refused event
                raise _ReplayFailed(f"journal input {row.id} no longer applies: {e}") from e
            if phase_since is None or table.phase != before:
                phase_since = row.ts
            if table.dealer_on_duty != dealer:
                dealer_since = row.ts
            count += 1
        return count, phase_since, dealer_since

    def _recovered(self, table: Table, snap_id: int, count: int, phase_since: float | None,
                   dealer_since: float | None) -> int:
        self.last_shoe_read = self._journaled_shoe_read()
        table.narrate = True  # replayed silently; its records were journaled the first time
        self._engine = table
        self.seq = self.journal.last_seq
        self.replayed = count
        self.recovered_from = snap_id
        self.phase_since = phase_since
        self.dealer_since = dealer_since
        if self.ratings is not None:
            self._journal_missed_ratings(self.ratings.rebuild(self.journal))  # the open ones resume
        return count

    def _journal_missed_ratings(self, ended: list[Rating]) -> None:
        """The ratings the journal's stream ends whose row a crash kept out of it (the book runs after each
        event's commit): journaled now, so the start sends them (:meth:`_ratings_unconfirmed`)."""
        since = self.ratings.rebuilt_from if self.ratings is not None else 0  # ended after its checkpoint
        journaled = {row.event["rating"].get("rating_id") for row in self.journal.inputs_since(since)
                     if row.event.get("type") == RATING_INPUT and isinstance(row.event.get("rating"), dict)}
        missed = [row for row in rating_rows(ended) if row["rating"]["rating_id"] not in journaled]
        if missed:
            log.warning("table %s: %d ended rating(s) journaled at start (a crash came before their row)",
                        self.table_id, len(missed))
            with self.journal.transaction():
                for row in missed:
                    self.journal.append_input(row)

    def _rules_bound(self) -> bool:
        """Whether the journal records the rules it is played under (a ``rules_changed`` input: the first
        input of a journal, or the one the meta hint names)."""
        for hint in (1, int(self.journal.get_meta(RULES_INPUT_META) or 0)):
            row = next(self.journal.inputs_since(hint - 1), None) if hint > 0 else None
            if row is not None and row.id == hint and row.event.get("type") == ev.RulesChanged.TYPE:
                return True
        return False

    def rules_binding(self) -> ev.RulesChanged | None:
        """The input that binds the configured rules to the journal (DESIGN: the profile is bound to the
        journal by digest): when the journal records none yet (a new one, or one of before), or plays other
        rules than the configuration's (a changed profile or override: taken between shoes). None when the
        journal's rules in force are the configured ones."""
        if self._rules_bound() and rules_digest(self._engine.rules) == rules_digest(self.rules):
            return None
        return ev.RulesChanged(rules=rules_to_json(self.rules))

    def dealer_binding(self) -> ev.DealerRequired | None:
        """The input that makes the journal's ``require_dealer`` the setting's (taken in any phase), or None when
        they agree."""
        if self._engine.require_dealer == self.require_dealer:
            return None
        return ev.DealerRequired(required=self.require_dealer)

    def journaled_clock(self) -> tuple[float | None, float | None]:
        """What carries the table's time across a restart (controller/service/clock.py): the last journaled input's
        ``ts`` and the offset journaled with the last clock alarm (within :data:`SHOE_READ_LOOKBACK` inputs)."""
        journal = self.journal
        last = next(journal.inputs_since(journal.last_input_id - 1), None) if journal.last_input_id else None
        row = journal.last_input_with(CLOCK_OFFSET_KEY, within=SHOE_READ_LOOKBACK)
        value = row.event[CLOCK_OFFSET_KEY] if row is not None else None
        offset = float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
        return (last.ts if last is not None else None), offset

    def _journaled_shoe_read(self) -> ShoeRead | None:
        """The read number of the last journaled input that came from a shoe read (within the last
        :data:`SHOE_READ_LOOKBACK` inputs; a journal of a shoe that never numbered its reads has none)."""
        row = self.journal.last_input_with(SHOE_READ_KEY, within=SHOE_READ_LOOKBACK)
        if row is None:
            return None
        value = row.event[SHOE_READ_KEY]
        if (not isinstance(value, list) or len(value) != 2
                or not all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x <= 0xFFFF for x in value)):
            raise JournalError(f"journal {self.journal.path}: inputs row {row.id}: {SHOE_READ_KEY} is not "
                               f"[load, read]: {value!r}")
        return value[0], value[1]

    def state(self) -> dict[str, Any]:
        """The ``state`` snapshot of DESIGN.md, made now (its ``ts`` is the core's clock)."""
        return self._state_at(self.seq, self.clock())

    def _state_at(self, seq: int, ts: float, *, head: bool = True) -> dict[str, Any]:
        """The ``state`` at ``seq``; ``head`` False: without its ``head`` (the record at ``seq`` is not committed
        yet: :func:`with_head` adds it once it is)."""
        since = self.phase_since if self.phase_since is not None else ts
        # journal_id: the broker's retained state then witnesses which journal the table keeps (docs/journal.md)
        state = {"seq": seq, "table_id": self.table_id, "pit": self.pit, **self._engine.snapshot(),
                 "ts": round(ts, 3), "phase_since": round(since, 3), "journal_id": self.journal.journal_id}
        on_duty = state.get("dealer_on_duty")
        if isinstance(on_duty, dict):  # since when: the same clock and format as phase_since
            on_duty["since"] = None if self.dealer_since is None else round(self.dealer_since, 3)
        if self.ratings is not None:
            self.ratings.add_to_state(state)
        if self.software is not None:
            state["software"] = self.software
        if head:
            state["head"] = _hex(self._head_at(seq))
        return state

    def _head_at(self, seq: int) -> bytes | None:
        """The chain hash of the record at ``seq`` as ``state`` names it: None for a journal without a key (tests,
        benches), chained under a public key, whose head would let anyone try the 52 cards for the hole card."""
        return self.journal.record_hash(seq) if self.journal.keyed else None

    def apply(self, event: ev.Event, *, shoe_read: ShoeRead | None = None,
              clock_offset: float | None = None) -> list[Effect]:
        """Apply one input durably (see the module docstring); refusals raise :class:`GameError`.

        ``shoe_read``: the shoe's number of the read this input came from, journaled with it (the
        shoe replays the reads after the last one journaled when its link starts). ``clock_offset``: journaled
        with a clock alarm (:data:`CLOCK_OFFSET_KEY`)."""
        before, dealer = self._engine.phase, self._engine.dealer_on_duty
        effects = self._engine.handle(event)
        now = self.clock()
        if self.phase_since is None or self._engine.phase != before:
            self.phase_since = now  # the input's journaled ts: what a replay reads back
        if self._engine.dealer_on_duty != dealer:
            self.dealer_since = now
        bodies: list[dict[str, Any]] = []
        alarms_changed = False
        for effect in effects:
            if isinstance(effect, Record):
                bodies.append({"ts": round(now, 3), "type": effect.type, **effect.data})
            elif isinstance(effect, AlarmRaised | AlarmCleared):
                alarms_changed = True
        every = self.snapshot_every
        snapshot = self._export() if every and (self.journal.last_input_id + 1) % every == 0 else None
        # The state is built before the commit (the engine has settled; the records will take the
        # next seqs) and leaves only after it: the commit's wait on the disk is then all that
        # stands between the input and the network.
        seq = self.journal.last_seq + len(bodies) if bodies else self.seq
        state = json_payload(self._state_at(seq, now, head=False)) if self.publisher is not None else b""
        with self.journal.transaction():
            journaled = ev.to_json(event)
            if shoe_read is not None:
                journaled[SHOE_READ_KEY] = list(shoe_read)
            if clock_offset is not None:
                journaled[CLOCK_OFFSET_KEY] = round(clock_offset, 3)
            input_id, seqs = self.journal.commit_event(journaled, bodies, ts=now)
            if snapshot is not None and input_id % every == 0:
                self.journal.save_snapshot(snapshot, input_id=input_id, ts=now)
                self.journal.prune_snapshots(SNAPSHOTS_KEPT)
        if seqs:
            self.seq = seqs[-1]
        if shoe_read is not None:
            self.last_shoe_read = shoe_read
        if isinstance(event, ev.RulesChanged):
            self.journal.set_meta(RULES_INPUT_META, str(input_id))
        if self.publisher is not None:
            if self.seq != seq:  # records written to the journal behind this core: never publish a wrong seq
                seq, state = self.seq, json_payload(self._state_at(self.seq, now))
            else:  # the head of the record at seq, known since its commit (kept in memory: no query)
                state = with_head(state, self._head_at(seq))
            # one hand-off: the new records, then the state that follows them (publish_state notifies)
            self.publisher.publish_state(seq, state)
            if alarms_changed:
                self.publisher.publish_alarms(self._alarm_list())
            if any(body["type"] == "round_settled" for body in bodies):
                self._publish_history()  # after the settlement's commit and its state: off the card's path
        if self.ratings is not None and bodies:  # after the state is on its way: off the card's path
            self._rate(for_book(bodies, seqs, journaled), now)
        self.journal.check_anchor()  # once the news has left: the next commit's anchor is one pwrite
        return effects

    def _rate(self, bodies: list[dict[str, Any]], now: float) -> None:
        """Feed the ratings an event's records (pricing a departure takes the engine's EV: milliseconds, so it
        runs once the event's state has gone, and ``state`` shows the ratings as of the event before); journal
        and publish the ratings they ended. A crash before their row is made good by the next start
        (:meth:`_journal_missed_ratings`)."""
        ratings = self.ratings
        if ratings is None:
            return
        rows = rating_rows(ratings.observe(bodies))
        settled = any(body["type"] == "round_settled" for body in bodies)
        checkpoint = ratings.checkpoint_row(bodies[-1]["seq"]) if settled else None  # between rounds
        acknowledged = self.journal.last_input_id if checkpoint is not None and self._ratings_acknowledged() else None
        if rows or checkpoint is not None:
            with self.journal.transaction():
                for row in rows:
                    self.journal.append_input(row, ts=now)
                if checkpoint is not None:  # after the ratings it ended: a start reads on from here
                    self.journal.append_input(checkpoint, ts=now)
        if acknowledged is not None:  # every rating journaled before this round's went out and was acknowledged
            self.journal.set_meta(RATINGS_SENT_META, self.journal.signed_mark(RATINGS_SENT_META, acknowledged))
        if self.publisher is not None and (rows or any(body["type"] in OPEN_AFTER for body in bodies)):
            self._publish_ratings([row["rating"] for row in rows])  # as journaled

    def apply_card(self, kind: str, spot: int, player: str) -> None:
        """A card reader's ``card_in`` / ``card_out`` at ``spot``: journaled with the number as read, published on
        ``events`` masked, taken by the ratings (see :mod:`controller.service.ratings`)."""
        journaled = card_input(kind, spot, player)
        now = self.clock()
        body = public_card_body(kind, spot, player, now)
        seq = self.journal.last_seq + 1
        ratings = self.ratings
        ended = ratings.observe(({**body, "seq": seq, "player": player},)) if ratings is not None else []
        state = json_payload(self._state_at(seq, now, head=False)) if self.publisher is not None else b""
        with self.journal.transaction():
            _, seqs = self.journal.commit_event(journaled, [body], ts=now)
            for row in (ended_rows := rating_rows(ended)):
                self.journal.append_input(row, ts=now)
        self.seq = seqs[-1]
        if self.publisher is not None:
            if self.seq != seq:
                state = json_payload(self._state_at(self.seq, now))
            else:
                state = with_head(state, self._head_at(seq))
            self.publisher.publish_state(self.seq, state)
            if ratings is not None:
                self._publish_ratings([row["rating"] for row in ended_rows])
        self.journal.check_anchor()

    def _ratings_unconfirmed(self) -> list[dict[str, Any]]:
        """The ended ratings journaled since the last clean stop that saw every rating acknowledged (meta
        :data:`RATINGS_SENT_META`): a crash may have kept them off the wire, so a start sends them again
        (a repeat, the same ``rating_id`` and body, is allowed; a loss is not)."""
        after = self.journal.read_mark(RATINGS_SENT_META, self.journal.get_meta(RATINGS_SENT_META)) or 0
        return [row.event["rating"] for row in self.journal.inputs_of((RATING_INPUT,), after)
                if isinstance(row.event.get("rating"), dict)]

    def _ratings_acknowledged(self) -> bool:
        """Whether the broker acknowledged every ended rating journaled so far: each went to the publisher (none
        failed to) and it holds none without its PUBACK (a publisher that cannot tell: never)."""
        pending = getattr(self.publisher, "ratings_pending", None)
        return isinstance(pending, int) and pending == 0 and not self._ratings_unsent

    def ratings_confirmed(self) -> None:
        """Every ended rating journaled so far has been acknowledged by the broker (a clean stop says so)."""
        if self.ratings is not None:
            self.journal.set_meta(RATINGS_SENT_META,
                                  self.journal.signed_mark(RATINGS_SENT_META, self.journal.last_input_id))

    def _publish_ratings(self, ended: Sequence[dict[str, Any]]) -> None:
        """Each ended rating on ``ratings`` (QoS 1, not retained), then the open ones on ``ratings/open``
        (retained). A failure is logged: the ratings are journaled whatever becomes of their messages."""
        publisher, ratings = self.publisher, self.ratings
        if not isinstance(publisher, RatingsPublisher) or ratings is None:
            return
        try:
            for rating in ended:
                publisher.publish_rating(rating)
            publisher.publish_open_ratings(ratings.open_json())
        except Exception:
            self._ratings_unsent = True  # the resend mark stays where it is until a start sends them again
            log.exception("table %s: the ratings could not be published", self.table_id)

    def _alarm_list(self) -> list[dict[str, Any]]:
        """The active alarms as published on ``alarms``: each with its ``kind`` (who may clear it,
        :mod:`controller.contract.roles`), so a screen shows the button to that role only."""
        return [{**a, "kind": alarm_kind(str(a.get("code", "")), bool(a.get("halts")))}
                for a in self._engine.alarm_list()]

    def note(self, body: dict[str, Any]) -> int:
        """Journal a public record that no engine input causes (a refused command: who, what, why; nothing
        played) and publish it, then the ``state`` that follows it; returns its ``seq``."""
        now = self.clock()
        (seq,) = self.journal.add_records([{"ts": round(now, 3), **body}])
        self.seq = seq
        if self.publisher is not None:
            self.publisher.publish_state(seq, json_payload(self._state_at(seq, now)))
        self.journal.check_anchor()
        return seq

    def _publish_history(self) -> None:
        """Bring :attr:`history` up to the journal (only the records since the last settlement; the whole
        last rounds once, at the first call) and hand it to the publisher. A failure here is logged:
        the round is journaled and published whatever becomes of its history."""
        publisher = self.publisher
        if not isinstance(publisher, HistoryPublisher):
            return
        try:
            self.history.advance(self.journal)
            publisher.publish_history(self.history.payload())
        except Exception:
            log.exception("table %s: the round history could not be published", self.table_id)

    def _export(self) -> dict[str, Any] | None:
        """The engine's state for a snapshot, with the core's ``phase_since`` beside it, or None (logged)
        if it cannot be taken: the input still commits."""
        try:
            snapshot = export_state(self._engine)
        except SnapshotError as exc:
            log.warning("table %s: no snapshot this time: %s", self.table_id, exc)
            return None
        snapshot[PHASE_SINCE_KEY] = self.phase_since
        snapshot[DEALER_SINCE_KEY] = self.dealer_since
        return snapshot

    def publish_all(self) -> None:
        """Publish the current state, alarms and round history (at start, after recovery)."""
        if self.publisher is not None:
            self.publisher.publish_state(self.seq, self.state())
            self.publisher.publish_alarms(self._alarm_list())
            self._publish_history()
            if self.ratings is not None:
                self._publish_ratings(self._ratings_unconfirmed())


def _hex(head: bytes | None) -> str | None:
    return head.hex() if head is not None else None


def with_head(state: bytes, head: bytes | None) -> bytes:
    """A ``state`` payload made before its record's commit (compact JSON of an object, without ``head``) with the
    ``head`` added as its last field: the record's chain hash is known only once it is written, and making the
    whole JSON again would put that work between the commit and the network."""
    return state[:-1] + b',"head":' + (b'"' + head.hex().encode() + b'"' if head is not None else b"null") + b"}"


def _saved_dealer_since(snapshot: Any) -> float | None:
    """The ``dealer_since`` a snapshot saved beside the engine's state (None: none, or saved before dealers)."""
    value = snapshot.get(DEALER_SINCE_KEY) if isinstance(snapshot, dict) else None
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SnapshotError(f"{DEALER_SINCE_KEY} {value!r} is not a time")
    return float(value)


def _saved_phase_since(snapshot: Any) -> float:
    """The ``phase_since`` a snapshot saved beside the engine's state; :class:`SnapshotError` if it has none."""
    value = snapshot.get(PHASE_SINCE_KEY) if isinstance(snapshot, dict) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SnapshotError(f"no {PHASE_SINCE_KEY} beside the engine's state (saved by an older version)")
    return float(value)
