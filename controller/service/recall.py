"""The table service's name for :mod:`controller.records` (the rounds rebuilt from a journal's public records).

The reading of the records lives below both the service and the analytics, which read them too; this module
keeps the service's older import path working.
"""

from __future__ import annotations

from controller.records import (
    HISTORY_ROUNDS,
    JOURNAL_NOTES,
    PublicLog,
    RoundBuilder,
    RoundHistory,
    cents,
    last_rounds,
    rounds,
    settle_boundary,
)

__all__ = ["HISTORY_ROUNDS", "JOURNAL_NOTES", "PublicLog", "RoundBuilder", "RoundHistory", "cents", "last_rounds",
           "rounds", "settle_boundary"]
