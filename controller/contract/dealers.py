"""Dealer ids (DESIGN.md, "The dealer on duty"): what a badge or a pit supervisor may name as the dealer on duty.

A dealer id has the shape of a user name (:data:`controller.contract.roles.USER_PATTERN`): 1 to 64 of
``a-z 0-9 . _ -``, the whole string, so it travels in topics, journals and reports without quoting and no
look-alike letter passes for another dealer. The engine, the pit's command, the console's badge frame and the
dashboard (through the generated JSON) all check it here.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["DEALER_PATTERN", "check_dealer"]

#: a dealer id: 1 to 64 of a-z 0-9 . _ - (lower case ASCII); the whole id
DEALER_PATTERN: Final = r"[a-z0-9._-]{1,64}"
_DEALER: Final = re.compile(DEALER_PATTERN)


def check_dealer(dealer: object) -> str | None:
    """Why ``dealer`` is not a dealer id, in one line, or None when it is one."""
    if not isinstance(dealer, str):
        return f"dealer id must be a string of 1 to 64 of a-z 0-9 . _ -, not {type(dealer).__name__}"
    if _DEALER.fullmatch(dealer):
        return None
    if not dealer.strip():
        return "dealer id is blank"
    if len(dealer) > 64:
        return f"dealer id is {len(dealer)} characters long (at most 64)"
    bad = next(c for c in dealer if not _DEALER.fullmatch(c))
    shown = dealer if len(dealer) <= 40 else dealer[:37] + "..."
    return f"dealer id {shown!r} holds {bad!r} (U+{ord(bad):04X}): only a-z 0-9 . _ - (lower case) are allowed"
