"""Recall: the settled rounds of a journal, or of the central recorder's record of a table, and each as text.

The rounds are rebuilt by :mod:`controller.records` from the journal's public records only (its
outbox: exactly what was published on ``events``), so a recall never shows more than the pit saw.
The journal is opened read-only (SQLite ``mode=ro``); nothing is written to it. The recorder's record of a
table (:class:`controller.recorder.table_log.TableLog`) gives the same rounds, from any table of the floor,
without the table's PC. ``tablectl recall`` (:mod:`controller.cli.recall`) parses the arguments; the printable
page is :mod:`controller.reports.recall_html`.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from controller.errors import UsageError
from controller.game.money import MoneyError, parse_money
from controller.records import HISTORY_ROUNDS, RoundBuilder, rounds, settle_boundary

_CHUNK = 1024


class _Row(NamedTuple):
    seq: int
    body: str


class JournalLog:
    """A journal's outbox, read-only, for :mod:`controller.records`."""

    def __init__(self, path: Path) -> None:
        from controller.journal.store import read_only_connection

        self.path = path
        try:
            self._conn, self._scratch = read_only_connection(path)  # a read-only evidence copy too
        except sqlite3.DatabaseError as e:
            raise UsageError(f"{path}: not a table journal ({e})") from None
        try:
            self._open(path)
        except BaseException:
            self.close()
            raise

    def _open(self, path: Path) -> None:
        try:
            self._conn.execute("PRAGMA query_only=ON")
            tables = {str(r[0]) for r in self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if not {"outbox", "inputs"} <= tables:
                raise UsageError(f"{path}: not a table journal (no outbox)")
            self.last_seq = int(self._conn.execute("SELECT COALESCE(MAX(seq), 0) FROM outbox").fetchone()[0])
        except sqlite3.OperationalError as e:
            if "locked" in str(e) or "busy" in str(e):
                raise InUse(f"{path}: journal in use and locked by its table service ({e}); "
                            "copy it and recall from the copy") from None
            raise UsageError(f"{path}: not a table journal ({e})") from None
        except sqlite3.DatabaseError as e:
            raise UsageError(f"{path}: not a table journal ({e})") from None

    def records(self, from_seq: int = 1, to_seq: int | None = None) -> Iterator[_Row]:
        after = from_seq - 1
        last = self.last_seq if to_seq is None else to_seq
        while after < last:
            rows = self._conn.execute("SELECT seq, body FROM outbox WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT ?",
                                      (after, last, _CHUNK)).fetchall()
            if not rows:
                return
            for seq, body in rows:
                yield _Row(int(seq), str(body))
            after = int(rows[-1][0])

    def close(self) -> None:
        self._conn.close()
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)


class RecallLog(Protocol):
    """What recall reads: a journal's outbox (:class:`JournalLog`) or the recorder's record of a table."""

    @property
    def path(self) -> Any: ...

    @property
    def last_seq(self) -> int: ...

    def records(self, from_seq: int = 1, to_seq: int | None = None) -> Iterable[Any]: ...


class InUse(RuntimeError):
    """The journal cannot be read now (a runtime failure, exit 1)."""


def events(log: RecallLog, start: int = 0) -> Iterator[dict[str, Any]]:
    for row in log.records(start + 1):
        try:
            body = json.loads(row.body)
        except ValueError:
            raise UsageError(f"{log.path}: outbox record {row.seq} is not JSON") from None
        if isinstance(body, dict):
            yield body


def recall(log: RecallLog, *, last: int | None, round_no: int | None, start: int = 0) -> list[dict[str, Any]]:
    """The rounds asked for, oldest first (``start``: a seq before round ``round_no``'s first record)."""
    if round_no is not None:
        found: list[dict[str, Any]] = []
        seen: list[int] = []
        builder = RoundBuilder()
        for event in events(log, start):
            done = builder.add(event)
            if done is None:
                continue
            seen.append(done["round"])
            if done["round"] == round_no:
                found.append(done)
            elif found:
                break
        if not found:
            span = f"rounds {seen[0]} to {seen[-1]} are settled there" if seen else "no round is settled there"
            raise UsageError(f"round {round_no} is not in {log.path} ({span})")
        return found[-(last or 1):] if last is not None else found
    n = HISTORY_ROUNDS if last is None else last
    return list(rounds(events(log, settle_boundary(log, n))))[-n:]


def dealer_of(round_: dict[str, Any]) -> str | None:
    """A rebuilt round's dealer of record (:mod:`controller.records`' ``dealer_id``; None: none on duty)."""
    dealer = round_.get("dealer_id")
    return dealer if isinstance(dealer, str) else None


def dealt_by(log: RecallLog, dealer: str, *, start: int = 0, stop: int | None = None,
             seen: set[str] | None = None) -> Iterator[dict[str, Any]]:
    """The rounds ``dealer`` was the dealer of record of, oldest first: every round settled after ``start`` (up to
    the one settled at ``stop``) rebuilt, the others dropped; the dealers met are added to ``seen``."""
    builder = RoundBuilder()
    for event in events(log, start):
        done = builder.add(event)
        if done is None:
            continue
        who = dealer_of(done)
        if who == dealer:
            yield done
        elif who is not None and seen is not None:
            seen.add(who)
        if stop is not None and done["seq"][1] >= stop:
            return


def no_rounds_of(dealer: str, where: str, seen: set[str]) -> UsageError:
    """No round dealt by ``dealer`` where the recall looked: the error names the dealers who did deal there."""
    listed = ", ".join(sorted(seen)[:20]) + (f" and {len(seen) - 20} more" if len(seen) > 20 else "")
    return UsageError(f"--dealer {dealer}: no round dealt by {dealer} in {where} "
                      f"({'its dealers: ' + listed if seen else 'no round there names a dealer'})")


# ---- text -------------------------------------------------------------------------------


def when(ts: Any) -> str:
    """A record's time, UTC to the millisecond."""
    if not isinstance(ts, int | float):
        return "?"
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


def money(v: Any, signed: bool = False) -> str:
    """An amount in dollars (``signed``: a plus on a gain); as given when not money."""
    if v is None:
        return "-"
    try:
        c = parse_money(v)
    except MoneyError:
        return str(v)
    sign = "-" if c < 0 else "+" if signed and c > 0 else ""
    whole, frac = divmod(abs(c), 100)
    return f"{sign}{whole}.{frac:02d}"


def cards_text(cards: Any) -> str:
    """Cards in a line, ``??`` for one not turned."""
    return " ".join("??" if c is None else str(c) for c in cards or []) or "-"


def decision_text(d: dict[str, Any]) -> str:
    """A decision in a line: spot, hand, action, amount, who."""
    extra = f" {money(d['amount'])}" if d.get("amount") is not None else (
        f" {money(d['wager'])}" if d.get("wager") is not None else "")
    return f"spot {d.get('spot')} hand {d.get('hand')} {d.get('action')}{extra} by {d.get('by')}"


def dealt_text(r: dict[str, Any]) -> str | None:
    """Who dealt the round (its dealer of record, and the dealer who took over at its settlement), or None for a
    round journaled before tables knew their dealer."""
    if "dealer_id" not in r:
        return None
    who = dealer_of(r) or "no dealer on duty"
    if "relieved_by" not in r:
        return who
    incoming = r["relieved_by"]
    return f"{who}, relieved at its settlement by {incoming}" if isinstance(incoming, str) else \
        f"{who}, signed out at its settlement"


def to_text(r: dict[str, Any]) -> str:
    """One round as a readable block."""
    d = r["dealer"]
    lines = [f"Round {r['round']}  {when(r['started'])} to {when(r['ended'])}  (seq {r['seq'][0]}-{r['seq'][1]})"]
    dealt = dealt_text(r)
    if dealt is not None:
        lines.append(f"  dealt by {dealt}")
    blackjack = "  blackjack" if d.get("blackjack") else ""
    lines.append(f"  dealer   {cards_text(d['cards'])}  total {d['total']}{blackjack}")
    for n, spot in r["spots"].items():
        lines.append(f"  spot {n}   wager {money(spot.get('wager'))}  net {money(spot['net'], signed=True)}")
        for i, h in enumerate(spot["hands"]):
            soft = " soft" if h.get("soft") else "     "
            lines.append(f"    hand {i}  {cards_text(h['cards']):<20} {h['total']:>2}{soft}"
                         f"  wager {money(h['wager']):>8}  {h.get('status') or '-':<11} {h.get('outcome') or '-':<10}"
                         f" {money(h.get('payout'), signed=True):>9}")
        if spot.get("insurance"):
            ins = spot["insurance"]
            lines.append(f"    insurance {money(ins['wager'])}  payout {money(ins['payout'], signed=True)}")
    if r.get("insurance"):
        lines.append(f"  insurance offered{' (even money too)' if r['insurance'].get('even_money') else ''}")
    for dec in r["decisions"]:
        lines.append(f"  #{dec['seq']:<7} {decision_text(dec)}")
    for a in r["alarms"]:
        cleared = a.get("cleared")
        tail = f" (cleared #{cleared['seq']} by {cleared.get('operator') or cleared.get('by')})" if cleared else ""
        lines.append(f"  alarm #{a.get('id')} {a.get('code')}: {a.get('message')}{tail}")
    order = ", ".join(f"{c['card'] or '??'}>{target_text(c)}" for c in r["cards"])
    lines.append(f"  cards    {order}")
    return "\n".join(lines) + "\n"


def target_text(c: dict[str, Any]) -> str:
    """Where a card went: ``s1``, ``s1.1`` (a split hand), ``dealer``, ``dealer(hole)``."""
    if c["to"] == "spot":
        return f"s{c['spot']}" + (f".{c['hand']}" if c.get("hand") else "")
    if c["to"] == "dealer":
        return "dealer(hole)" if c.get("hole") else "dealer"
    return str(c["to"])
