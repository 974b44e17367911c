"""The names people and badges give (DESIGN.md, "Operators and roles", "The dealer on duty"): a user name and a
dealer id have one shape, 1 to 64 of ``a-z 0-9 . _ -`` (lower case ASCII), the whole string, so they travel in
topics, journals and reports without quoting and no look-alike letter passes for another person."""

from __future__ import annotations

import re
from typing import Final

__all__ = ["NAME_PATTERN", "why_not_a_name"]

#: a user name or a dealer id: 1 to 64 of a-z 0-9 . _ - (lower case ASCII); the whole name
NAME_PATTERN: Final = r"[a-z0-9._-]{1,64}"
_NAME: Final = re.compile(NAME_PATTERN)


def why_not_a_name(noun: str, name: object) -> str | None:
    """Why ``name`` is not a name of that shape, in one line beginning with ``noun`` ("user name", "dealer id"),
    or None when it is one."""
    if not isinstance(name, str):
        return f"{noun} must be a string of 1 to 64 of a-z 0-9 . _ -, not {type(name).__name__}"
    if _NAME.fullmatch(name):
        return None
    if not name.strip():
        return f"{noun} is blank"
    if len(name) > 64:
        return f"{noun} is {len(name)} characters long (at most 64)"
    bad = next(c for c in name if not _NAME.fullmatch(c))
    return f"{noun} {name!r} holds {bad!r} (U+{ord(bad):04X}): only a-z 0-9 . _ - (lower case) are allowed"
