"""``tablectl journal verify|archive|migrate``: check a table's journal, archive a shift's, chain an older one
(``docs/journal.md``).

``tablectl journal verify PATH [--key FILE] [--anchor-dir DIR] [--json] [--after ARCHIVE]``: SQLite's own
check and every row of the chain (inputs, records, snapshots); exit 0 and one line (rows, rounds, last
``seq``, head hash, and which witnesses vouched) when a witness vouched, exit :data:`NO_WITNESS` (3) and the
same line when every row checks but no witness vouched (a copy checked away from its anchor: intact, not
known to be whole), or exit 2 and one line naming the first row that does not check (its table, row and why),
or the witness the journal is behind (its anchor in ``--anchor-dir``). The journal is opened read-only: a
journal in use is verified without disturbing its table, and a copy without write bits is read without
anything written beside it.
``--after ARCHIVE``: also check that PATH continues ARCHIVE (its chain starts at ARCHIVE's hash there).
``--against URL``: also hold the journal against the central recorder's database
(:mod:`controller.recorder.against`): every event body and chain head the table published, its journal id
and last seq; the first difference is exit 2 in one line (table, seq, what), an unreachable database exit 1.

``tablectl journal archive PATH --to DIR [--key FILE]``: with the table stopped, copy the journal to a
dated archive file in DIR and keep in PATH only what the table needs to go on (from its newest
snapshot), its chain starting at the archive's hash; both files verify on their own.

``tablectl journal migrate PATH --key FILE --operator NAME --reason TEXT``: with the table stopped, chain a
journal of the format before the chain, once, as it is now, on a named person's word (journaled: the record
shows in ``verify`` and ``recall``); refused for a file that already holds any chain field. Nothing is ever
signed at a table's start.

Without ``--key``, ``verify`` and ``archive`` use the ``journal.key`` beside the journal (a demo's state
directory); ``migrate`` takes none by default: the person names the key.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

from controller.errors import UsageError

#: ``journal verify``'s exit status when every row checks but no witness vouched (docs/journal.md)
NO_WITNESS = 3


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser("journal", help="verify or archive a table's journal")
    verbs = p.add_subparsers(dest="verb", metavar="VERB")
    verbs.required = True
    v = verbs.add_parser("verify", help="check every row of a journal's hash chain and SQLite's own structure",
                         description="Check every row of a journal's hash chain and SQLite's own structure, and ask "
                                     "its witnesses. Exit 0: every row checks and a witness vouched; exit "
                                     f"{NO_WITNESS}: every row checks but no witness vouched (intact, not known to "
                                     "be whole: a copy checked away from its anchor); exit 2: a row does not check, "
                                     "or a witness holds the journal behind it; exit 1: --against's database cannot "
                                     "be reached. Works on a read-only copy.")
    v.add_argument("path", type=Path, metavar="PATH")
    v.add_argument("--key", type=Path, metavar="FILE", help="the journal key (default: journal.key beside PATH)")
    v.add_argument("--json", action="store_true", help="one JSON object")
    v.add_argument("--after", type=Path, metavar="ARCHIVE", help="also check that PATH continues this archive")
    v.add_argument("--anchor-dir", type=Path, metavar="DIR",
                   help="where the journal's anchor is (default: a demo's, $XDG_STATE_HOME/tablectl/anchors)")
    v.add_argument("--against", metavar="URL",
                   help="also hold the journal against the central recorder's database (an SQLite path or "
                        "postgresql://...): every event body and chain head the table published")
    v.add_argument("--table", metavar="ID", help="with --against: the table's id there (default: PATH's name)")
    v.set_defaults(func=verify)
    a = verbs.add_parser("archive", help="archive a stopped table's journal; keep a continuation chained to it")
    a.add_argument("path", type=Path, metavar="PATH")
    a.add_argument("--to", type=Path, required=True, metavar="DIR", help="where the dated archive file goes")
    a.add_argument("--key", type=Path, metavar="FILE", help="the journal key (default: journal.key beside PATH)")
    a.set_defaults(func=archive)
    m = verbs.add_parser("migrate", help="chain a journal of the format before the chain, once, offline, journaled")
    m.add_argument("path", type=Path, metavar="PATH")
    m.add_argument("--key", type=Path, required=True, metavar="FILE", help="the table's journal key")
    m.add_argument("--operator", required=True, metavar="NAME", help="who migrates it (a user name: a-z 0-9 . _ -)")
    m.add_argument("--reason", required=True, metavar="TEXT", help="why (journaled with the operator)")
    m.set_defaults(func=migrate)


def _key(args: argparse.Namespace) -> bytes:
    from controller.journal.anchor import load_key

    key_file = args.key if args.key is not None else args.path.parent / "journal.key"
    if args.key is None and not key_file.exists():
        raise UsageError(f"{args.path}: no journal.key beside it: give --key FILE")
    return load_key(key_file)


def verify(args: argparse.Namespace) -> int:
    from controller.journal import Journal, JournalError, JournalIntegrityError

    try:
        key = _key(args)
        with Journal.open_readonly(args.path, key=key) as journal:
            result = journal.verify(snapshots=True, rounds=True)
            migrated = journal.migration()
            linked = None
            if args.after is not None:
                base = journal.base
                with Journal.open_readonly(args.after, key=key) as archive:
                    archive.verify(snapshots=True)
                    if archive.position_hash(base.input, base.seq) != base.hash:
                        raise JournalError(f"journal {args.path}: does not continue {args.after} (its chain starts "
                                           f"after input {base.input}, seq {base.seq}, at a hash the archive "
                                           "does not have there)")
                    linked = str(args.after)
            said = _witnesses(args, key, journal)
            if args.against is not None:
                said.append(_recorder_testimony(args, key, journal))
    except _RecorderDown as e:
        if args.json:
            print(json.dumps({"ok": False, "path": str(args.path), "reason": str(e)}))
        print(f"tablectl journal: {e}", file=sys.stderr)
        return 1
    except JournalIntegrityError as e:
        if args.json:
            print(json.dumps({"ok": False, "path": str(args.path), "table": e.table, "row": e.row,
                              "kind": e.kind, "reason": e.reason}))
        raise UsageError(str(e)) from None
    except (JournalError, sqlite3.Error) as e:
        if args.json:
            print(json.dumps({"ok": False, "path": str(args.path), "reason": str(e)}))
        raise UsageError(str(e)) from None
    base = result.base
    if args.json:
        print(json.dumps({"ok": True, "path": str(args.path), "rows": result.rows, "inputs": result.inputs,
                          "records": result.records, "snapshots": result.snapshots, "rounds": result.rounds,
                          "last_input": result.last_input, "last_seq": result.last_seq, "head": result.head,
                          "continues": base.archive, "after": linked, "migrated": migrated,
                          "seconds": round(result.seconds, 3), "witnesses": [t.as_json() for t in said],
                          "vouched": [t.witness for t in said if t.verdict == "vouches"]}))
    else:
        from controller.journal.witnesses import summary

        cont = f"; continues {base.archive} after input {base.input}" if base.archive else ""
        if migrated is not None:
            cont += (f"; chained by journal migrate at seq {migrated.get('seq')} by {migrated.get('operator')}: "
                     f"{migrated.get('reason')}")
        silent = "; ".join(f"{t.witness}: {t.detail}" for t in said if t.verdict != "vouches")
        cont += "".join(f"; {t.witness}: {t.detail}" for t in said if t.witness == "recorder")
        print(f"{args.path}: ok: {result.rows} rows ({result.inputs} inputs, {result.records} records, "
              f"{result.snapshots} snapshots), {result.rounds} rounds, last seq {result.last_seq}, "
              f"head {result.head}{cont}; vouched for by {summary(said)}" + (f" (not: {silent})" if silent else "")
              + f"; checked in {result.seconds:.2f} s")
    return 0 if any(t.verdict == "vouches" for t in said) else NO_WITNESS


def _witnesses(args: argparse.Namespace, key: bytes, journal: Any) -> list[Any]:
    """What the journal's witnesses say (the anchor, from ``--anchor-dir``); :class:`JournalError` (one line)
    when one holds it behind or contradicts it. No witness vouching is said, not refused: verify reports."""
    from controller.journal.anchor import anchor_testimony, default_anchor_dir
    from controller.journal.witnesses import NoWitness, judge

    folder = args.anchor_dir if args.anchor_dir is not None else default_anchor_dir()
    said = [anchor_testimony(folder, key, journal, args.path.name.removesuffix(".journal"))]
    with contextlib.suppress(NoWitness):
        judge(journal, said, adopt_hint="")
    return said


class _RecorderDown(RuntimeError):
    """The recorder's database cannot be reached now (exit 1: a runtime failure, not a verdict)."""


def _recorder_testimony(args: argparse.Namespace, key: bytes, journal: Any) -> Any:
    """The recorder's word (``--against URL``): vouches at its last seq when every event body and chain head it
    holds is the journal's; :class:`JournalError` (one line: table, seq, what) at the first difference."""
    from controller.journal import Journal, JournalError
    from controller.journal.witnesses import Testimony
    from controller.recorder.against import Mismatch, compare, recorder_table
    from controller.recorder.store import StoreError, StoreUnavailable, open_store

    try:
        with open_store(args.against, create=False) as store:
            name = args.table if args.table is not None else args.path.name.removesuffix(".journal")
            table = name if args.table is not None else recorder_table(store, journal.journal_id, name)
            earlier = None
            if args.after is not None:  # the archive PATH continues (checked above): its rows before PATH's
                with Journal.open_readonly(args.after, key=key) as archive:
                    try:
                        earlier = compare(archive, store, table, first_seq=archive.base.seq + 1,
                                          upto=journal.base.seq)
                    except Mismatch as e:
                        raise JournalError(f"archive {args.after}: differs from the recorder: {e}") from None
            agreed = compare(journal, store, table, first_seq=journal.base.seq + 1)
    except Mismatch as e:
        raise JournalError(f"journal {args.path}: differs from the recorder: {e}") from None
    except StoreUnavailable as e:
        raise _RecorderDown(f"--against: {e}") from None
    except StoreError as e:
        raise JournalError(f"--against: {e}") from None
    events = agreed.events + (earlier.events if earlier else 0)
    heads = agreed.heads + (earlier.heads if earlier else 0)
    return Testimony("recorder", "vouches", agreed.seq,
                     f"{events} events and {heads} chain heads of {agreed.table_id} equal"
                     + (f", {earlier.events} of them in {args.after.name}" if earlier else "") + f" ({agreed.where})")


def archive(args: argparse.Namespace) -> int:
    from controller.journal import Journal, JournalError

    try:
        key = _key(args)
        with Journal(args.path, key=key, create=False) as journal:
            journal.verify(snapshots=True)
            first = journal.base.input + 1
            path, base = journal.archive(args.to)
    except (JournalError, sqlite3.Error) as e:
        raise UsageError(str(e)) from None
    print(f"{args.path}: inputs {first} to {base.input} archived in {path}; the journal continues from input "
          f"{base.input + 1} (chained to the archive's hash {base.hash.hex()})")
    return 0


def migrate(args: argparse.Namespace) -> int:
    from controller.journal import JournalError
    from controller.journal.anchor import load_key
    from controller.journal.migrate import check_operator, check_reason
    from controller.journal.migrate import migrate as chain

    try:
        check_operator(args.operator)
        check_reason(args.reason)
        done = chain(args.path, key=load_key(args.key), operator=args.operator, reason=args.reason)
    except (JournalError, sqlite3.Error) as e:
        raise UsageError(str(e)) from None
    print(f"{args.path}: chained as it is now by {args.operator}: {done.inputs} inputs, {done.records} records "
          f"(the last, seq {done.seq}, journals who and why), {done.snapshots} snapshots; new journal id "
          f"{done.journal_id}, head {done.head}")
    return 0
