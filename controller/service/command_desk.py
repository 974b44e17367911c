"""People's commands from MQTT (``cmd/<role>/<user>/<verb>``), checked, applied and answered.

The sender (the topic's user and role) is checked before anything else, then the payload
(:mod:`controller.service.commands`); the role again per alarm kind (:mod:`controller.contract.roles`), whatever
the broker let through; ``set_limits`` inside what the profile's rule text allows. A valid command is applied
like any other input; a refused one is journaled (who, verb, why) while its sender's budget lasts.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from controller.contract.phases import Phase
from controller.contract.results import CommandResult, refused
from controller.contract.roles import check_user
from controller.contract.roles import refusal as role_refusal
from controller.contract.topics import CommandTopic
from controller.game import events as ev
from controller.game.errors import GameError
from controller.game.rules import limits_refusal
from controller.game.view import TableView
from controller.service.commands import (
    AckAlarm,
    SelfCheckCmd,
    SetDealer,
    SetLimits,
    accepted,
    check_sender,
    parse_command,
)
from controller.service.core import TableCore
from controller.service.program_checks import ProgramChecks
from controller.service.refusals import RefusalBudget

log = logging.getLogger("controller.table")


class CommandDesk:
    """Answers one table's commands; ``apply`` is the service's (an input applied like a device's)."""

    def __init__(self, core: TableCore, apply: Callable[[ev.Event], object], clock: Callable[[], float],
                 program: ProgramChecks) -> None:
        self.core = core
        self._apply = apply
        self._clock = clock
        self._program = program
        #: how many refused commands the journal takes (a flood adds a bounded number of records)
        self._refusal_budget = RefusalBudget()

    async def on_command(self, command: CommandTopic, payload: bytes) -> CommandResult:
        """A person's command: checked, applied like any input and answered with a result (see the module)."""
        verb = command.verb
        table = self.core.table
        parsed = check_sender(command, payload) or parse_command(verb, payload, user=command.user)
        if isinstance(parsed, CommandResult):
            return self._refused(command, parsed)
        who = {"table": self.core.table_id, "verb": verb, "role": command.role, "operator": parsed.operator}
        if isinstance(parsed, AckAlarm) and (alarm := table.alarms.get(parsed.alarm_id)) is not None:
            why = role_refusal(command.role, verb, alarm=(alarm.code, alarm.halts), reason=parsed.reason)
            if why is not None:
                return self._refused(command, refused(verb, f"ack_alarm refused: {why}", parsed.id, parsed.operator))
        if isinstance(parsed, SelfCheckCmd):
            watch = self._program.watch()
            if watch is None:
                return self._refused(command, refused(command.verb, "selfcheck refused: this table process made no "
                                                      "program check at its start", parsed.id, parsed.operator))
            return await self._program.command(watch, command, parsed)
        if isinstance(parsed, SetLimits):  # inside what the profile's rule text allows (DESIGN: roles)
            outside = limits_refusal(table.rules, parsed.min_bet, parsed.max_bet)
            if outside is not None:
                return self._refused(command, refused(verb, f"set_limits refused: {outside}", parsed.id,
                                                      parsed.operator))
        already = _already(verb, table)
        if already is not None:  # a close of a closed table, an open of an open one: said for a person
            return self._refused(command, refused(verb, already, parsed.id, parsed.operator))
        try:
            self._apply(parsed.to_event(self._clock()))
        except GameError as e:
            return self._refused(command, refused(verb, str(e), parsed.id, parsed.operator))
        log.info("command applied", extra=who)
        table = self.core.table
        if verb == "close" and table.close_asked:
            return accepted(parsed, seq=self.core.seq, pending=f"closes when round {table.round} settles")
        if isinstance(parsed, SetDealer) and table.dealer_on_duty != parsed.dealer:  # held until the round settles
            return accepted(parsed, seq=self.core.seq, pending=f"takes effect when round {table.round} settles")
        return accepted(parsed, seq=self.core.seq)

    def _refused(self, command: CommandTopic, result: CommandResult) -> CommandResult:
        """Journal a refused command (who, verb, why: a ``command_refused`` record, nothing played) while
        its sender's budget lasts (:class:`RefusalBudget`: a flood adds a bounded number of records); answer it."""
        valid = check_user(command.user) is None
        suppressed = self._refusal_budget.admit(command.user if valid else None, self._clock())
        # logged like it is journaled: a flood fills neither the journal nor the log
        log.log(logging.INFO if suppressed is not None else logging.DEBUG, "command refused",
                extra={"table": self.core.table_id, "verb": command.verb[:64], "role": command.role[:64],
                       "operator": result.operator, "reason": result.error})
        if suppressed is None:
            return result
        body: dict[str, Any] = {"type": "command_refused", "role": command.role[:64], "user": command.user[:64],
                                "verb": command.verb[:64], "error": result.error}
        if valid:
            body["operator"] = command.user
        if result.id is not None:
            body["id"] = result.id
        if suppressed:
            body["suppressed"] = suppressed
        try:
            self.core.note(body)
        except Exception:  # a journal that cannot write stops the table at its next input; the answer still goes out
            log.exception("a refused command could not be journaled", extra={"table": self.core.table_id})
        return result


def _already(verb: str, table: TableView) -> str | None:
    """The refusal of a ``close`` of a closed table or an ``open`` of an open one (the engine takes a close of a
    closed table, as journals written before this check hold such closes and must replay), else None."""
    if verb == "close" and table.phase == Phase.CLOSED:
        return "close refused: the table is already closed"
    if verb == "open" and table.phase != Phase.CLOSED:
        return "open refused: the table is already open"
    return None
