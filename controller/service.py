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
a restart the journal and the world agree. :meth:`TableCore.recover` rebuilds the engine by
replaying every journaled input (narration off: the records are in the outbox already).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from controller.game import events as ev
from controller.game.effects import AlarmCleared, AlarmRaised, Effect, Record
from controller.game.rules import Rules
from controller.game.table import GameError, Table
from controller.journal import Journal
from controller.publisher import Publisher


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
    ) -> None:
        self.table_id = table_id
        self.rules = rules
        self.journal = journal
        self.publisher = publisher
        self.clock = clock
        self.table = Table(rules)
        self.seq = 0
        self.replayed = 0

    def recover(self) -> int:
        """Replay the journal into a fresh engine; return how many inputs were replayed."""
        table = Table(self.rules, narrate=False)
        count = 0
        for row in self.journal.inputs_since(0):
            event = ev.from_json(row.event)
            try:
                table.handle(event)
            except GameError as e:  # a journal written by this engine never holds a refused event
                raise RuntimeError(f"journal input {row.id} no longer applies: {e}") from e
            count += 1
        table.narrate = True
        self.table = table
        self.seq = self.journal.last_seq
        self.replayed = count
        return count

    def state(self) -> dict[str, Any]:
        """The ``state`` snapshot of DESIGN.md."""
        snap = self.table.snapshot()
        return {"seq": self.seq, "table_id": self.table_id, **snap}

    def apply(self, event: ev.Event) -> list[Effect]:
        """Apply one input durably (see the module docstring); refusals raise :class:`GameError`."""
        effects = self.table.handle(event)
        now = self.clock()
        bodies: list[dict[str, Any]] = []
        alarms_changed = False
        for effect in effects:
            if isinstance(effect, Record):
                bodies.append({"ts": round(now, 3), "type": effect.type, **effect.data})
            elif isinstance(effect, AlarmRaised | AlarmCleared):
                alarms_changed = True
        _, seqs = self.journal.commit_event(ev.to_json(event), bodies, ts=now)
        if seqs:
            self.seq = seqs[-1]
        if self.publisher is not None:
            self.publisher.notify()
            self.publisher.publish_state(self.seq, self.state())
            if alarms_changed:
                self.publisher.publish_alarms(self.table.alarm_list())
        return effects

    def publish_all(self) -> None:
        """Publish the current state and alarms (at start, after recovery)."""
        if self.publisher is not None:
            self.publisher.notify()
            self.publisher.publish_state(self.seq, self.state())
            self.publisher.publish_alarms(self.table.alarm_list())

