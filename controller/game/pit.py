"""The pit's settings and the clock: table limits, the rules in force, the deck set's age and its change.

Limits set while wagers are in play apply from the next round; rules change only between shoes (so no shoe is
dealt under two sets of rules); a deck set older than the profile allows halts new rounds until it is changed.
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Final

from controller.contract.alarms import DECK_CHANGE_DUE, DECK_CHANGE_OVERDUE
from controller.game import events as ev
from controller.game.alarms import clear_alarms, raise_alarm
from controller.game.errors import IllegalAction, MalformedEvent
from controller.game.money import format_money
from controller.game.rules import RulesFormatError, limits_refusal, rules_digest, rules_from_json
from controller.game.shoe import request_shuffle
from controller.game.transitions import BETTING, CLOSED, SETTLED, SHUFFLING

if TYPE_CHECKING:
    from controller.game.table import Table

# The rules a journal is bound to change only between shoes, so no shoe is dealt under two sets of rules.
RULES_BETWEEN_SHOES: Final = "the rules change only between shoes: close the table, or wait for the shuffle"


def by(operator: str | None) -> dict[str, str]:
    """The ``operator`` of a record, when a person named in a pit command caused it."""
    return {} if operator is None else {"operator": operator}


def iso(ts: float | None) -> str | None:
    """``ts`` (epoch seconds) as UTC to the second, ``2026-11-22T08:00:00Z``; None for None."""
    if ts is None:
        return None
    return _utc_text(ts)


@lru_cache(maxsize=8)
def _utc_text(ts: float) -> str:
    """Kept for the last instants asked: every ``state`` shows when the deck set was opened, and formatting a
    date costs about 20 us on a card's path when it has not run for a while (docs/table-service.md)."""
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def on_limits(t: Table, e: ev.LimitsSet) -> None:
    """New limits apply to wagers not yet placed: at once between rounds, else from the next round.

    A supervisor who changes the limits while wagers are on the layout or a round is dealt
    means the next round; the wagers in play keep the limits they were placed under.
    """
    if not 0 < e.min_bet <= e.max_bet:
        raise IllegalAction(
            f"minimum {format_money(e.min_bet)} must be above zero and not above maximum {format_money(e.max_bet)}",
            rule="limits",
            action="set_limits",
        )
    outside = limits_refusal(t.rules, e.min_bet, e.max_bet)  # the rule text's bounds (one check)
    if outside is not None:
        raise IllegalAction(outside, rule="limits", action="set_limits")
    if t.phase in (CLOSED, SETTLED, SHUFFLING) or (t.phase == BETTING and not t.bets):
        t.next_limits = None
        set_limits(t, e.min_bet, e.max_bet, e.operator)
        return
    t.next_limits = (e.min_bet, e.max_bet)
    if t.narrate:
        t._record("limits_pending", min_bet=format_money(e.min_bet), max_bet=format_money(e.max_bet),
                  from_round=t.round + 1, **by(e.operator))


def set_limits(t: Table, min_bet: int, max_bet: int, operator: str | None = None) -> None:
    t.min_bet, t.max_bet = min_bet, max_bet
    if t.narrate:
        t._record("limits", min_bet=format_money(min_bet), max_bet=format_money(max_bet), **by(operator))


def apply_next_limits(t: Table) -> None:
    """The round the limits waited for is over (settled, or its bets taken back at a close)."""
    if t.next_limits is not None:
        limits, t.next_limits = t.next_limits, None
        set_limits(t, *limits)


def between_shoes(t: Table) -> bool:
    """No shoe is being dealt: the table is closed, the shoe is being shuffled, or no card of the new
    shoe has left it and no wager lies on the layout (when the rules may change)."""
    return t.phase in (CLOSED, SHUFFLING) or (t.phase in (BETTING, SETTLED) and t.cards_dealt == 0 and not t.bets)


def on_rules_changed(t: Table, e: ev.RulesChanged) -> None:
    """New rules only between shoes, so no shoe is dealt under two sets of rules: with the table closed,
    while the shoe is shuffled, or before the first card of a new shoe (no wager on the layout); a
    change of the number of decks only with the table closed, and a new shoe is shuffled for it."""
    if not between_shoes(t):
        raise IllegalAction(RULES_BETWEEN_SHOES, rule="rules", action="rules_changed")
    try:
        rules = rules_from_json(e.rules)
    except RulesFormatError as exc:
        raise MalformedEvent(f"rules_changed: {exc}") from None
    old = t.rules
    decks_change = (rules.decks, rules.deck_sets) != (old.decks, old.deck_sets)
    if decks_change and t.phase != CLOSED:
        raise IllegalAction(f"the number of decks changes ({old.decks} to {rules.decks}) only with the table "
                            "closed", rule="rules", action="rules_changed")
    t.rules = rules
    if t.narrate:
        t._record("rules_changed", profile=rules.name, digest=rules_digest(rules), **by(e.operator))
    if (t.min_bet, t.max_bet) == (old.min_bet, old.max_bet) != (rules.min_bet, rules.max_bet):
        t.next_limits = None
        set_limits(t, rules.min_bet, rules.max_bet, e.operator)  # the profile's, unless the pit set others
    if decks_change:
        t.shuffle_due = True
        t.shuffle_reason = f"new rules: {rules.decks} decks"


def on_tick(t: Table, e: ev.Tick) -> None:
    t.now = e.now
    t._check_deck_age()


def check_deck_age(t: Table) -> None:
    if t.now is None or t.deck_opened_at is None:
        return
    due = t.deck_opened_at + t.rules.deck_change_hours * 3600.0
    left = due - t.now
    codes = {a.code for a in t.alarms.values()}
    if left <= 0:
        if DECK_CHANGE_OVERDUE not in codes:
            clear_alarms(t, DECK_CHANGE_DUE)
            raise_alarm(
                t,
                DECK_CHANGE_OVERDUE,
                f"deck set {t.deck_set} is overdue for a change "
                f"(every {t.rules.deck_change_hours:g} h): no new round until decks are changed",
                halts=True,
            )
    elif left <= t.rules.deck_change_warning_minutes * 60.0 and not (codes & {DECK_CHANGE_DUE, DECK_CHANGE_OVERDUE}):
        raise_alarm(t, DECK_CHANGE_DUE, f"deck set {t.deck_set} must be changed in {int(left // 60)} min",
                    halts=False)


def on_decks_changed(t: Table, e: ev.DecksChanged) -> None:
    if t.phase != CLOSED:
        t._check_phase(SHUFFLING)  # the transition, before anything changes
    t.now = e.now
    t.deck_opened_at = e.now
    t.deck_set = e.deck_set
    clear_alarms(t, DECK_CHANGE_DUE, DECK_CHANGE_OVERDUE)
    t.shuffle_due = True
    t.shuffle_reason = "new decks"
    if t.narrate:
        t._record("decks_changed", deck_set=e.deck_set, at=iso(e.now), **by(e.operator))
    if t.phase != CLOSED:
        t._set_phase(SHUFFLING)
        request_shuffle(t, "new decks")
