"""Money as integer cents; decimal strings or whole dollars at the edges (DESIGN.md).

Never a binary float: ``"7.50"`` parses to 750 and 750 formats back to ``"7.50"``;
whole amounts format without cents (``500`` -> ``"5"``) as DESIGN's examples show.
"""

from __future__ import annotations

import re
from functools import lru_cache

_AMOUNT = re.compile(r"^(-)?([0-9]{1,9})(?:\.([0-9]{1,2}))?$")  # ASCII digits only: int() reads others too


class MoneyError(ValueError):
    """An amount that is not a decimal string with at most two places or a whole number."""


def parse_money(value: object) -> int:
    """Cents from ``"7.50"``, ``"5"`` or the integer ``5`` (dollars). Floats are refused."""
    if isinstance(value, bool):  # JSON true/false: not a number at all (bool is an int to Python)
        raise MoneyError(f"amount {'true' if value else 'false'} is a boolean, not an amount: write a decimal "
                         "string like \"7.50\" or a whole number")
    if isinstance(value, float):
        raise MoneyError(f"amount {value!r} must be a decimal string like \"7.50\" or a whole number, not a float")
    if isinstance(value, int):
        if abs(value) >= 10**9:
            raise MoneyError(f"amount {value!r} is out of range")
        return value * 100
    if not isinstance(value, str):
        raise MoneyError(f"amount {value!r} must be a decimal string like \"7.50\" or a whole number")
    m = _AMOUNT.match(value.strip())
    if m is None:
        raise MoneyError(f"amount {value!r} is not a decimal with at most two places, like \"7.50\"")
    sign, whole, frac = m.groups()
    cents = int(whole) * 100 + (int(frac.ljust(2, "0")) if frac else 0)
    return -cents if sign else cents


@lru_cache(maxsize=64)  # every state formats the same few wagers, payouts and limits (issue #40: the card's path)
def format_money(cents: int) -> str:
    """``"7.50"`` for 750, ``"5"`` for 500, ``"-2.50"`` for -250."""
    sign = "-" if cents < 0 else ""
    whole, frac = divmod(abs(cents), 100)
    return f"{sign}{whole}" if frac == 0 else f"{sign}{whole}.{frac:02d}"


def format_money_fixed(cents: int) -> str:
    """Always two places (``"1240.00"``), as the ``totals`` of the state snapshot show."""
    sign = "-" if cents < 0 else ""
    whole, frac = divmod(abs(cents), 100)
    return f"{sign}{whole}.{frac:02d}"
