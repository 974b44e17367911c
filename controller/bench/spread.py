"""The spread of a round's net, measured on the real engine: each hand's variance and two hands' covariance.

Every hand at a table plays against the same dealer hand, so the hands of one round are not independent: their
nets per unit of wager correlate (about 0.37 for a shoe game: a dealer's bust pays them all). A round's variance
is therefore ``sigma^2 x sum(w_i^2) + covariance x sum over i != j of (w_i x w_j)``, and both figures are measured
here per set of rules by playing ``spots`` basic-strategy spots on :class:`controller.strategy.player.BenchTable`
(the bench's seeded streams, :func:`controller.bench.stream`), reading each spot's net after each round.

Per round ``r`` with the spots' nets per unit ``x_1..x_k`` (doubles and splits inside each spot's net):
``a_r = sum x_i^2`` and ``b_r = (sum x_i)^2 - a_r`` (the sum over ordered pairs ``i != j`` of ``x_i x_j``). With
``m`` the mean net per hand, ``variance = mean(a_r) / k - m^2`` and ``covariance = mean(b_r) / (k (k - 1)) - m^2``;
their standard errors are those of the means of ``a_r`` and ``b_r`` (the rounds of a shoe are nearly independent
for basic strategy, which ignores the cards already seen).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from controller.bench import blocks, stream
from controller.game.rules import Rules
from controller.strategy.chart import BasicStrategy, basic_strategy
from controller.strategy.player import BenchTable, bench_wager

__all__ = ["Moments", "measure"]


@dataclass(slots=True)
class Moments:
    """Running sums over rounds of ``spots`` hands each (nets per unit of initial wager)."""

    spots: int
    rounds: int = 0
    s1: float = 0.0  # sum of the nets
    a: float = 0.0  # sum over rounds of a_r
    aa: float = 0.0  # sum of a_r^2
    b: float = 0.0  # sum over rounds of b_r
    bb: float = 0.0  # sum of b_r^2

    def add(self, nets: list[float]) -> None:
        s = sum(nets)
        a = sum(x * x for x in nets)
        b = s * s - a
        self.rounds += 1
        self.s1 += s
        self.a += a
        self.aa += a * a
        self.b += b
        self.bb += b * b

    @property
    def mean(self) -> float:
        """The mean net of one hand per unit (the players' side: about minus the house edge)."""
        return self.s1 / (self.rounds * self.spots)

    @property
    def variance(self) -> float:
        """The variance of one hand's net per unit of initial wager squared."""
        return max(self.a / (self.rounds * self.spots) - self.mean ** 2, 0.0)

    @property
    def covariance(self) -> float:
        """The covariance of two hands' nets in the same round, per unit of wager product (0 with one spot)."""
        k = self.spots
        return self.b / (self.rounds * k * (k - 1)) - self.mean ** 2 if k > 1 else 0.0

    def _se(self, total: float, squares: float, per: int) -> float:
        n = self.rounds
        if n < 2 or per == 0:
            return 0.0
        mean = total / n
        return math.sqrt(max(squares / n - mean * mean, 0.0) / (n - 1)) / per

    @property
    def variance_se(self) -> float:
        return self._se(self.a, self.aa, self.spots)

    @property
    def covariance_se(self) -> float:
        return self._se(self.b, self.bb, self.spots * (self.spots - 1))


def measure(rules: Rules, rounds: int, *, seed: int, spots: int, strategy: BasicStrategy | None = None) -> Moments:
    """Play ``rounds`` rounds of ``spots`` basic-strategy spots (one process: the bench's blocks and streams, so the
    figures depend on ``seed`` and ``rounds`` only) and return the hands' moments."""
    strategy = strategy or basic_strategy(rules)
    unit = bench_wager(rules)
    out = Moments(spots=spots)
    for i, n in enumerate(blocks(rounds)):
        table = BenchTable(rules, stream(seed, i), spots=spots, strategy=strategy)
        for _ in range(n):
            table.play_round()
            out.add([s.net / unit for s in table.table.order])
    return out
