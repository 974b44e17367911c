"""The engine's refusals, and the one error that is an engine bug (:class:`TransitionNotListed`).

A refusal (:class:`GameError`) leaves the table exactly as it was: every handler checks before it changes
anything. :class:`IllegalAction` names the rule broken, and where a profile option is enforced, the option and
the clause the profile cites for it, so a reviewer can read each refusal against the rule book.
"""

from __future__ import annotations

from mypy_extensions import mypyc_attr

from controller.game.legality import Refusal
from controller.game.rules import Rules
from controller.game.transitions import TRANSITIONS


class GameError(Exception):
    """Root of the engine's refusals."""


class MalformedEvent(GameError):
    """The event itself is wrong (not a card, no such spot): the sender erred."""


class IllegalAction(GameError):
    """A well-formed event the rules do not allow now; ``rule`` names the rule broken."""

    def __init__(self, reason: str, *, rule: str, spot: int | None = None, action: str | None = None,
                 option: str | None = None, clause: str | None = None) -> None:
        self.reason = reason
        self.rule = rule
        self.option = option  # the profile option enforced, if any
        self.clause = clause  # what the profile cites for that option (its clause, or "house choice")
        self.spot = spot
        self.action = action
        if spot is not None and action is not None:
            text = f"spot {spot}: {action} refused: {reason}"
        elif action is not None:
            text = f"{action} refused: {reason}"
        else:
            text = reason
        super().__init__(text)


def refusal_error(refusal: Refusal, rules: Rules, spot: int | None, action: str) -> IllegalAction:
    """The refusal as the engine raises it, naming the profile option it enforces and the clause the profile
    cites for it (``Rules.citations``, from the profile's comments)."""
    clause = None
    if refusal.option is not None:
        for option, cited in rules.citations:
            if option == refusal.option:
                clause = cited
                break
    return IllegalAction(refusal.reason, rule=refusal.rule, spot=spot, action=action, option=refusal.option,
                         clause=clause)


@mypyc_attr(native_class=False)  # mypyc cannot compile a subclass of AssertionError: a plain Python class
class TransitionNotListed(AssertionError):
    """An engine bug, not a refusal: a handler took (or was about to take) the table from ``phase`` on ``event``
    to ``new_phase``, a transition :data:`~controller.game.transitions.TRANSITIONS` does not list. Raised when
    the handler sets the phase, before the phase changes; or, where the handler left the phase where the event
    must move it on, once the handler has run."""

    def __init__(self, phase: str, event: str, new_phase: str) -> None:
        self.phase = phase
        self.event = event
        self.new_phase = new_phase
        listed = ", ".join(sorted(TRANSITIONS.get((phase, event), ())))
        super().__init__(f"engine bug: {event} took the table from {phase} to {new_phase}, a transition "
                         f"TRANSITIONS does not list ({phase} on {event} leads to: {listed})")
