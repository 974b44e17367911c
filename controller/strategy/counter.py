"""Card counting (Hi-Lo) and the simulated regulars who sit at one spot: a counter and two honest bettors.

Pure arithmetic: the Hi-Lo tags, the true count, the Illustrious 18 index plays (Schlesinger, *Blackjack
Attack*: the count-based departures from basic strategy that matter most) and a 1-to-12 bet ramp. Both
sides of the table use it: :mod:`controller.analytics.advantage` judges what spots did against the count, and
:class:`controller.sim.dealer.SimulatedDealer` seats the players of this module (``tablectl demo
--counter-spot N``, ``benchmarks/advantage_play.py``) so the judging can be tried on someone who counts.

A regular decides only from what a real player sees: the cards dealt face up so far in the shoe. Before
a round, every card dealt since the shuffle has been seen by then, except the burn card(s) at its start
(:func:`seen_before_round`); in a round, the cards on the layout (the dealer's up card, every hand). Each
choice is a function of the shoe, the table's count of cards dealt and the round number, so a demo killed
and resumed makes the same ones (nothing is kept that a restart would lose).
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal

from controller.game.cards import VALUE

if TYPE_CHECKING:
    from controller.game.view import TableView

#: Hi-Lo tag by card value (1 = ace): low cards +1, 7-9 neutral, tens and aces -1
HI_LO: Final[dict[int, int]] = {1: -1, 2: 1, 3: 1, 4: 1, 5: 1, 6: 1, 7: 0, 8: 0, 9: 0, 10: -1}
#: the fewest decks the true count divides by (half a deck: the count is not blown up at the shoe's end)
MIN_DECKS: Final = 0.5
#: the counter's ramp: units = clamp(TC rounded - 1, 1, 12)
MAX_UNITS: Final = 12


def tag(card: str) -> int:
    """The Hi-Lo tag of one card (``"TD"``: -1)."""
    return HI_LO[VALUE[card]]


def running_count(cards: Iterable[str | None]) -> int:
    """The Hi-Lo running count of the cards seen (None: a card not seen, e.g. a face-down hole card)."""
    return sum(HI_LO[VALUE[c]] for c in cards if c is not None)


def decks_remaining(cards_out: int, cards_in_shoe: int) -> float:
    """Decks left in the shoe once ``cards_out`` cards left it (never under :data:`MIN_DECKS`)."""
    return max((cards_in_shoe - cards_out) / 52.0, MIN_DECKS)


def true_count(running: int, cards_out: int, cards_in_shoe: int) -> float:
    """The running count per deck left: what a counter bets and plays by."""
    return running / decks_remaining(cards_out, cards_in_shoe)


def ramp_units(tc: float) -> int:
    """The counter's bet in units: ``clamp(round(TC) - 1, 1, 12)``, TC rounded half up: one unit below
    +2.5, two from +2.5, three from +3.5, ... twelve from +12.5."""
    return min(max(math.floor(tc + 0.5) - 1, 1), MAX_UNITS)


def clamp_bet(amount: int, min_bet: int, max_bet: int) -> int:
    return min(max(amount, min_bet), max_bet)


def seen_before_round(shoe: Sequence[str], cards_dealt: int, burn: int) -> tuple[list[str], int]:
    """The cards a player has seen before a round's deal, and how many have left the shoe.

    ``cards_dealt`` is the table's count for the shoe (every card of the settled rounds, whose hole cards
    were turned); the first ``burn`` are burnt face down, unseen, and count as out even before the dealer
    burns them (so the answer does not depend on whether the burn came before or after the first bets)."""
    out = max(cards_dealt, burn)
    return list(shoe[burn:cards_dealt]), out


# -- index plays ---------------------------------------------------------------------------------------------

Kind = Literal["hard", "pair", "insurance"]


@dataclass(frozen=True, slots=True)
class IndexPlay:
    """A count-based departure: ``play`` instead of the basic ``instead_of`` when the true count is at least
    ``index`` (``above``) or below it (not ``above``). ``total`` is the hard total, or the pair's card value."""

    name: str
    kind: Kind
    total: int
    up: int  # dealer's up card value, 1 = ace
    index: int
    above: bool
    play: str
    instead_of: str

    def applies(self, tc: float) -> bool:
        return tc >= self.index if self.above else tc < self.index


def _p(name: str, kind: Kind, total: int, up: int, index: int, play: str, instead_of: str) -> IndexPlay:
    """In the Illustrious 18 a hit is the play below its index; every other play is due at or above it."""
    return IndexPlay(name, kind, total, up, index, play != "hit", play, instead_of)


#: the Illustrious 18 (Hi-Lo, shoe games): stand/double/split/insure at or above the index, hit below it
ILLUSTRIOUS_18: Final[tuple[IndexPlay, ...]] = (
    _p("insurance", "insurance", 0, 1, 3, "insurance", "no_insurance"),
    _p("16 v T", "hard", 16, 10, 0, "stand", "hit"),
    _p("15 v T", "hard", 15, 10, 4, "stand", "hit"),
    _p("T,T v 5", "pair", 10, 5, 5, "split", "stand"),
    _p("T,T v 6", "pair", 10, 6, 4, "split", "stand"),
    _p("10 v T", "hard", 10, 10, 4, "double", "hit"),
    _p("12 v 3", "hard", 12, 3, 2, "stand", "hit"),
    _p("12 v 2", "hard", 12, 2, 3, "stand", "hit"),
    _p("11 v A", "hard", 11, 1, 1, "double", "hit"),
    _p("9 v 2", "hard", 9, 2, 1, "double", "hit"),
    _p("10 v A", "hard", 10, 1, 4, "double", "hit"),
    _p("9 v 7", "hard", 9, 7, 3, "double", "hit"),
    _p("16 v 9", "hard", 16, 9, 5, "stand", "hit"),
    _p("13 v 2", "hard", 13, 2, -1, "hit", "stand"),
    _p("12 v 4", "hard", 12, 4, 0, "hit", "stand"),
    _p("12 v 5", "hard", 12, 5, -2, "hit", "stand"),
    _p("12 v 6", "hard", 12, 6, -1, "hit", "stand"),
    _p("13 v 3", "hard", 13, 3, -2, "hit", "stand"),
)
_BY_SITUATION: Final[dict[tuple[Kind, int, int], IndexPlay]] = {(p.kind, p.total, p.up): p for p in ILLUSTRIOUS_18}


def index_play(cards: Sequence[str], up: int, basic: str) -> IndexPlay | None:
    """The index play for this hand against ``up`` whose basic alternative is ``basic`` (None: none).

    Only plays that depart from what basic strategy does here count: where basic strategy surrenders 16 v T,
    say, the stand-at-0 play is not a departure from it. The count decides whether the play is due
    (:meth:`IndexPlay.applies`)."""
    if len(cards) == 2 and VALUE[cards[0]] == VALUE[cards[1]] == 10:
        play = _BY_SITUATION.get(("pair", 10, up))
        if play is not None and play.instead_of == basic:
            return play
    total = sum(VALUE[c] for c in cards)
    if any(VALUE[c] == 1 for c in cards) and total <= 11:
        return None  # soft: no Illustrious 18 play
    play = _BY_SITUATION.get(("hard", total, up))
    if play is None or play.instead_of != basic or (play.play == "double" and len(cards) != 2):
        return None
    return play


INSURANCE: Final = _BY_SITUATION[("insurance", 0, 1)]


# -- the regulars ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CountView:
    """What a player at the table knows of the shoe now: the Hi-Lo running count of the cards seen, and how
    many cards have left a shoe of ``cards_in_shoe``."""

    running: int
    cards_out: int
    cards_in_shoe: int

    @property
    def true(self) -> float:
        return true_count(self.running, self.cards_out, self.cards_in_shoe)


class Regular:
    """A player who sits at ``spot`` every round; by default plays as the simulated crowd does (None)."""

    kind = "crowd"

    def __init__(self, spot: int) -> None:
        self.spot = spot

    def wager(self, count: CountView, min_bet: int, max_bet: int, round_no: int) -> int:
        raise NotImplementedError

    def play(self, cards: Sequence[str], up: int, basic: str, legal: set[str], count: CountView) -> str | None:
        """The action for a hand, or None: the crowd's (basic strategy with the seed's slips)."""
        return None

    def insure(self, count: CountView) -> bool | None:
        """Take insurance (True), decline (False), or as the crowd does (None)."""
        return None


class CountingPlayer(Regular):
    """Counts Hi-Lo, bets :func:`ramp_units` times the table minimum, plays basic strategy with the Illustrious
    18 (``index_plays``), insures at true count +3 and above, and never slips."""

    kind = "counter"

    def __init__(self, spot: int, *, index_plays: bool = True) -> None:
        super().__init__(spot)
        self.index_plays = index_plays

    def wager(self, count: CountView, min_bet: int, max_bet: int, round_no: int) -> int:
        return clamp_bet(ramp_units(count.true) * min_bet, min_bet, max_bet)

    def play(self, cards: Sequence[str], up: int, basic: str, legal: set[str], count: CountView) -> str | None:
        if self.index_plays:
            play = index_play(cards, up, basic)
            if play is not None and play.applies(count.true) and (play.play in legal or play.play == "hit"):
                return play.play
        return basic

    def insure(self, count: CountView) -> bool | None:
        return self.index_plays and INSURANCE.applies(count.true)


class FlatBettor(Regular):
    """Bets ``units`` times the table minimum every round, whatever the count: an honest regular."""

    kind = "flat"

    def __init__(self, spot: int, units: int = 2) -> None:
        super().__init__(spot)
        self.units = units

    def wager(self, count: CountView, min_bet: int, max_bet: int, round_no: int) -> int:
        return clamp_bet(self.units * min_bet, min_bet, max_bet)


class RandomBettor(Regular):
    """Bets a whole number of table minimums drawn uniformly from ``low..high`` each round, seeded by the seed,
    the spot and the round, unrelated to the count: a spread as wide as a counter's, without the count."""

    kind = "random"

    def __init__(self, spot: int, seed: int, low: int = 1, high: int = MAX_UNITS) -> None:
        super().__init__(spot)
        self.seed, self.low, self.high = seed, low, high

    def wager(self, count: CountView, min_bet: int, max_bet: int, round_no: int) -> int:
        units = random.Random(f"random-bettor:{self.seed}:{self.spot}:{round_no}").randint(self.low, self.high)
        return clamp_bet(units * min_bet, min_bet, max_bet)


# -- at a simulated table (controller/sim/dealer.py) -----------------------------------------------------------


def count_before_round(shoe: Sequence[str], table: TableView) -> CountView:
    """What a player knows before the next round's deal: every card of the shoe's settled rounds."""
    seen, out = seen_before_round(shoe, table.cards_dealt, table.rules.burn)
    return CountView(running_count(seen), out, table.rules.cards_in_shoe)


def count_in_round(shoe: Sequence[str], table: TableView) -> CountView:
    """What a player knows during a round: the cards before it, and those on the layout now (the dealer's up
    card and every hand's cards; the hole card is face down)."""
    seen, _ = seen_before_round(shoe, table.cards_before_round, table.rules.burn)
    layout = [c for s in table.spots.values() for h in s.hands for c in h.cards] + list(table.dealer[:1])
    out = max(table.cards_dealt, table.rules.burn)
    return CountView(running_count(seen) + running_count(layout), out, table.rules.cards_in_shoe)


def seat_regulars(regulars: Mapping[int, Regular], seats: dict[int, tuple[int, str]], shoe: Sequence[str],
                  table: TableView, round_no: int) -> dict[int, tuple[int, str]]:
    """The crowd's ``seats`` (spot -> (cents, player)) with each regular at its spot, betting as it bets."""
    if not regulars:
        return seats
    count = count_before_round(shoe, table)
    out = {spot: seat for spot, seat in seats.items() if spot not in regulars}
    limit = table.rules.multi_spot_max_players
    if limit and len({p for _, p in out.values()}) + len(regulars) >= limit:  # then one spot a player
        first: dict[str, int] = {}
        for spot in sorted(out):
            first.setdefault(out[spot][1], spot)
        out = {spot: out[spot] for spot in first.values()}
    for spot, regular in regulars.items():
        out[spot] = (regular.wager(count, table.min_bet, table.max_bet, round_no), f"{regular.kind}{spot}")
    return out
