"""``tablectl recall PATH|--db URL --table T [--key FILE] [--last N] [--round R] [--json | --html FILE]``: rounds
from a journal, or from the central recorder's database.

The rounds are rebuilt by :mod:`controller.records` from the journal's public records only (its
outbox: exactly what was published on ``events``), so a recall never shows more than the pit saw.
The journal is opened read-only (SQLite ``mode=ro``); nothing is written to it. With ``--db`` the same code
reads the bodies the recorder holds for table ``T`` (:class:`controller.recorder.table_log.TableLog`): the
same rounds, from any table of the floor, without the table's PC.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import shutil
import sqlite3
import sys
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from controller.cli import UsageError
from controller.game.money import MoneyError, parse_money
from controller.records import HISTORY_ROUNDS, RoundBuilder, rounds, settle_boundary

_CHUNK = 1024


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "recall", help="the rounds of a table's journal (cards, wagers, decisions, payouts)",
        description="Recall settled rounds from a table's journal, oldest first, from its public records "
                    "(what was published on MQTT: the hole card only once turned).")
    p.add_argument("path", metavar="PATH", nargs="?",
                   help="the table's journal (a demo's is <state-dir>/<table_id>.journal)")
    p.add_argument("--db", metavar="URL", help="read the central recorder's database instead (an SQLite path or "
                                               "postgresql://...; with --table)")
    p.add_argument("--table", metavar="T", help="with --db: the table (its id, t01; its record kept from before a "
                                                "new journal: t01@JOURNAL_ID)")
    p.add_argument("--key", metavar="FILE",
                   help="the journal key: the journal's hash chain is verified first, and a broken one refused "
                        "(exit 2 naming the first bad row), so the rounds recalled are the rounds played")
    p.add_argument("--last", type=int, default=None, metavar="N",
                   help=f"the last N settled rounds (default {HISTORY_ROUNDS})")
    p.add_argument("--round", type=int, default=None, metavar="R", help="only round R")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="one JSON list on stdout (the shape of the history topic)")
    out.add_argument("--html", metavar="FILE", help="write a printable hand history (one self-contained HTML file)")
    p.set_defaults(func=run)


class _Row(NamedTuple):
    seq: int
    body: str


class _JournalLog:
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
                raise _InUse(f"{path}: journal in use and locked by its table service ({e}); "
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


class _Log(Protocol):
    """What recall reads: a journal's outbox (:class:`_JournalLog`) or the recorder's record of a table."""

    @property
    def path(self) -> Any: ...

    @property
    def last_seq(self) -> int: ...

    def records(self, from_seq: int = 1, to_seq: int | None = None) -> Iterable[Any]: ...


class _InUse(RuntimeError):
    """The journal cannot be read now (a runtime failure, exit 1)."""


def _events(log: _Log, start: int = 0) -> Iterator[dict[str, Any]]:
    for row in log.records(start + 1):
        try:
            body = json.loads(row.body)
        except ValueError:
            raise UsageError(f"{log.path}: outbox record {row.seq} is not JSON") from None
        if isinstance(body, dict):
            yield body


def recall(log: _Log, *, last: int | None, round_no: int | None, start: int = 0) -> list[dict[str, Any]]:
    """The rounds asked for, oldest first (``start``: a seq before round ``round_no``'s first record)."""
    if round_no is not None:
        found: list[dict[str, Any]] = []
        seen: list[int] = []
        builder = RoundBuilder()
        for event in _events(log, start):
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
    return list(rounds(_events(log, settle_boundary(log, n))))[-n:]


def run(args: argparse.Namespace) -> int:
    if args.last is not None and args.last < 1:
        raise UsageError(f"--last {args.last}: must be 1 or more")
    if args.db is not None:
        return _run_db(args)
    if args.path is None:
        raise UsageError("give a journal PATH (or --db URL --table T)")
    if args.table is not None:
        raise UsageError("--table goes with --db (a journal PATH is one table's)")
    path = Path(args.path)
    if args.key is not None:
        key = Path(args.key)
        if not key.is_file() or not os.access(key, os.R_OK):
            raise UsageError(f"--key {key}: not a readable file")
    if not path.exists():
        raise UsageError(f"{path}: no such file")
    if not path.is_file():
        raise UsageError(f"{path}: not a file")
    if not os.access(path, os.R_OK):
        raise UsageError(f"{path}: not readable (permission denied)")
    if args.key is not None:
        _verify_chain(path, Path(args.key))
    try:
        log = _JournalLog(path)
    except _InUse as e:
        print(f"tablectl recall: {e}", file=sys.stderr)
        return 1
    try:
        found = recall(log, last=args.last, round_no=args.round)
    except sqlite3.DatabaseError as e:
        print(f"tablectl recall: {path}: cannot read the journal: {e}", file=sys.stderr)
        return 1
    finally:
        log.close()
    return _print(args, path.name, str(path), found)


def _run_db(args: argparse.Namespace) -> int:
    """``--db URL --table T``: the same rounds from the recorder's record of the table."""
    from controller.cli.recorder_db import DbUnavailable, known_table, open_db
    from controller.recorder.store import StoreError, StoreUnavailable
    from controller.recorder.table_log import TableLog

    if args.path is not None:
        raise UsageError("give a journal PATH or --db URL, not both")
    if args.key is not None:
        raise UsageError("--key checks a journal's chain: with --db, check the journal with "
                         "`tablectl journal verify PATH --against URL`")
    if args.table is None:
        raise UsageError("--db needs --table T (the table to recall)")
    try:
        with open_db(args.db) as store:
            known_table(store, args.table)
            log = TableLog(store, args.table)
            start = log.round_start(args.round) if args.round is not None else None
            found = recall(log, last=args.last, round_no=args.round, start=start or 0)
    except (DbUnavailable, StoreUnavailable) as e:
        print(f"tablectl recall: {e}", file=sys.stderr)
        return 1
    except StoreError as e:
        raise UsageError(f"--db: {e}") from None
    return _print(args, f"table {args.table}", log.path, found)


def _print(args: argparse.Namespace, name: str, where: str, found: list[dict[str, Any]]) -> int:
    try:
        return _output(args, name, where, found)
    except BrokenPipeError:  # `tablectl recall ... | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _verify_chain(path: Path, key_file: Path) -> None:
    """Every row of the journal's chain checks under ``key_file`` (read-only), or exit 2 naming the first bad row."""
    from controller.journal import Journal, JournalError
    from controller.journal.anchor import load_key

    try:
        with Journal.open_readonly(path, key=load_key(key_file)) as journal:
            journal.verify()
    except (JournalError, sqlite3.Error) as e:
        raise UsageError(str(e)) from None


def _output(args: argparse.Namespace, name: str, where: str, found: list[dict[str, Any]]) -> int:
    if args.json:
        print(json.dumps(found, ensure_ascii=False))
    elif args.html:
        out = Path(args.html)
        try:
            out.write_text(to_html(found, title=f"Hand history: {name}"), encoding="utf-8")
        except OSError as e:
            raise UsageError(f"--html {out}: cannot write: {e.strerror}") from None
        print(f"{len(found)} round{'s' if len(found) != 1 else ''} written to {out}")
    else:
        if not found:
            print(f"{where}: no round settled")
        for r in found:
            print(to_text(r))
    return 0


# ---- text -------------------------------------------------------------------------------


def _time(ts: Any) -> str:
    if not isinstance(ts, int | float):
        return "?"
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


def _money(v: Any, signed: bool = False) -> str:
    if v is None:
        return "-"
    try:
        c = parse_money(v)
    except MoneyError:
        return str(v)
    sign = "-" if c < 0 else "+" if signed and c > 0 else ""
    whole, frac = divmod(abs(c), 100)
    return f"{sign}{whole}.{frac:02d}"


def _cards(cards: Any) -> str:
    return " ".join("??" if c is None else str(c) for c in cards or []) or "-"


def _decision(d: dict[str, Any]) -> str:
    extra = f" {_money(d['amount'])}" if d.get("amount") is not None else (
        f" {_money(d['wager'])}" if d.get("wager") is not None else "")
    return f"spot {d.get('spot')} hand {d.get('hand')} {d.get('action')}{extra} by {d.get('by')}"


def to_text(r: dict[str, Any]) -> str:
    """One round as a readable block."""
    d = r["dealer"]
    lines = [f"Round {r['round']}  {_time(r['started'])} to {_time(r['ended'])}  (seq {r['seq'][0]}-{r['seq'][1]})",
             f"  dealer   {_cards(d['cards'])}  total {d['total']}{'  blackjack' if d.get('blackjack') else ''}"]
    for n, spot in r["spots"].items():
        lines.append(f"  spot {n}   wager {_money(spot.get('wager'))}  net {_money(spot['net'], signed=True)}")
        for i, h in enumerate(spot["hands"]):
            soft = " soft" if h.get("soft") else "     "
            lines.append(f"    hand {i}  {_cards(h['cards']):<20} {h['total']:>2}{soft}"
                         f"  wager {_money(h['wager']):>8}  {h.get('status') or '-':<11} {h.get('outcome') or '-':<10}"
                         f" {_money(h.get('payout'), signed=True):>9}")
        if spot.get("insurance"):
            ins = spot["insurance"]
            lines.append(f"    insurance {_money(ins['wager'])}  payout {_money(ins['payout'], signed=True)}")
    if r.get("insurance"):
        lines.append(f"  insurance offered{' (even money too)' if r['insurance'].get('even_money') else ''}")
    for dec in r["decisions"]:
        lines.append(f"  #{dec['seq']:<7} {_decision(dec)}")
    for a in r["alarms"]:
        cleared = a.get("cleared")
        tail = f" (cleared #{cleared['seq']} by {cleared.get('operator') or cleared.get('by')})" if cleared else ""
        lines.append(f"  alarm #{a.get('id')} {a.get('code')}: {a.get('message')}{tail}")
    order = ", ".join(f"{c['card'] or '??'}>{_target(c)}" for c in r["cards"])
    lines.append(f"  cards    {order}")
    return "\n".join(lines) + "\n"


def _target(c: dict[str, Any]) -> str:
    if c["to"] == "spot":
        return f"s{c['spot']}" + (f".{c['hand']}" if c.get("hand") else "")
    if c["to"] == "dealer":
        return "dealer(hole)" if c.get("hole") else "dealer"
    return str(c["to"])


# ---- HTML -------------------------------------------------------------------------------

_CSS = """
body { font: 12px/1.35 system-ui, sans-serif; color: #111; margin: 16px; }
h1 { font-size: 18px; margin: 0 0 4px; }
h2 { font-size: 14px; margin: 18px 0 4px; }
p.meta { color: #555; margin: 0 0 8px; }
table { border-collapse: collapse; width: 100%; margin: 4px 0 6px; }
th, td { border: 1px solid #999; padding: 2px 6px; text-align: left; vertical-align: top; }
th { background: #eee; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.card { font-family: ui-monospace, monospace; }
.red { color: #b00; }
.round { page-break-inside: avoid; break-inside: avoid; }
ul { margin: 2px 0 0 18px; padding: 0; }
@media print { body { margin: 0; } th { background: #eee !important; -webkit-print-color-adjust: exact;
  print-color-adjust: exact; } a { color: inherit; text-decoration: none; } }
@page { margin: 12mm; }
"""


def _card_html(c: Any) -> str:
    if c is None:
        return '<span class="card">??</span>'
    red = " red" if str(c)[-1:] in ("H", "D") else ""
    return f'<span class="card{red}">{html.escape(str(c))}</span>'


def _cards_html(cards: Any) -> str:
    return " ".join(_card_html(c) for c in cards or []) or "&ndash;"


def to_html(found: list[dict[str, Any]], *, title: str) -> str:
    """A printable hand history: one self-contained page, a table per round, no external assets."""
    e = html.escape
    parts = [f"<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{e(title)}</title>"
             f"<style>{_CSS}</style></head><body>",
             f"<h1>{e(title)}</h1><p class=\"meta\">{len(found)} settled round{'s' if len(found) != 1 else ''}, "
             f"oldest first. Printed {e(_time(datetime.now(UTC).timestamp()))}. Money in dollars; "
             "payouts from the player's side.</p>"]
    for r in found:
        d = r["dealer"]
        bj = " blackjack" if d.get("blackjack") else ""
        parts.append(f'<section class="round" data-round="{e(str(r["round"]))}">'
                     f"<h2>Round {e(str(r['round']))}</h2>"
                     f"<p class=\"meta\">{e(_time(r['started']))} to {e(_time(r['ended']))} &middot; "
                     f"seq {e(str(r['seq'][0]))}&ndash;{e(str(r['seq'][1]))} &middot; dealer "
                     f"{_cards_html(d['cards'])} = {e(str(d['total']))}{bj}</p>")
        parts.append("<table><thead><tr><th>Spot</th><th>Hand</th><th>Cards</th><th>Total</th><th>Wager</th>"
                     "<th>Status</th><th>Outcome</th><th>Payout</th><th>Net</th></tr></thead><tbody>")
        for n, spot in r["spots"].items():
            rows = [(str(i), _cards_html(h["cards"]), str(h["total"]), _money(h["wager"]), h.get("status") or "",
                     h.get("outcome") or "", _money(h.get("payout"), signed=True)) for i, h in enumerate(spot["hands"])]
            if spot.get("insurance"):
                ins = spot["insurance"]
                rows.append(("ins.", "", "", _money(ins["wager"]), "", "insurance", _money(ins["payout"], signed=True)))
            for k, (hand, cards, total, wager, status, outcome, payout) in enumerate(rows):
                net = (f'<td class="num" rowspan="{len(rows)}">{e(_money(spot["net"], signed=True))}</td>'
                       if k == 0 else "")
                spot_cell = f'<td rowspan="{len(rows)}">{e(n)}</td>' if k == 0 else ""
                parts.append(f"<tr>{spot_cell}<td>{e(hand)}</td><td>{cards}</td><td class=\"num\">{e(total)}</td>"
                             f"<td class=\"num\">{e(wager)}</td><td>{e(status)}</td><td>{e(outcome)}</td>"
                             f"<td class=\"num\">{e(payout)}</td>{net}</tr>")
        parts.append("</tbody></table>")
        order = ", ".join(f"{_card_html(c['card'])}&rarr;{e(_target(c))}" for c in r["cards"])
        parts.append(f"<p><b>Deal order:</b> {order or '&ndash;'}</p>")
        if r["decisions"]:
            parts.append("<p><b>Decisions:</b></p><ul>" + "".join(
                f"<li>#{e(str(dec['seq']))} {e(_decision(dec))}</li>" for dec in r["decisions"]) + "</ul>")
        if r["alarms"]:
            parts.append("<p><b>Alarms:</b></p><ul>" + "".join(
                f"<li>#{e(str(a.get('id')))} {e(str(a.get('code')))}: {e(str(a.get('message')))}</li>"
                for a in r["alarms"]) + "</ul>")
        parts.append("</section>")
    if not found:
        parts.append("<p>No round settled.</p>")
    parts.append("</body></html>\n")
    return "".join(parts)
