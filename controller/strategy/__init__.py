"""Blackjack strategy: exact decision EVs, the basic strategy chart and the theoretical house edge.

Pure arithmetic (no I/O): :mod:`.ev` computes the expected value of every decision by recursion
over the dealer's outcome probabilities; :mod:`.chart` derives the total-dependent basic strategy
and its fast ``decide``; :mod:`.edge` weights it into the house edge; :mod:`.player` drives the
real round engine with basic-strategy players for the bench.
"""

from __future__ import annotations

from controller.strategy.chart import BasicStrategy, basic_strategy
from controller.strategy.edge import EdgeReport, house_edge

__all__ = ["BasicStrategy", "EdgeReport", "basic_strategy", "house_edge"]
