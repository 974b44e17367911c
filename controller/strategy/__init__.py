"""Blackjack strategy: exact decision EVs, the basic strategy chart and the theoretical house edge.

Pure arithmetic (no I/O): :mod:`.ev` computes the expected value of every decision by recursion
over the dealer's outcome probabilities; :mod:`.chart` derives the total-dependent basic strategy
and its fast ``decide``; :mod:`.edge` weights it into the house edge; :mod:`.player` drives the
real round engine with basic-strategy players for the bench.
"""

from __future__ import annotations

from controller import compiled_portion

# the compiled engine chosen (controller/__init__.py), this package's compiled modules are found before its sources
__path__[:0] = compiled_portion(__name__)

from controller.strategy.chart import BasicStrategy, basic_strategy  # noqa: E402 - found through __path__, above
from controller.strategy.edge import EdgeReport, house_edge  # noqa: E402

__all__ = ["BasicStrategy", "EdgeReport", "basic_strategy", "house_edge"]
