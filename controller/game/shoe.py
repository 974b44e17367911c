"""The shoe: where the next card goes, the cards seen, the cut card, the burn and the shuffles.

The shoe is physical: a card the procedure did not call for is not refused but burnt as a dead card
(NY 4620.5(i)(4)); a card seen more often than the decks hold is a foreign card (an integrity alarm).
A full shuffle at the cut card or with new decks; the discards only, mid-round, when the shoe runs out
(NJ 19:47-2.15(f)), and a full reshuffle once that round settles.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from controller.game import events as ev
from controller.game import legality
from controller.game.alarms import clear_alarms, raise_alarm
from controller.game.effects import DealingLocked, StartShuffle
from controller.game.errors import IllegalAction, MalformedEvent
from controller.game.transitions import BETTING, CLOSED, DEALER, DEALING, PLAYERS, SETTLED, SHUFFLING

if TYPE_CHECKING:
    from controller.game.table import Table

#: Where the next card goes (:func:`card_target`): a burn, the deal, a player's hit, the dealer's draw.
BURN: Final = "burn"
DEAL: Final = "deal"
HIT: Final = "hit"
DRAW: Final = "dealer"
#: The alarm of a card seen more often than the decks hold (a foreign or duplicate card).
CARD_COUNT_ALARM: Final = "integrity_card_count"
INSUFFICIENT_CARDS: Final = "insufficient cards (NJ 19:47-2.15(f))"

# Effects without a variable part: immutable, so one of each serves every request (a dataclass built is a call).
_DEALING_LOCKED: Final = DealingLocked(True)
_DEALING_UNLOCKED: Final = DealingLocked(False)


def card_target(t: Table, required: bool = False) -> str | None:
    """Where the next card out of the shoe goes: burn, deal, hit, dealer; None = not called for. ``required``:
    only a card the procedure calls for without a player's say (a hit only where the hand owes it: a split hand's
    second card, a double's card; otherwise a hit is the player's choice)."""
    if t.burn_pending or t.awaiting_discards is not None:
        if t.awaiting_discards is not None:
            return None
        if t.phase in (BETTING, DEALING, PLAYERS, DEALER):
            return BURN
    phase = t.phase
    if phase == DEALING:
        return DEAL if t.deal_pos < len(t.deal_plan) and not t.awaiting_peek else None
    if phase == PLAYERS:
        active = t.active
        if active is None:
            return None
        hand = t.spots[active[0]].hands[active[1]]
        if required and not (len(hand.cards) < 2 or hand.doubled):
            return None
        return HIT if legality.takes_card(t.rules, hand) else None
    if phase == DEALER:
        return DRAW if not t.awaiting_reveal and t._dealer_wants_card() else None
    return None


def foreign_card(t: Table, card: str) -> str | None:
    """Count ``card`` as seen out of this shoe; the alarm's message when the decks cannot hold that many."""
    seen = t.seen
    n = seen[card] + 1 if card in seen else 1
    seen[card] = n
    if n > t.rules.decks:
        return f"{card} seen {n} times in a {t.rules.decks}-deck shoe: foreign card"
    return None


def on_cut_card(t: Table, e: ev.CutCardReached) -> None:
    if t.cut_card_reached:
        return
    t.cut_card_reached = True
    if t.narrate:
        t._record("cut_card", cards_dealt=t.cards_dealt)
    # Between rounds the shuffle is due at once; during a round (wagers down or cards out) the
    # round is finished first and the shuffle requested at its settlement.
    if t.phase == SETTLED or (t.phase == BETTING and not t.bets):
        t.shuffle_due = True
        t.shuffle_reason = "cut card reached"
        request_shuffle(t, "cut card reached")


def request_shuffle(t: Table, reason: str) -> None:
    t._out.append(StartShuffle(t.rules.cards_in_shoe, reason))
    t._out.append(_DEALING_LOCKED)
    if t.narrate:
        t._record("shuffle_requested", reason=reason)


def on_shuffle_started(t: Table, e: ev.ShuffleStarted) -> None:
    if t.phase == SHUFFLING:  # the shuffler reports its start after the engine asked for it
        if t.narrate:
            t._record("shuffle_started")
        return
    if not t.shuffle_due:
        raise IllegalAction("no shuffle is due", rule="shuffle", action="shuffle_started")
    if t.phase != CLOSED:  # a closed table stays closed while its shoe is shuffled: no round without an open
        t._set_phase(SHUFFLING)  # (nothing changed before it)
    if t.narrate:
        t._record("shuffle_started")


def on_shoe_empty(t: Table, e: ev.ShoeEmpty) -> None:
    """NJ 19:47-2.15(f): the discards are shuffled, one card burnt, the round completed."""
    if t.awaiting_discards is not None:
        return
    # "all of the cards in the discard rack": every card out of the shoe that is not on the layout,
    # so the round's burnt and dead cards too, not only the rounds before
    on_table = count_on_table(t)
    discards = t.cards_dealt - on_table
    if discards <= 0:
        raise IllegalAction("no discards to reshuffle", rule="insufficient_cards", action="shoe_empty")
    t.awaiting_discards = discards
    raise_alarm(t, "insufficient_cards",
                f"insufficient cards to complete round {t.round}: shuffle the {discards} discards "
                f"({on_table} on the table stay), burn one, complete the round (NJ 19:47-2.15(f))",
                halts=False)
    t._out.append(StartShuffle(discards, INSUFFICIENT_CARDS))


def on_shuffle_done(t: Table, e: ev.ShuffleDone) -> None:
    r = t.rules
    if not isinstance(e.count, int) or e.count < 0:
        raise MalformedEvent(f"shuffle count {e.count!r} must be a whole number")
    if t.awaiting_discards is not None:
        _discards_shuffled(t, e.count)
        return
    if t.phase not in (SHUFFLING, SETTLED, BETTING, CLOSED) or not t.shuffle_due:
        raise IllegalAction("no shuffle is due", rule="shuffle", action="shuffle_done")
    if t.phase == BETTING and t.bets:
        raise IllegalAction("wagers are on the layout", rule="shuffle", action="shuffle_done")
    if t.phase != CLOSED and t.phase != SETTLED:
        t._check_phase(BETTING)  # the transition, before anything changes
    if e.count != r.cards_in_shoe:
        raise_alarm(t, "integrity_shuffle_count",
                    f"shuffler counted {e.count} cards, a {r.decks}-deck set holds {r.cards_in_shoe}", halts=True)
    if e.composition is not None:
        wrong = {rank: n for rank, n in e.composition.items() if n != 4 * r.decks}
        missing = [rank for rank in "A23456789TJQK" if rank not in e.composition]
        if wrong or missing:
            raise_alarm(t, "integrity_shuffle_composition",
                        f"shuffled deck composition is wrong: {wrong or ''}{' missing ' if missing else ''}"
                        f"{''.join(missing)} (each rank must appear {4 * r.decks} times)", halts=True)
    t.shuffle_due = False
    t.shuffles += 1
    t.cut_card_reached = False
    t.reshuffle_after_round = False
    t.cards_dealt = 0
    t.seen = {}
    t.burn_pending = r.burn
    if e.deck_set is not None:
        t.deck_set = e.deck_set
    t._out.append(_DEALING_UNLOCKED)
    if t.narrate:
        t._record("shuffle_done", count=e.count, deck_set=t.deck_set)
    if t.phase != CLOSED and t.phase != SETTLED:
        t._set_phase(BETTING)


def _discards_shuffled(t: Table, count: int) -> None:
    """The discards are back in the shoe (NJ 19:47-2.15(f)): one card is burnt and the round goes on."""
    expected = t.awaiting_discards
    if count != expected:
        raise_alarm(t, "integrity_shuffle_count", f"discard reshuffle counted {count} cards, expected {expected}",
                    halts=True)
    t.awaiting_discards = None
    clear_alarms(t, "insufficient_cards")
    on_table: dict[str, int] = {}
    for c in cards_on_table(t):
        on_table[c] = on_table.get(c, 0) + 1
    t.seen = on_table  # a face-down hole card is counted at its reveal
    t.cards_dealt = count_on_table(t)
    t.cards_before_round = 0
    t.burn_pending = 1
    t.reshuffle_after_round = True
    if t.narrate:
        t._record("shuffle_done", count=count, discards=True)


def cards_on_table(t: Table) -> list[str]:
    cards = list(t.dealer)
    for s in t.order:
        for h in s.hands:
            cards.extend(h.cards)
    return cards


def count_on_table(t: Table) -> int:
    """Cards on the layout, a face-down hole card (dealt, value not yet known) included."""
    return len(cards_on_table(t)) + (1 if t.hole_face_down else 0)
