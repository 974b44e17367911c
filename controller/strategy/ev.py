"""Expected value of every player decision, by recursion over the dealer's outcome probabilities.

How it works
------------
Cards are handled by blackjack *value* (1 = ace ... 10 = any ten-value card); a shoe is a
tuple of 11 counts indexed by value (index 0 unused).

For one *situation* (the player's first two cards ``i <= j`` and the dealer's up card ``u``)
the shoe left after removing those three cards is known exactly. From it:

1. **The dealer.** :func:`dealer_outcomes` walks every sequence of dealer cards, removing each
   card drawn from the shoe (exact finite-shoe arithmetic, memoised on the multiset drawn), and
   returns the probability of a dealer blackjack and the distribution of the dealer's final
   total (17..21 or bust) given no blackjack. S17 and H17 are both handled.
2. **The player.** The player's own draws come from that same depleted shoe (after the up card,
   the two player cards and, under a peek, the knowledge that the hole card does not make a
   blackjack), held fixed while the player hits: the classic "composition-dependent for the
   first two cards and the up card" approximation. Stand, hit (optimal continuation by total),
   double, split (with resplits to ``max_hands``, DAS, aces rules, split by rank or value) and
   surrender are computed for that situation in :func:`situation_ev`.
3. **The hole card.** A peeked up card, or ``dealer_blackjack_takes = "original"``, makes the
   decision EVs conditional on no dealer blackjack (the blackjack costs the original wager only,
   whatever the player would have done); otherwise ("all", European no-hole-card) a dealer
   blackjack is one more dealer outcome against which every wager put out, doubles and splits
   included, is lost.

Money is measured in units of the initial wager; all EVs are the player's (positive = player wins).
Everything here is pure arithmetic on floats; results are cached per rule set.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from controller.game.dealer import stands
from controller.game.legality import doubles_on
from controller.game.rules import Rules

#: Dealer outcome slots: 0..4 = final 17..21, 5 = bust, 6 = blackjack.
BUST = 5
BLACKJACK = 6

Shoe = tuple[int, ...]
Dist = tuple[float, ...]

#: Unlimited resplits (``max_hands = 0``) are computed to this many hands; the probability of
#: reaching it is below 1e-9 for every pair, so the figure is exact to the digits we print.
UNLIMITED_HANDS = 16


def full_shoe(decks: int) -> Shoe:
    """Card counts by value (index 1 = aces ... 10 = ten-values) of ``decks`` fresh decks."""
    return (0, *(4 * decks for _ in range(1, 10)), 16 * decks)


def remove(shoe: Shoe, *values: int) -> Shoe:
    """``shoe`` with one card of each of ``values`` taken out."""
    counts = list(shoe)
    for v in values:
        if counts[v] <= 0:
            raise ValueError(f"no card of value {v} left in the shoe")
        counts[v] -= 1
    return tuple(counts)


def blackjack_hole(up: int) -> int:
    """The hole-card value that makes a dealer blackjack with ``up`` (0 if none can)."""
    return 10 if up == 1 else 1 if up == 10 else 0


#: Dealer outcomes worked out before and handed in (:func:`remember_dealer_outcomes`): taken instead of the recursion.
_remembered: dict[tuple[Shoe, int, bool], tuple[float, Dist]] = {}


@lru_cache(maxsize=8192)
def dealer_outcomes(shoe: Shoe, up: int, hits_soft_17: bool) -> tuple[float, Dist]:
    """``(P(dealer blackjack), final-total distribution given no blackjack)`` for up card ``up``.

    ``shoe`` is what is left after the up card (and any player cards) came out. The distribution
    has six slots: totals 17, 18, 19, 20, 21 and bust. Exact: each dealer card drawn is removed.
    """
    remembered = _remembered.get((shoe, up, hits_soft_17))
    if remembered is not None:
        return remembered
    return _dealer_recursion(shoe, up, hits_soft_17)


def _dealer_recursion(shoe: Shoe, up: int, hits_soft_17: bool) -> tuple[float, Dist]:
    n = sum(shoe)
    memo: dict[int, list[float]] = {}
    counts = shoe

    def rec(code: int, drawn: int, low: int, ace: bool) -> list[float]:
        # code: 4 bits per value counting the cards the dealer drew (after the up card)
        total = low + 10 if ace and low + 10 <= 21 else low
        if total > 21:
            out = [0.0] * 6
            out[BUST] = 1.0
            return out
        if stands(total, total != low, hits_soft_17):  # the engine's rule (soft: an ace counted as eleven)
            out = [0.0] * 6
            out[total - 17] = 1.0
            return out
        cached = memo.get(code)
        if cached is not None:
            return cached
        acc = [0.0] * 6
        left = n - drawn
        for v in range(1, 11):
            c = counts[v] - ((code >> (4 * v)) & 15)
            if c <= 0:
                continue
            p = c / left
            sub = rec(code + (1 << (4 * v)), drawn + 1, low + v, ace or v == 1)
            for k in range(6):
                acc[k] += p * sub[k]
        memo[code] = acc
        return acc

    bj_hole = blackjack_hole(up)
    p_bj = counts[bj_hole] / n if bj_hole else 0.0
    dist = [0.0] * 6
    for h in range(1, 11):
        if h == bj_hole or counts[h] == 0:
            continue
        p = counts[h] / n
        sub = rec(1 << (4 * h), 1, up + h, up == 1 or h == 1)
        for k in range(6):
            dist[k] += p * sub[k]
    norm = 1.0 - p_bj
    return p_bj, tuple(d / norm for d in dist)


@dataclass(frozen=True, slots=True)
class Context:
    """The parts of :class:`Rules` the arithmetic reads, as a hashable value (cache key)."""

    decks: int
    hits_soft_17: bool
    peek_on: frozenset[int]
    takes_all: bool
    natural_pays: float
    ties: str
    double_on: str
    das: bool
    split_by: str
    max_hands: int
    resplit_aces: bool
    split_aces_one_card: bool
    surrender: str
    surrender_lost_to_blackjack: bool

    @classmethod
    def of(cls, rules: Rules) -> Context:
        num, den = rules.natural_pays
        return cls(
            decks=rules.decks,
            hits_soft_17=rules.dealer_hits_soft_17,
            peek_on=rules.peek_on if rules.hole_card == "peek" else frozenset(),
            takes_all=rules.dealer_blackjack_takes == "all",
            natural_pays=num / den,
            ties=rules.ties,
            double_on=rules.double_on,
            das=rules.double_after_split,
            split_by=rules.split_by,
            max_hands=rules.effective_max_hands,
            resplit_aces=rules.resplit_aces,
            split_aces_one_card=rules.split_aces_one_card,
            surrender=rules.surrender,
            surrender_lost_to_blackjack=rules.surrender_lost_to_blackjack,
        )

    def peeked(self, up: int) -> bool:
        return up in self.peek_on and blackjack_hole(up) != 0

    def conditional(self, up: int) -> bool:
        """Are decisions valued given no dealer blackjack (blackjack costs the original bet only)?"""
        return self.peeked(up) or not self.takes_all

    def may_double(self, low: int, ace: bool) -> bool:
        """The engine's own ``double_on`` rule (two cards holding an ace are soft)."""
        return doubles_on(self.double_on, low, ace)

    def surrender_allowed(self, up: int) -> bool:
        if self.surrender == "late":
            return True
        return self.surrender == "european" and up != 1


@dataclass(frozen=True, slots=True)
class SituationEV:
    """EV (units of the initial wager) of each first decision for cards ``i, j`` against ``up``.

    An action the rules do not allow for this hand is ``None``. ``natural`` is the value of a
    natural (the hand is then not played). ``p_blackjack`` is the chance the dealer holds one.
    """

    up: int
    i: int
    j: int
    p_blackjack: float
    stand: float
    hit: float
    double: float | None
    split: float | None
    surrender: float | None
    natural: float | None

    def actions(self) -> dict[str, float]:
        """Allowed actions and their EV (a natural has the single action ``"natural"``)."""
        if self.natural is not None:
            return {"natural": self.natural}
        out = {"stand": self.stand, "hit": self.hit}
        if self.double is not None:
            out["double"] = self.double
        if self.split is not None:
            out["split"] = self.split
        if self.surrender is not None:
            out["surrender"] = self.surrender
        return out

    def best(self) -> tuple[str, float]:
        acts = self.actions()
        name = max(acts, key=acts.__getitem__)
        return name, acts[name]


class _Player:
    """Stand / hit / double EVs for a fixed player draw distribution and dealer distribution."""

    __slots__ = ("best", "ctx", "dbl", "hit_ev", "p", "stand_by_total")

    def __init__(self, ctx: Context, p: Sequence[float], dist7: Sequence[float]) -> None:
        self.ctx = ctx
        self.p = p
        tie = 0.0 if ctx.ties == "push" else -1.0
        bj = dist7[BLACKJACK]
        bust = dist7[BUST]
        stand = [0.0] * 22
        below = 0.0  # dealer totals (17..) strictly below t
        for t in range(22):
            if t < 17:
                stand[t] = bust - (1.0 - bust)
                continue
            k = t - 17
            above = 1.0 - bust - bj - below - dist7[k]
            stand[t] = bust + below - above - bj + tie * dist7[k]
            below += dist7[k]
        self.stand_by_total = stand
        # best[low][ace] = max(stand, hit) for a hand of hard total ``low`` (aces as 1)
        best = [[-1.0, -1.0] for _ in range(32)]
        hit_ev = [[-1.0, -1.0] for _ in range(32)]
        for low in range(21, 1, -1):
            for a in (0, 1):
                total = low + 10 if a and low <= 11 else low
                h = 0.0
                for v in range(1, 11):
                    nl = low + v
                    h += p[v] * (best[nl][1 if (a or v == 1) else 0] if nl <= 21 else -1.0)
                hit_ev[low][a] = h
                s = stand[total]
                best[low][a] = s if s >= h else h
        self.best = best
        self.hit_ev = hit_ev
        dbl = [[-2.0, -2.0] for _ in range(32)]
        for low in range(2, 22):
            for a in (0, 1):
                d = 0.0
                for v in range(1, 11):
                    nl = low + v
                    if nl > 21:
                        d -= p[v]
                    else:
                        d += p[v] * stand[nl + 10 if (a or v == 1) and nl <= 11 else nl]
                dbl[low][a] = 2.0 * d
        self.dbl = dbl

    def stand(self, low: int, ace: bool) -> float:
        return self.stand_by_total[low + 10 if ace and low <= 11 else low]

    def split(self, v: int, q_resplit: float) -> float | None:
        """EV of splitting a pair of value ``v`` (both wagers), or None if the rules forbid it."""
        ctx = self.ctx
        n_max = ctx.max_hands if ctx.max_hands else UNLIMITED_HANDS
        if n_max < 2:
            return None
        p = self.p
        aces = v == 1
        one_card = aces and ctx.split_aces_one_card
        # EV of one split hand holding v and then a second card c (no further split)
        hand_ev = [0.0] * 11
        for c in range(1, 11):
            low = v + c
            ace = aces or c == 1
            if one_card:
                hand_ev[c] = self.stand(low, ace)
                continue
            e = self.best[low][1 if ace else 0]
            if ctx.das and ctx.may_double(low, ace):
                d = self.dbl[low][1 if ace else 0]
                if d > e:
                    e = d
            hand_ev[c] = e
        mean = sum(p[c] * hand_ev[c] for c in range(1, 11))
        can_resplit = ctx.resplit_aces if aces else True
        q = q_resplit if can_resplit and n_max > 2 else 0.0
        if q <= 0.0:
            return 2.0 * mean
        e_nonpair = (mean - q * hand_ev[v]) / (1.0 - q)
        e_stuck = hand_ev[v]
        nonpair, stuck = _split_counts(q, n_max)
        return nonpair * e_nonpair + stuck * e_stuck


@lru_cache(maxsize=4096)
def _split_counts(q: float, n_max: int) -> tuple[float, float]:
    """Expected numbers of split hands that end with a non-pair second card / with a pair card
    that may not be split again, when each second card pairs with probability ``q`` and a spot
    may hold ``n_max`` hands (infinite-deck model of resplitting)."""
    memo: dict[tuple[int, int], tuple[float, float]] = {}

    def f(hands: int, pending: int) -> tuple[float, float]:
        if pending == 0:
            return 0.0, 0.0
        key = (hands, pending)
        got = memo.get(key)
        if got is not None:
            return got
        a, b = f(hands, pending - 1)
        nonpair = (1.0 - q) * (1.0 + a)
        stuck = (1.0 - q) * b
        if hands < n_max:
            c, d = f(hands + 1, pending + 1)
            nonpair += q * c
            stuck += q * d
        else:
            nonpair += q * a
            stuck += q * (1.0 + b)
        memo[key] = (nonpair, stuck)
        return nonpair, stuck

    return f(2, 2)


def _player_draws(shoe: Shoe, up: int, conditional: bool) -> list[float]:
    """The player's draw distribution by value: the shoe less the (unknown) hole card, given
    no dealer blackjack when ``conditional``."""
    n = sum(shoe)
    bj_hole = blackjack_hole(up)
    if not conditional or not bj_hole or shoe[bj_hole] == 0:
        return [c / n for c in shoe]
    # E[(shoe - e_hole) / (n - 1) | hole != bj_hole]
    rest = n - shoe[bj_hole]
    return [
        (shoe[v] - (0.0 if v == bj_hole else shoe[v] / rest)) / (n - 1) if v else 0.0 for v in range(11)
    ]


@lru_cache(maxsize=65536)
def situation_ev(ctx: Context, i: int, j: int, up: int) -> SituationEV:
    """All first-decision EVs for player cards ``i, j`` (values) against up card ``up``."""
    if i > j:
        i, j = j, i
    shoe = remove(full_shoe(ctx.decks), i, j, up)
    p_bj, dist = dealer_outcomes(shoe, up, ctx.hits_soft_17)
    cond = ctx.conditional(up)
    if cond:
        dist7: tuple[float, ...] = (*dist, 0.0)
    else:
        dist7 = (*(d * (1.0 - p_bj) for d in dist), p_bj)
    natural = i == 1 and j == 10
    if natural:
        lose_tie = ctx.ties == "house_wins"
        nat = (1.0 - p_bj) * ctx.natural_pays + p_bj * (-1.0 if lose_tie else 0.0)
        return SituationEV(up, i, j, p_bj, nat, nat, None, None, None, nat)
    p = _player_draws(shoe, up, cond)
    pl = _Player(ctx, p, dist7)
    low = i + j
    ace = i == 1
    a = 1 if ace else 0
    stand = pl.stand(low, ace)
    hit = pl.hit_ev[low][a]
    double = pl.dbl[low][a] if ctx.may_double(low, ace) else None
    split: float | None = None
    if i == j:
        q = p[i]
        if i == 10 and ctx.split_by == "rank":
            # a ten pairs again only with its own rank: one of the four ten ranks
            q = p[10] / 4.0
        split = pl.split(i, q)
    if cond and p_bj:
        # the dealer's blackjack takes the original wager whatever was decided
        w = 1.0 - p_bj
        stand, hit = w * stand - p_bj, w * hit - p_bj
        double = None if double is None else w * double - p_bj
        split = None if split is None else w * split - p_bj
    surrender: float | None = None
    if ctx.surrender_allowed(up):
        # after a peek the player never faces the blackjack: it took the whole (original) bet
        on_bj = -1.0 if ctx.peeked(up) or ctx.surrender_lost_to_blackjack else -0.5
        surrender = -0.5 * (1.0 - p_bj) + on_bj * p_bj
    return SituationEV(up, i, j, p_bj, stand, hit, double, split, surrender, None)


def deal_probability(decks: int, i: int, j: int, up: int) -> float:
    """Probability that the player's first two cards are values ``{i, j}`` (either order) and the
    dealer's up card is ``up``, dealt from a full shoe."""
    shoe = list(full_shoe(decks))
    n = sum(shoe)
    prob = 1.0
    for k, v in enumerate((i, j, up)):
        prob *= shoe[v] / (n - k)
        shoe[v] -= 1
    return prob * (2.0 if i != j else 1.0)


def same_rank_fraction(decks: int) -> float:
    """Chance that two ten-value cards share a rank (a pair under ``split_by = "rank"``)."""
    per_rank = 4 * decks
    return (per_rank - 1) / (16 * decks - 1)


def insurance_ev(decks: int, i: int, j: int) -> float:
    """EV per unit of an insurance bet (pays 2:1) with player cards ``i, j`` against an ace."""
    shoe = remove(full_shoe(decks), i, j, 1)
    p_ten = shoe[10] / sum(shoe)
    return 2.0 * p_ten - (1.0 - p_ten)


def player_hand_values() -> list[tuple[int, int]]:
    """The 55 two-card player hands by value, ``i <= j``."""
    return [(i, j) for i in range(1, 11) for j in range(i, 11)]


#: One dealer outcome as :func:`dealer_table` gives it: the shoe, the up card, whether the dealer hits soft 17,
#: P(blackjack) and the six-slot distribution.
DealerEntry = tuple[Shoe, int, bool, float, Dist]


def dealer_table(rules: Rules) -> list[DealerEntry]:
    """The dealer's outcomes of every starting situation of ``rules`` (550: each up card against each two-card
    hand, off the top of a full shoe): nine tenths of the arithmetic of :func:`situation_ev` and the house edge,
    which a table may keep (a function of the rules alone) and hand back to :func:`remember_dealer_outcomes`."""
    ctx = Context.of(rules)
    table: list[DealerEntry] = []
    for up in range(1, 11):
        for i, j in player_hand_values():
            shoe = remove(full_shoe(ctx.decks), i, j, up)
            table.append((shoe, up, ctx.hits_soft_17, *dealer_outcomes(shoe, up, ctx.hits_soft_17)))
    return table


def remember_dealer_outcomes(entries: Sequence[DealerEntry]) -> None:
    """Take dealer outcomes :func:`dealer_table` worked out before (the caller vouches for them: kept under a key,
    checked): :func:`dealer_outcomes` returns them instead of walking the dealer's cards again."""
    for shoe, up, hits_soft_17, p_bj, dist in entries:
        _remembered[(tuple(shoe), up, hits_soft_17)] = (p_bj, tuple(dist))


def stand_ev_table(rules: Rules, up: int) -> list[float]:
    """Infinite-deck-style EV of standing on totals 0..21 against ``up`` (after a peek when the
    rules peek): handy for hand checks. Uses the shoe with only the up card removed."""
    ctx = Context.of(rules)
    shoe = remove(full_shoe(ctx.decks), up)
    p_bj, dist = dealer_outcomes(shoe, up, ctx.hits_soft_17)
    dist7 = (*dist, 0.0) if ctx.conditional(up) else (*(d * (1 - p_bj) for d in dist), p_bj)
    pl = _Player(ctx, _player_draws(shoe, up, ctx.conditional(up)), dist7)
    return list(pl.stand_by_total)


@lru_cache(maxsize=4096)
def _player_of(ctx: Context, i: int, j: int, up: int) -> tuple[_Player, float, bool]:
    shoe = remove(full_shoe(ctx.decks), i, j, up)
    p_bj, dist = dealer_outcomes(shoe, up, ctx.hits_soft_17)
    cond = ctx.conditional(up)
    dist7 = (*dist, 0.0) if cond else (*(d * (1.0 - p_bj) for d in dist), p_bj)
    return _Player(ctx, _player_draws(shoe, up, cond), dist7), p_bj, cond


def hand_evs(ctx: Context, i: int, j: int, up: int, low: int, ace: bool) -> tuple[float, float]:
    """``(stand, hit)`` EV, units of the hand's wager, of a hand that began with values ``i, j``
    against ``up`` and now holds hard total ``low`` (``ace``: it holds an ace), after hits.

    The same shoe, dealer distribution and hole-card conditioning as :func:`situation_ev`, so its
    numbers compare with that function's (for the two-card hand they are its ``stand`` and ``hit``):
    what a decision after a hit is worth, for the ratings' cost of a departure from basic strategy."""
    if i > j:
        i, j = j, i
    player, p_bj, cond = _player_of(ctx, i, j, up)
    stand = player.stand(low, ace)
    hit = player.hit_ev[low][1 if ace else 0] if low <= 21 else -1.0
    if cond and p_bj:
        w = 1.0 - p_bj
        stand, hit = w * stand - p_bj, w * hit - p_bj
    return stand, hit
