"""May a player take this action now? Each rule's legality, written once.

The engine refuses with these functions, :meth:`Table.legal_actions` offers exactly what they
allow, and the bench's players and the strategy ask the same functions, so no rule has a second
copy that can drift from the one the table enforces. Pure and cheap (the bench calls them on
every decision): a rule set and a hand in, a :class:`Refusal` or None out.

A refusal names the profile option it enforces (``option``), so the shell can cite the clause
the profile gives for that option.
"""

from __future__ import annotations

from dataclasses import dataclass

from mypy_extensions import mypyc_attr

from controller.game.cards import VALUE
from controller.game.hand import Hand, Spot
from controller.game.money import format_money
from controller.game.rules import Rules


@mypyc_attr(native_class=False)  # compiled, a frozen dataclass would neither pickle nor copy
@dataclass(frozen=True, slots=True)
class Refusal:
    """Why an action is not allowed: ``rule`` is the rule family (``double``, ``split``, ...),
    ``option`` the profile option enforced, where one is (None: the game's own procedure)."""

    reason: str
    rule: str
    option: str | None = None


def _house(rules: Rules, text: str) -> str:
    return f"{rules.name} {text}"


# -- hit and stand ----------------------------------------------------------------------------


def takes_card(rules: Rules, hand: Hand) -> bool:
    """Does the hand in play take a card now: its first two, a doubled hand's one card, or a hit
    on a live hand below 21 (split aces take one card each where ``split_aces_one_card``)."""
    n = len(hand.cards)
    if n < 2:
        return True
    if hand.doubled:
        return n == 2
    if hand.split_aces and rules.split_aces_one_card:
        return False
    return hand.status == "active" and hand.total < 21


def may_hit(rules: Rules, hand: Hand) -> bool:
    """A hit is the player's choice of a third or later card (not a hand's first two, not a double's)."""
    return len(hand.cards) >= 2 and not hand.doubled and takes_card(rules, hand)


def stand_refusal(hand: Hand) -> Refusal | None:
    if len(hand.cards) < 2:
        return Refusal("a split hand takes its second card first", "split")
    if hand.doubled:
        return Refusal("a doubled hand takes its one card", "double")
    return None


# -- double -----------------------------------------------------------------------------------


def doubles_on(double_on: str, low: int, soft: bool) -> bool:
    """The ``double_on`` option for a two-card hand totalling ``low`` with aces as one.

    ``9-11`` and ``10-11`` count an ace as one or eleven (A8 and A9 are 9 and 10 with the ace as
    one); ``hard-9-11`` needs a hand without a soft ace.
    """
    if double_on == "any":
        return True
    if double_on == "9-11":
        return 9 <= low <= 11
    if double_on == "hard-9-11":
        return not soft and 9 <= low <= 11
    return 10 <= low <= 11  # "10-11"


_DOUBLE_ON_TEXT = {
    "10-11": "allows doubling only on 10 or 11",
    "9-11": "allows doubling only on 9, 10 or 11",
    "hard-9-11": "allows doubling only on a hard 9, 10 or 11",
}


def double_refusal(rules: Rules, hand: Hand) -> Refusal | None:
    """May this hand double at all (the amount is :func:`double_amount`'s question)?"""
    if len(hand.cards) != 2 or hand.doubled:
        return Refusal("doubling is allowed on the first two cards of a hand only", "double")
    if hand.total == 21:
        return Refusal("no double on blackjack or a two-card 21 (NJ 19:47-2.10(a))", "double")
    if hand.from_split and not rules.double_after_split:
        return Refusal(_house(rules, "does not allow doubling after a split"), "double", "double_after_split")
    if hand.split_aces and rules.split_aces_one_card:
        return Refusal("split aces receive one card each", "double", "split_aces_one_card")
    if not doubles_on(rules.double_on, hand.hard_total, hand.soft):
        return Refusal(_house(rules, _DOUBLE_ON_TEXT[rules.double_on]), "double", "double_on")
    return None


def double_amount(rules: Rules, wager: int, amount: int | None, min_bet: int) -> int | Refusal:
    """The amount a double adds: the wager, or less where ``double_for_less`` allows it."""
    if amount is None or amount == wager:
        return wager
    if not rules.double_for_less:
        return Refusal(_house(rules, f"requires the double to equal the wager ({format_money(wager)})"),
                       "double", "double_for_less")
    if amount > wager:
        return Refusal(f"a double may not exceed the wager ({format_money(wager)})", "double", "double_for_less")
    if rules.double_min_table_min and amount < min_bet:
        return Refusal(f"a double for less must be at least the table minimum ({format_money(min_bet)})",
                       "double", "double_min_table_min")
    return amount


# -- split ------------------------------------------------------------------------------------


def is_pair(rules: Rules, a: str, b: str) -> bool:
    """Two cards the rules let a player split: identical ranks, or any two of one value (``split_by``)."""
    return a[0] == b[0] if rules.split_by == "rank" else VALUE[a] == VALUE[b]


def split_amount_refusal(wager: int, amount: int) -> Refusal | None:
    """A split puts up an amount equal to the original wager (NY 4620.5(k)(2) "an equal amount must be wagered
    on the other"; every rule text here says the same): any other amount is refused, not played as equal."""
    if amount != wager:
        return Refusal(f"a split wagers an amount equal to the original wager ({format_money(wager)}), "
                       f"not {format_money(amount)}", "split")
    return None


def split_refusal(rules: Rules, spot: Spot, hand: Hand) -> Refusal | None:
    if len(hand.cards) != 2 or hand.doubled:
        return Refusal("only a two-card hand can be split", "split")
    a, b = hand.cards
    if not is_pair(rules, a, b):
        if VALUE[a] == VALUE[b]:
            return Refusal(_house(rules, "splits identical ranks only"), "split", "split_by")
        return Refusal("not a pair", "split")
    limit = rules.effective_max_hands
    if limit and len(spot.hands) >= limit:
        return Refusal(_house(rules, f"allows at most {limit} hands per spot"), "split", "max_hands")
    if hand.split_aces and not rules.resplit_aces:
        return Refusal(_house(rules, "does not allow resplitting aces"), "split", "resplit_aces")
    return None


# -- surrender --------------------------------------------------------------------------------


def surrender_refusal(
    rules: Rules, spot: Spot, *, up_card: str, third_card_dealt: bool, active: tuple[int, int] | None
) -> Refusal | None:
    """Late surrender: the spot's only hand, on its turn; European: any spot's first two cards,
    not against an ace, and only before the first player's third card (european-6deck SURRENDER)."""
    hand = spot.hands[0]
    if rules.surrender == "none":
        return Refusal(_house(rules, "does not offer surrender"), "surrender", "surrender")
    if len(spot.hands) != 1 or len(hand.cards) != 2 or hand.doubled:
        return Refusal("surrender is allowed on the first two cards only, before any other decision", "surrender")
    if hand.status == "blackjack" or hand.payout is not None:
        return Refusal("a natural is not surrendered", "surrender")
    if rules.surrender == "european":
        if VALUE[up_card] == 1:
            return Refusal("no surrender against a dealer ace (European rules)", "surrender", "surrender")
        if third_card_dealt:
            return Refusal("surrender closes when the first player receives a third card (European rules)",
                           "surrender", "surrender")
        if hand.status not in ("waiting", "active"):
            return Refusal("this hand has already been played", "surrender")
    elif active != (spot.number, 0):
        return Refusal("not this spot's turn", "surrender")
    return None


# -- insurance and even money -----------------------------------------------------------------


def even_money_refusal(rules: Rules, hand: Hand) -> Refusal | None:
    if not rules.even_money:
        return Refusal(_house(rules, "does not offer even money"), "even_money", "even_money")
    if not hand.is_natural:
        return Refusal("even money is offered on a natural only", "even_money")
    return None


def insurance_amount(rules: Rules, wager: int, amount: int | None, min_bet: int) -> int | Refusal:
    """The insurance a spot may take: exactly half the wager (``half``), or up to half and at
    least half the table minimum where the profile says so (``up_to_half``)."""
    half = wager // 2
    if amount is None:
        amount = half
    if rules.insurance == "half":
        if amount * 2 != wager:
            if wager % 2 == 0:
                return Refusal(_house(rules, f"requires insurance of exactly half the wager ({format_money(half)})"),
                               "insurance", "insurance")
            return Refusal("half of this wager is not a whole number of cents", "insurance", "insurance")
    else:
        if amount > half:
            return Refusal(f"insurance may be at most half the wager ({format_money(half)})", "insurance", "insurance")
        # european-6deck: half the minimum bet on the table, i.e. the limits in force (the pit may change them)
        least = min_bet // 2 if rules.insurance_min_half_table_min else 1
        if amount < least:
            return Refusal(f"insurance must be at least half the table minimum ({format_money(least)})",
                           "insurance", "insurance_min_half_table_min")
    if amount <= 0:
        return Refusal("insurance must be more than zero", "insurance", "insurance")
    return amount


def hit_refusal(rules: Rules, hand: Hand) -> Refusal | None:
    """May the hand in play take a card at the player's say?"""
    if may_hit(rules, hand):
        return None
    if hand.doubled:
        return Refusal("a doubled hand receives one card only", "double")
    if hand.split_aces and rules.split_aces_one_card:
        return Refusal("split aces receive one card each", "split", "split_aces_one_card")
    return Refusal(f"the hand stands on {hand.total}", "hit")
