"""Citations in a profile file: the clause each option's comment cites and the bound written beside it.

DESIGN: "Each option that a rule text sets cites its clause in a comment". The comment is the one place a
citation is written; this module makes it machine-readable: the clause (the text before the first ": ",
prefixed with the profile's ``clause_prefix``; none for a house choice) and the range the clause leaves a
table, written once at the end of the comment::

    decks = 4          # (a)(2): one to four decks shuffled together [1 to 4]
    max_bet = "5"      # (f)(2): maximum bet $5 [at most 5]
    min_bet = "5"      # HOUSE RULES: Min bet $5, "may be increased" [at least 5]
    double_on = "10-11"  # (l)(1): first two cards total 10 or 11 [fixed]

``fixed``: the clause sets the value, a table may not override it. A range (money in dollars, as the file
writes it) bounds a number. ``one of A, B``: the values the clause leaves a table (``ties``). ``at most 3 at 7
spots, 4 at 6 spots``: a count the clause sets by the table's size (the hands a spot may split into: 0, unlimited,
is above every figure). No bound: the rule text leaves the option to the house. :func:`bound_refusal`
is the one check; :mod:`controller.profiles` holds every path that sets an option to it (the profile file, a
table config's [rules], a scenario's rules) and hands the bounds of the limits to the engine's
``limits_refusal`` (its limits event, and so ``set_limits``).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

from controller.game.money import MoneyError, format_money, parse_money

#: keys of a profile file that are not options (no citation)
NOT_OPTIONS = frozenset({"name", "description", "clause_prefix"})


def option_citations(text: str) -> dict[str, str]:
    """Each option of a profile's TOML text -> the clause its inline comment cites (DESIGN: "Each option that
    a rule text sets cites its clause in a comment"; "house choice" where no text sets it). The comments are
    the one place the citations are written; this makes them machine-readable for refusals and reports.
    A bound at the end of a comment (``[fixed]``, ``[1 to 4]``, ...) is not part of the citation: see
    :func:`parse_citations`."""
    return {key: _BOUND_AT_END.sub("", comment).rstrip() for key, comment in _option_comments(text).items()}


def _option_comments(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("["):
            break  # a table's keys (e.g. max_hands_by_spots) are not options of their own
        key, eq, value = line.partition("=")
        key = key.strip()
        if not eq or line.startswith((" ", "\t", "#")) or not key.isidentifier() or key in NOT_OPTIONS:
            continue
        in_string, escaped = False, False
        for i, ch in enumerate(value):
            if escaped:
                escaped = False
            elif ch == "\\" and in_string:
                escaped = True
            elif ch == '"':
                in_string = not in_string
            elif ch == "#" and not in_string:
                comment = value[i + 1:].strip()
                if comment:
                    out[key] = comment
                break
    return out


#: a bracketed group at the end of a comment is a bound, and must read as one (a typo is refused, not ignored)
_BOUND_AT_END = re.compile(r"\s*\[([^\]\[]*)\]\s*$")
_HOUSE_CHOICE = ("house choice", "not set by", "not stated")
_MONEY_OPTIONS = frozenset({"min_bet", "max_bet"})


@dataclass(frozen=True, slots=True)
class Bound:
    """What a clause lets a table set an option to: the value it fixes, or a range (either end open)."""

    text: str  # as written: "fixed", "1 to 4", "at most 5", "at least 5", "one of A, B", "at most 3 at 7 spots"
    fixed: bool = False
    low: float | None = None  # in the option's unit: cents for money
    high: float | None = None
    choices: tuple[str, ...] = ()  # "one of": the values allowed
    by_spots: tuple[tuple[int, int], ...] = ()  # "at most N at S spots, ...": (spots, most) pairs; 0 = unlimited

    def most_at(self, spots: int) -> int | None:
        """The most a table of ``spots`` may set (a by-size bound), or None when the clause names no such size."""
        return dict(self.by_spots).get(spots)

    def range(self, value: Any) -> tuple[float | None, float | None]:
        """(low, high) with a fixed bound read as the profile's own ``value``."""
        return (value, value) if self.fixed else (self.low, self.high)

    def shown(self, option: str) -> str:
        """The bound as a lab reads it, money as money."""
        if self.fixed:
            return "fixed"
        if self.choices or self.by_spots:
            return self.text
        low, high = (None if v is None else show_value(option, v) for v in (self.low, self.high))
        if low is not None and high is not None:
            return f"{low} to {high}"
        return f"at most {high}" if high is not None else f"at least {low}"


@dataclass(frozen=True, slots=True)
class Citation:
    """One option's citation: the comment, the clause it names in full (None: house choice), its bound."""

    option: str
    comment: str
    clause: str | None
    bound: Bound | None

    @property
    def quoted(self) -> str:
        """What the comment says of the clause (after its name), e.g. ``maximum bet $5``."""
        return self.comment.partition(": ")[2] if self.clause is not None else self.comment

    def name(self) -> str:
        """The clause and what the comment quotes of it, e.g. ``NY 4620.5(f)(2): maximum bet $5``."""
        if self.clause is None:
            return self.comment
        return f"{self.clause}: {self.quoted}" if self.quoted else self.clause


def show_value(option: str, value: Any) -> str:
    """An option's value as a profile file writes it (money as money, booleans as true/false)."""
    if option in _MONEY_OPTIONS and isinstance(value, int | float) and not isinstance(value, bool):
        return format_money(int(value))
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, list):
        return "[" + ", ".join(show_value(option, v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {show_value(option, v)}" for k, v in value.items()) + "}"
    return str(value)


def _bound_number(option: str, text: str) -> float:
    text = text.strip().strip('"$')
    if option in _MONEY_OPTIONS:
        return float(parse_money(text))
    return float(text)


_BY_SPOTS = re.compile(r"(\d+) at (\d+) spots?")


def _parse_by_spots(option: str, text: str) -> Bound:
    """``at most 3 at 7 spots, 4 at 6 spots``: the most for each table size the clause names."""
    pairs = []
    for part in text.removeprefix("at most ").split(","):
        m = _BY_SPOTS.fullmatch(part.strip())
        if m is None or int(m.group(1)) < 1:
            raise ValueError(f"{option}: bound [{text}] is not 'at most N at S spots, ...' with counts from 1")
        pairs.append((int(m.group(2)), int(m.group(1))))
    return Bound(text, by_spots=tuple(pairs))


def _parse_bound(option: str, text: str) -> Bound:
    """``fixed``, ``A to B``, ``at most B``, ``at least A``, ``one of A, B``, ``at most N at S spots, ...``
    (ValueError naming the bound otherwise)."""
    try:
        if text == "fixed":
            return Bound(text, fixed=True)
        if text.startswith("one of "):
            choices = tuple(c.strip() for c in text.removeprefix("one of ").split(","))
            if not all(choices):
                raise ValueError
            return Bound(text, choices=choices)
        if text.startswith("at most ") and " at " in text.removeprefix("at most "):
            return _parse_by_spots(option, text)
        if text.startswith("at most "):
            return Bound(text, high=_bound_number(option, text.removeprefix("at most ")))
        if text.startswith("at least "):
            return Bound(text, low=_bound_number(option, text.removeprefix("at least ")))
        low, _, high = text.partition(" to ")
        bound = Bound(text, low=_bound_number(option, low), high=_bound_number(option, high))
    except (ValueError, MoneyError) as e:
        if str(e).startswith(f"{option}: bound"):
            raise
        raise ValueError(f"{option}: bound [{text}] is not 'fixed', 'A to B', 'at most B', 'at least A' with "
                         "numbers, 'one of A, B' or 'at most N at S spots, ...'") from None
    if bound.low is not None and bound.high is not None and bound.high < bound.low:
        raise ValueError(f"{option}: bound [{text}] is empty")
    return bound


def clause_of(comment: str, prefix: str = "") -> str | None:
    """The clause a citation names, in full (``prefix`` + the text before the first ": "), or None when the
    comment says the option is the house's choice."""
    text = _BOUND_AT_END.sub("", comment).strip()
    if not text or text.lower().startswith(_HOUSE_CHOICE):
        return None
    head = text.partition(": ")[0].strip()
    return f"{prefix}{head}"


def parse_citations(text: str, prefix: str = "") -> dict[str, Citation]:
    """Each option of a profile's TOML text -> its :class:`Citation` (clause and bound), or ValueError
    naming an option whose bound cannot be read. (Cached by text: a scenario or table loads the same
    profile file again and again.)"""
    return dict(_parsed(text, prefix))


@functools.lru_cache(maxsize=64)
def _parsed(text: str, prefix: str) -> tuple[tuple[str, Citation], ...]:
    out: list[tuple[str, Citation]] = []
    for option, comment in _option_comments(text).items():
        m = _BOUND_AT_END.search(comment)
        bound = _parse_bound(option, m.group(1)) if m else None
        plain = _BOUND_AT_END.sub("", comment).rstrip()
        clause = clause_of(plain, prefix)
        if bound is not None and clause is None:
            raise ValueError(f"{option}: a bound needs the clause that sets it, not a house choice")
        out.append((option, Citation(option, plain, clause, bound)))
    return tuple(out)


def plain_number(option: str, value: Any) -> int | float | None:
    """An override's raw value as the number its bound compares (cents for money), or None when it is none."""
    if option in _MONEY_OPTIONS:
        try:
            return parse_money(value)
        except MoneyError:
            return None
    return value if type(value) in (int, float) else None


def bound_refusal(profile: str, cited: Citation, value: Any, shipped: Any, spots: int | None = None) -> str | None:
    """Why ``value`` for the option is outside what its clause allows (``shipped``: the profile's own value,
    which a fixed bound keeps; ``spots``: the table's size, which a by-size bound reads, unchecked without it),
    naming the clause; None when inside or unbounded."""
    bound, option = cited.bound, cited.option
    if bound is None:
        return None
    clause, quoted = cited.clause, cited.quoted
    why = f" ({quoted})" if quoted else ""
    if bound.choices:
        if value in bound.choices:
            return None
        return f"{option} = {show_value(option, value)} refused: {clause} allows {bound.text}{why}"
    if bound.by_spots:
        return None if spots is None else _by_spots_refusal(cited, value, spots, why)
    if bound.fixed:
        if value == shipped:
            return None
        return (f"{option} = {show_value(option, value)} refused: {clause} fixes it at "
                f"{show_value(option, shipped)}{why}; a table may not override it")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"{option} = {show_value(option, value)} refused: {clause} allows {bound.shown(option)}{why}"
    if (bound.low is not None and value < bound.low) or (bound.high is not None and value > bound.high):
        return f"{option} = {show_value(option, value)} refused: {clause} allows {bound.shown(option)}{why}"
    return None


def _by_spots_refusal(cited: Citation, value: Any, spots: int, why: str) -> str | None:
    """A count (0: unlimited) against the clause's figure for the table's size; a table of sizes (``{"7": 3}``)
    entry by entry against the sizes the clause names."""
    bound, option = cited.bound, cited.option
    assert bound is not None
    counts = ([(int(k), v) for k, v in value.items() if int(k) in dict(bound.by_spots)] if isinstance(value, dict)
              else [(spots, value)])
    for size, count in counts:
        most = bound.most_at(size)
        if most is None:
            return (f"{option} = {show_value(option, value)} refused: {cited.clause} allows {bound.text}, "
                    f"not a table of {size} spots{why}")
        if not isinstance(count, int) or isinstance(count, bool) or count == 0 or count > most:
            return (f"{option} = {show_value(option, value)} refused: {cited.clause} allows at most {most} hands "
                    f"at {size} spots (0 is unlimited){why}")
    return None


_NOT_OPTIONS = frozenset({"name", "description", "clause_prefix"})
