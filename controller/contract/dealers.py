"""Dealer ids (DESIGN.md, "The dealer on duty"): what a badge or a pit supervisor may name as the dealer on duty.

A dealer id has the shape of a user name (:data:`controller.contract.roles.USER_PATTERN`): 1 to 64 of
``a-z 0-9 . _ -``, the whole string, so it travels in topics, journals and reports without quoting and no
look-alike letter passes for another dealer. The engine, the pit's command, the console's badge frame and the
dashboard (through the generated JSON) all check it here.
"""

from __future__ import annotations

from typing import Final

from controller.contract.names import NAME_PATTERN, why_not_a_name

__all__ = ["DEALER_PATTERN", "check_dealer"]

#: a dealer id: 1 to 64 of a-z 0-9 . _ - (lower case ASCII); the whole id (the shape of a user name)
DEALER_PATTERN: Final = NAME_PATTERN


def check_dealer(dealer: object) -> str | None:
    """Why ``dealer`` is not a dealer id, in one line, or None when it is one."""
    return why_not_a_name("dealer id", dealer)
