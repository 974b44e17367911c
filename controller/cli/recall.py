"""``tablectl recall PATH|--db URL --table T [--key FILE] [--last N] [--round R | --dealer ID] [--json | --html FILE]``:
rounds from a journal, or from the central recorder's database (:mod:`controller.reports.recall` reads them).

``--dealer ID``: every round that dealer was the dealer of record of (the last N with ``--last``), from a journal,
or from the recorder's database across the floor's tables (``--table``: one), found by its index of dealers.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
from pathlib import Path
from typing import Any

from controller.errors import UsageError
from controller.records import HISTORY_ROUNDS
from controller.reports.recall import InUse, JournalLog, dealt_by, no_rounds_of, recall, to_text
from controller.reports.recall_html import to_html


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
    p.add_argument("--dealer", metavar="ID", help="every round this dealer dealt (the dealer of record: on duty when "
                                                  "betting closed); with --db across every table unless --table")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="one JSON list on stdout (the shape of the history topic)")
    out.add_argument("--html", metavar="FILE", help="write a printable hand history (one self-contained HTML file)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.last is not None and args.last < 1:
        raise UsageError(f"--last {args.last}: must be 1 or more")
    if args.dealer is not None:
        from controller.contract.dealers import check_dealer

        why = check_dealer(args.dealer)
        if why is not None:
            raise UsageError(f"--dealer: {why}")
        if args.round is not None:
            raise UsageError("give --round R or --dealer ID, not both")
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
        log = JournalLog(path)
    except InUse as e:
        print(f"tablectl recall: {e}", file=sys.stderr)
        return 1
    try:
        if args.dealer is not None:
            seen: set[str] = set()
            found = list(dealt_by(log, args.dealer, seen=seen))
            if not found:
                raise no_rounds_of(args.dealer, str(path), seen)
            found = found[-args.last:] if args.last is not None else found
        else:
            found = recall(log, last=args.last, round_no=args.round)
    except sqlite3.DatabaseError as e:
        print(f"tablectl recall: {path}: cannot read the journal: {e}", file=sys.stderr)
        return 1
    finally:
        log.close()
    return _print(args, path.name, str(path), found)


def _run_db(args: argparse.Namespace) -> int:
    """``--db URL --table T``: the same rounds from the recorder's record of the table."""
    from controller.cli.recorder_db import known_table, reading
    from controller.recorder.table_log import TableLog

    if args.path is not None:
        raise UsageError("give a journal PATH or --db URL, not both")
    if args.key is not None:
        raise UsageError("--key checks a journal's chain: with --db, check the journal with "
                         "`tablectl journal verify PATH --against URL`")
    if args.table is None and args.dealer is None:
        raise UsageError("--db needs --table T (the table to recall) or --dealer ID")
    if args.dealer is not None:
        return _run_db_dealer(args)
    with reading(args.db) as store:
        known_table(store, args.table)
        log = TableLog(store, args.table)
        start = log.round_start(args.round) if args.round is not None else None
        found = recall(log, last=args.last, round_no=args.round, start=start or 0)
    return _print(args, f"table {args.table}", log.path, found)


def _run_db_dealer(args: argparse.Namespace) -> int:
    """``--db URL --dealer ID [--table T]``: the dealer's rounds at every table (one), each with its ``table_id``,
    oldest first; each table read only from the round before the dealer's first there to the dealer's last."""
    from controller.cli.recorder_db import known_table, reading
    from controller.recorder.table_log import TableLog

    found: list[dict[str, Any]] = []
    with reading(args.db) as store:
        if args.table is not None:
            known_table(store, args.table)
        settlements: dict[str, list[int]] = {}
        for table_id, seq in store.dealt_by(args.dealer, args.table):
            settlements.setdefault(table_id, []).append(seq)
        for table_id, seqs in settlements.items():
            log = TableLog(store, table_id)
            before = store.last_of_type(table_id, "round_settled", seqs[0] - 1)
            for r in dealt_by(log, args.dealer, start=0 if before is None else before.seq, stop=seqs[-1]):
                found.append({"table_id": table_id, **r})
        where = store.where
    if not found:
        scope = f"table {args.table} in {where}" if args.table is not None else where
        raise UsageError(f"--dealer {args.dealer}: no round dealt by {args.dealer} in {scope}")
    found.sort(key=lambda r: (r["ended"], r["table_id"]))
    found = found[-args.last:] if args.last is not None else found
    return _print(args, f"dealer {args.dealer}", where, found)


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
