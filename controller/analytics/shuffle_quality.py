"""The shuffle-quality monitor: does a new shoe still carry the order its cards were dealt in before?

Pure (no I/O, no clock, no randomness). The table sees each shoe only as far as the cut card (and the
round that finishes after it), and a 6-8 deck shoe holds several copies of every card, so no physical
card can be followed from one shoe to the next. The three traces are therefore measured on card
*identities*, on the cards seen in both shoes, each against what a good shuffle would leave, which is
known exactly for a shoe of ``decks`` full decks (every identity ``decks`` times):

* **rising sequences**: a one-pass riffle leaves the previous shoe's order as a few rising sequences,
  so a card's successor in the previous shoe turns up a few cards *later* in the new one. Counted: pairs
  of new-shoe cards at most :data:`RISING_WINDOW` apart that were neighbours in the previous shoe, in
  that order (``forward``) and reversed (``backward``). A good shuffle makes both equally likely, so
  ``forward`` is binomial(forward + backward, 1/2) under it; the exact tail gives the z.
* **surviving neighbour pairs**: adjacent cards of the new shoe that were adjacent, in the same order,
  in the previous one. Under a good shuffle each adjacent pair is one with probability ``p``, the share
  of the previous shoe's neighbour pairs among all ordered pairs the shoe's composition allows; the
  binomial tail gives the z.
* **position correlation**: the new shoe's positions against the mean previous position of each card's
  copies. Its mean under a good shuffle is 0 and its variance is exact (sampling without replacement).

The score is the largest of the three z (standard deviations a good shuffle would have to fall to
produce that much surviving order); the shoe fails above :data:`THRESHOLD`. The threshold and the
measured false-alarm and detection rates are in ``docs/analytics.md`` (``benchmarks/shuffle_quality.py``).

:class:`ShuffleMonitor` holds the orders: it is fed every card in the order it leaves the shoe and is
told when a shoe ends; it scores each shoe at its end (when the next shoe is shuffled), against the
previous shoe of the same deck set, with every card the table saw of both.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from statistics import NormalDist
from typing import Any

#: a shoe whose score exceeds this fails (standard deviations; tuned by benchmarks/shuffle_quality.py)
THRESHOLD = 4.0
#: how far apart (in new-shoe cards) a previous neighbour pair may land and still count as rising
RISING_WINDOW = 4
#: fewer known cards than this in either shoe: not scored (too little to tell)
MIN_CARDS = 26
#: scores kept for :meth:`ShuffleMonitor.recent`
KEEP = 20
#: z values are clamped to +-this (a probability below ~1e-300 has no z a float can hold)
Z_CAP = 37.0

_NORMAL = NormalDist()


@dataclass(frozen=True, slots=True)
class ShuffleScore:
    """One shoe judged against the previous order of its cards (see the module docstring)."""

    shoe: int | None  # the table's shuffle number of the judged shoe (None: not known)
    deck_set: str
    score: float
    threshold: float
    cards: int  # the judged shoe's known cards whose identity the previous shoe showed too
    rising_z: float
    rising_forward: int
    rising_backward: int
    pairs_z: float
    pairs_survived: int
    pairs_expected: float
    correlation_z: float
    correlation_r: float

    @property
    def passed(self) -> bool:
        return self.score <= self.threshold

    def to_json(self) -> dict[str, Any]:
        return {
            "shoe": self.shoe, "deck_set": self.deck_set, "score": round(self.score, 2),
            "threshold": self.threshold, "passed": self.passed, "cards": self.cards,
            "components": {
                "rising_sequences": {"z": round(self.rising_z, 2), "forward": self.rising_forward,
                                     "backward": self.rising_backward},
                "neighbour_pairs": {"z": round(self.pairs_z, 2), "survived": self.pairs_survived,
                                    "expected": round(self.pairs_expected, 2)},
                "position_correlation": {"z": round(self.correlation_z, 2), "r": round(self.correlation_r, 3)},
            },
        }


def _z_of_tail(p: float) -> float:
    """The z whose upper normal tail is ``p``."""
    p = min(max(p, 1e-300), 1.0 - 1e-16)
    return max(-Z_CAP, min(Z_CAP, -_NORMAL.inv_cdf(p)))


def binomial_z(k: int, n: int, p: float) -> float:
    """The z of ``k`` successes in ``n`` trials of probability ``p`` (exact upper tail, mid-p)."""
    if n <= 0 or p <= 0.0:
        return 0.0
    if p >= 1.0:
        return 0.0
    lp, lq = math.log(p), math.log1p(-p)
    lgn = math.lgamma(n + 1)

    def pmf(i: int) -> float:
        return math.exp(lgn - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * lp + (n - i) * lq)

    tail = 0.5 * pmf(k) + sum(pmf(i) for i in range(k + 1, n + 1))
    return _z_of_tail(tail)


def _rising(prev: Sequence[str | None], new: Sequence[str | None]) -> tuple[int, int]:
    succ: dict[str, set[str]] = {}
    for a, b in pairwise(prev):
        if a is not None and b is not None and a != b:
            succ.setdefault(a, set()).add(b)
    forward = backward = 0
    n = len(new)
    for y, a in enumerate(new):
        if a is None:
            continue
        after = succ.get(a)
        for b in new[y + 1:min(n, y + 1 + RISING_WINDOW)]:
            if b is None:
                continue
            if after is not None and b in after:
                forward += 1
            before = succ.get(b)
            if before is not None and a in before:
                backward += 1
    return forward, backward


def _pairs(prev: Sequence[str | None], new: Sequence[str | None], decks: int) -> tuple[int, int, float]:
    """(survived, adjacent known pairs of the new shoe, p under a good shuffle)."""
    kept = {(a, b) for a, b in pairwise(prev) if a is not None and b is not None}
    m = 52 * decks
    per_pair = decks * decks / (m * (m - 1))
    same = decks * (decks - 1) / (m * (m - 1))
    p = sum(same if a == b else per_pair for a, b in kept)
    survived = trials = 0
    for a, b in pairwise(new):
        if a is not None and b is not None:
            trials += 1
            survived += (a, b) in kept
    return survived, trials, p


def _correlation(prev: Sequence[str | None], new: Sequence[str | None], decks: int) -> tuple[float, float]:
    """(z, r): new positions against each identity's mean previous position (exact null moments)."""
    sums: dict[str, list[int]] = {}
    for x, c in enumerate(prev):
        if c is not None:
            s = sums.setdefault(c, [0, 0])
            s[0] += x
            s[1] += 1
    if not sums:
        return 0.0, 0.0
    centre = sum(s[0] for s in sums.values()) / sum(s[1] for s in sums.values())
    weight = {c: s[0] / s[1] - centre for c, s in sums.items()}
    # the population: every identity ``decks`` times (those the previous shoe never showed weigh 0)
    values = list(weight.values()) + [0.0] * (52 - len(weight))
    mean_w = sum(values) / 52
    var_w = sum((v - mean_w) ** 2 for v in values) / 52
    ys = [(y, weight.get(c, 0.0)) for y, c in enumerate(new) if c is not None]
    if len(ys) < 2 or var_w <= 0.0:
        return 0.0, 0.0
    mean_y = sum(y for y, _ in ys) / len(ys)
    s_yy = sum((y - mean_y) ** 2 for y, _ in ys)
    t = sum((y - mean_y) * w for y, w in ys)
    m = 52 * decks
    z = t / math.sqrt(s_yy * var_w * m / (m - 1))
    mean_ws = sum(w for _, w in ys) / len(ys)
    s_ww = sum((w - mean_ws) ** 2 for _, w in ys)
    r = t / math.sqrt(s_yy * s_ww) if s_ww > 0 else 0.0
    return max(-Z_CAP, min(Z_CAP, z)), r


def score_shoe(prev: Sequence[str | None], new: Sequence[str | None], decks: int, *, shoe: int | None = None,
               deck_set: str = "A", threshold: float = THRESHOLD) -> ShuffleScore | None:
    """Judge ``new`` (cards in the order they left the shoe, None where unseen) against ``prev``, the order
    the same deck set was dealt in before; None when either shows fewer than :data:`MIN_CARDS` cards."""
    known_prev = {c for c in prev if c is not None}
    if len(prev) - list(prev).count(None) < MIN_CARDS or len(new) - list(new).count(None) < MIN_CARDS:
        return None
    forward, backward = _rising(prev, new)
    rising_z = binomial_z(forward, forward + backward, 0.5)
    survived, trials, p = _pairs(prev, new, decks)
    pairs_z = binomial_z(survived, trials, p)
    corr_z, corr_r = _correlation(prev, new, decks)
    score = max(rising_z, pairs_z, corr_z)
    return ShuffleScore(
        shoe=shoe, deck_set=deck_set, score=score, threshold=threshold,
        cards=sum(1 for c in new if c is not None and c in known_prev),
        rising_z=rising_z, rising_forward=forward, rising_backward=backward,
        pairs_z=pairs_z, pairs_survived=survived, pairs_expected=trials * p,
        correlation_z=corr_z, correlation_r=corr_r,
    )


def shuffle_figures(scores: Sequence[ShuffleScore], threshold: float = THRESHOLD) -> dict[str, Any]:
    """The ``shuffle`` field of the analytics: the alarm threshold and the last shoes' scores, oldest first."""
    return {"threshold": threshold, "shoes": [s.to_json() for s in scores]}


class ShuffleMonitor:
    """The orders of the shoes a table deals, and the scores of the shoes judged so far.

    Feed it, in the order cards leave the shoe: :meth:`card` (None for a card dealt face down, whose value
    :meth:`reveal` gives later), and :meth:`new_shoe` when a shoe has been shuffled; that call judges the
    shoe that just ended against the previous shoe of the same deck set and returns its score (None when
    it could not be judged). Cards before the first :meth:`new_shoe` are ignored (a shoe seen in part).
    """

    def __init__(self, decks: int, *, threshold: float = THRESHOLD, keep: int = KEEP) -> None:
        if not 1 <= decks <= 8:
            raise ValueError(f"decks must be 1 to 8, not {decks}")
        self.decks = decks
        self.threshold = threshold
        self._previous: dict[str, list[str | None]] = {}
        self._current: list[str | None] | None = None
        self._shoe: int | None = None
        self._deck_set = "A"
        self._face_down: int | None = None
        self._frozen = False  # the rest of the current shoe is not in shoe order (a discard reshuffle)
        self._comparable = True  # the current shoe may serve as the next one's previous order
        self._forget = False  # new cards at the next shuffle: drop every previous order then
        self._scores: deque[ShuffleScore] = deque(maxlen=keep)

    def card(self, card: str | None) -> None:
        """The next card out of the shoe (None: dealt face down, its value to come with :meth:`reveal`)."""
        current = self._current
        if current is None or self._frozen:
            return
        if card is None:
            self._face_down = len(current)
        current.append(card)

    def reveal(self, card: str) -> None:
        """The value of the last card dealt face down (ignored when there is none)."""
        if self._current is not None and self._face_down is not None and not self._frozen:
            self._current[self._face_down] = card
        self._face_down = None

    def interrupt(self) -> None:
        """The shoe's order stops here (its discards were reshuffled into it): it is still judged, on the
        cards so far, but is no previous order for the next shoe (its cards were shuffled since)."""
        self._frozen = True
        self._comparable = False

    def forget(self) -> None:
        """New cards come in at the next shuffle (a deck change): the shoe being dealt is still judged at
        its end, but no shoe dealt so far is a previous order for the new cards."""
        self._forget = True
        self._comparable = False

    def reset(self, decks: int) -> None:
        """Another number of decks: every order is forgotten, the shoe being dealt included."""
        if not 1 <= decks <= 8:
            raise ValueError(f"decks must be 1 to 8, not {decks}")
        self.decks = decks
        self._previous.clear()
        self._current = None
        self._face_down, self._frozen, self._comparable, self._forget = None, False, True, False

    def new_shoe(self, shoe: int | None = None, deck_set: str = "A") -> ShuffleScore | None:
        """A shoe was shuffled: judge the one that ended, keep its order, start recording ``shoe``."""
        ended, ended_set = self._current, self._deck_set
        result = None
        if ended is not None:
            prev = self._previous.get(ended_set)
            if prev is not None:
                result = score_shoe(prev, ended, self.decks, shoe=self._shoe, deck_set=ended_set,
                                    threshold=self.threshold)
                if result is not None:
                    self._scores.append(result)
            if self._comparable:
                self._previous[ended_set] = ended
            else:
                self._previous.pop(ended_set, None)
        if self._forget:
            self._previous.clear()
        self._current, self._shoe, self._deck_set = [], shoe, deck_set
        self._face_down, self._frozen, self._comparable, self._forget = None, False, True, False
        return result

    def recent(self, n: int = 10) -> list[ShuffleScore]:
        """The last ``n`` scores, oldest first."""
        if n <= 0:
            return []
        return list(self._scores)[-n:]
