"""The house rules one table plays, as a plain frozen value the pure core reads.

Profiles (``config/profiles/*.toml``) are validated by :mod:`controller.profiles`
with pydantic and turned into this object; the engine never touches pydantic on
the hot path. Field names are the profile keys of DESIGN.md (a contract); money
is integer cents. Each field's comment says which rule text gives the option.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass, field
from typing import Any, Literal

from controller.game.money import format_money

HoleCard = Literal["peek", "no_peek", "none"]
Ties = Literal["push", "push_naturals_only", "house_wins"]
DoubleOn = Literal["any", "9-11", "hard-9-11", "10-11"]
SplitBy = Literal["rank", "value"]
Insurance = Literal["none", "half", "up_to_half"]
Surrender = Literal["none", "late", "european"]
DealerBlackjackTakes = Literal["original", "all"]

#: Natural payouts the rule texts name, as (numerator, denominator).
NATURAL_PAYS: dict[str, tuple[int, int]] = {"3:2": (3, 2), "6:5": (6, 5), "2:1": (2, 1), "1:1": (1, 1)}


@dataclass(frozen=True, slots=True)
class Rules:
    """Every option of the rule texts in ``shared/rules``; defaults are a plain US shoe game."""

    name: str = "custom"
    decks: int = 6
    spots: int = 7
    min_bet: int = 500  # cents
    max_bet: int = 50000
    #: a player may cover several spots only while fewer than this many players sit (0 = always)
    multi_spot_max_players: int = 0
    dealer_hits_soft_17: bool = False
    hole_card: HoleCard = "peek"
    #: up-card values (1 = ace, 10 = ten-value) on which the dealer peeks
    peek_on: frozenset[int] = frozenset({1, 10})
    dealer_blackjack_takes: DealerBlackjackTakes = "original"
    natural_pays: tuple[int, int] = (3, 2)
    ties: Ties = "push"
    double_on: DoubleOn = "any"
    double_for_less: bool = False
    #: a double for less must still be at least the table minimum (European text)
    double_min_table_min: bool = False
    double_after_split: bool = True
    split_by: SplitBy = "rank"
    max_hands: int = 4  # 0 = unlimited
    #: per table size (spots) override of max_hands (house-rules-shoe-game-surrender)
    max_hands_by_spots: tuple[tuple[int, int], ...] = ()
    resplit_aces: bool = False
    split_aces_one_card: bool = True
    insurance: Insurance = "half"
    #: the European minimum insurance: half the table minimum
    insurance_min_half_table_min: bool = False
    even_money: bool = True
    surrender: Surrender = "none"
    #: a surrendered wager is lost in full when the dealer turns out to hold blackjack
    surrender_lost_to_blackjack: bool = False
    #: pay a natural at once when the up card cannot make a dealer blackjack
    naturals_paid_at_once: bool = True
    burn: int = 1
    penetration: float = 0.75
    #: hand-dealt games keep a second cutting card at least a third from the back (NJ 19:47-2.5(i))
    second_cut_card: bool = False
    dealt_from_hand: bool = False
    deck_change_hours: float = 24.0
    deck_change_warning_minutes: float = 30.0
    #: two deck sets alternate: one is shuffled while the other is dealt (NJ 19:47-2.2(e))
    deck_sets: int = 1
    #: the range the rule text allows the table minimum, in cents (0: open at that end), from the bound
    #: written beside min_bet's citation in the profile, and that clause (``min_bet_floor_rule`` names the
    #: clause of both ends); the engine's limits event, and so ``set_limits``, is held to it
    min_bet_floor: int = field(default=0, compare=False)
    min_bet_floor_rule: str = field(default="house choice", compare=False)
    min_bet_ceiling: int = field(default=0, compare=False)
    #: the same for the table maximum (``max_bet_ceiling_rule`` names the clause of both ends)
    max_bet_floor: int = field(default=0, compare=False)
    max_bet_ceiling: int = field(default=0, compare=False)
    max_bet_ceiling_rule: str = field(default="house choice", compare=False)
    #: free-text citations, key -> clause, kept for reports
    citations: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    def __reduce__(self) -> tuple[type[Rules], tuple[Any, ...]]:
        # pickled and copied by its fields, in order (compiled, a frozen dataclass cannot set them one by one)
        return (Rules, tuple(getattr(self, f.name) for f in dataclasses.fields(self)))

    @property
    def cards_in_shoe(self) -> int:
        return self.decks * 52

    @property
    def effective_max_hands(self) -> int:
        """Hands one spot may split into at this table size (0 = unlimited)."""
        for spots, hands in self.max_hands_by_spots:
            if spots == self.spots:
                return hands
        return self.max_hands

    @property
    def cut_card_index(self) -> int:
        """How many cards leave the shoe before the cut card comes out."""
        return int(self.cards_in_shoe * self.penetration)

    @property
    def insurance_min(self) -> int:
        return self.min_bet // 2 if self.insurance_min_half_table_min else 1


def limits_refusal(rules: Rules, min_bet: int, max_bet: int) -> str | None:
    """Why the table limits ``min_bet``..``max_bet`` (cents) are outside what the profile's rule text
    allows, naming the clause; None when they are inside. The one check of the engine's limits event
    and of ``set_limits``; the bounds come from the profile's citations (``controller.profiles``), as
    do those of a per-table override. (The bounds take no part in the rules digest: they bound what the
    pit may ask, not how a round is played or replayed.)"""
    r = rules
    if r.max_bet_ceiling and max_bet > r.max_bet_ceiling:
        return (f"max_bet {format_money(max_bet)} is above {format_money(r.max_bet_ceiling)}, the most "
                f"{r.name} allows ({r.max_bet_ceiling_rule})")
    if r.max_bet_floor and max_bet < r.max_bet_floor:
        return (f"max_bet {format_money(max_bet)} is below {format_money(r.max_bet_floor)}, the least "
                f"{r.name} allows ({r.max_bet_ceiling_rule})")
    if r.min_bet_floor and min_bet < r.min_bet_floor:
        return (f"min_bet {format_money(min_bet)} is below {format_money(r.min_bet_floor)}, the least "
                f"{r.name} allows ({r.min_bet_floor_rule})")
    if r.min_bet_ceiling and min_bet > r.min_bet_ceiling:
        return (f"min_bet {format_money(min_bet)} is above {format_money(r.min_bet_ceiling)}, the most "
                f"{r.name} allows ({r.min_bet_floor_rule})")
    return None


# ---------------------------------------------------------------------------------------------- the rules as data
# A journal holds the rules it was played under (DESIGN: the profile is bound to the journal by digest): the
# ``rules_changed`` input carries them as JSON, and a replay plays each round under the rules then in force.


class RulesFormatError(ValueError):
    """Journaled rules that do not decode to :class:`Rules`."""


def _plain(value: Any) -> Any:
    if isinstance(value, frozenset | set):
        return sorted(_plain(v) for v in value)
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value


def rules_digest(rules: Rules) -> str:
    """A short digest of every rule that matters (citations excluded): changes when the profile does."""
    values = {f.name: _plain(getattr(rules, f.name)) for f in dataclasses.fields(rules) if f.compare}
    text = repr(sorted(values.items()))  # plain values only: repr is stable across runs and engines
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def rules_to_json(rules: Rules) -> dict[str, Any]:
    """Every field of ``rules`` (citations and the limits' bounds included) as plain JSON values."""
    return {f.name: _plain(getattr(rules, f.name)) for f in dataclasses.fields(rules)}


_DEFAULTS = Rules()


def _pair_of(value: Any, kind: type) -> bool:
    return isinstance(value, list) and len(value) == 2 and all(type(v) is kind for v in value)


def _typed(name: str, value: Any, default: Any) -> Any:
    if isinstance(default, frozenset):
        if not isinstance(value, list) or not all(type(v) is int for v in value):
            raise RulesFormatError(f"{name}: a list of whole numbers expected, not {value!r}")
        return frozenset(value)
    if name == "natural_pays":
        if not _pair_of(value, int):
            raise RulesFormatError(f"{name}: a pair of whole numbers expected, not {value!r}")
        return tuple(value)
    if isinstance(default, tuple):  # max_hands_by_spots (ints), citations (strings): a list of pairs
        kind = str if name == "citations" else int
        if not isinstance(value, list) or not all(_pair_of(v, kind) for v in value):
            raise RulesFormatError(f"{name}: a list of pairs of {kind.__name__} expected, not {value!r}")
        return tuple(tuple(v) for v in value)
    if isinstance(default, bool | str):
        if type(value) is not type(default):
            raise RulesFormatError(f"{name}: {type(default).__name__} expected, not {value!r}")
        return value
    if isinstance(default, float):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise RulesFormatError(f"{name}: a number expected, not {value!r}")
        return float(value)
    if type(value) is not int:
        raise RulesFormatError(f"{name}: a whole number expected, not {value!r}")
    return value


def rules_from_json(data: Any) -> Rules:
    """The :class:`Rules` :func:`rules_to_json` wrote (a field missing takes its default: written by an
    older version); anything else is a :class:`RulesFormatError` naming the field."""
    if not isinstance(data, dict):
        raise RulesFormatError(f"rules: an object expected, not {type(data).__name__}")
    names = {f.name for f in dataclasses.fields(Rules)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise RulesFormatError(f"rules: unknown fields {unknown}")
    return Rules(**{name: _typed(name, value, getattr(_DEFAULTS, name)) for name, value in data.items()})
