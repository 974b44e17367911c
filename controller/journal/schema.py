"""The journal's schemas and how a file's format is told: from what it holds, never signed at open.

Two formats: the chained one (:data:`SCHEMA`, format :data:`SCHEMA_VERSION`) and the one before the chain
(:data:`SCHEMA_V1`), which waits for ``tablectl journal migrate`` (:mod:`controller.journal.migrate`).
:func:`check_format` decides from the file's tables, hash columns and meta keys, refusing a file that claims an
older format but holds chain fields, or one whose schema was edited (a trigger, view, index, table). Every
``meta`` key is one of :data:`META_KEYS`, each saying what protects it.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from contextlib import closing, suppress
from pathlib import Path
from typing import Any

from controller.journal.errors import JournalError

__all__ = ["CHAINED_SCHEMAS", "CHAIN_META", "META_KEYS", "MIGRATED", "SCHEMA", "SCHEMA_V1", "SCHEMA_VERSION",
           "UNCHAINED_SCHEMA", "Objects", "chain_fields", "check_format", "migrate_hint", "migration_record", "objects",
           "schema_difference"]

SCHEMA_VERSION = 2
#: the type of the record ``tablectl journal migrate`` chains (who migrated the journal, when and why)
MIGRATED = "journal_migrated"

SCHEMA = """
CREATE TABLE IF NOT EXISTS inputs (
    id    INTEGER PRIMARY KEY,
    ts    REAL    NOT NULL,
    event TEXT    NOT NULL,
    hash  BLOB
);
CREATE TABLE IF NOT EXISTS outbox (
    seq       INTEGER PRIMARY KEY,
    input_id  INTEGER,
    body      TEXT    NOT NULL,
    delivered INTEGER NOT NULL DEFAULT 0,
    hash      BLOB
);
CREATE TABLE IF NOT EXISTS snapshots (
    input_id INTEGER PRIMARY KEY,
    seq      INTEGER NOT NULL,
    ts       REAL    NOT NULL,
    state    TEXT    NOT NULL,
    hash     BLOB
);
CREATE TABLE IF NOT EXISTS seals (
    n           INTEGER PRIMARY KEY,
    first_input INTEGER NOT NULL,
    last_input  INTEGER NOT NULL,
    first_seq   INTEGER NOT NULL,
    last_seq    INTEGER NOT NULL,
    head        BLOB    NOT NULL,
    digest      BLOB    NOT NULL,
    mac         BLOB    NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""


#: the tables of the format before the chain (format 1): what ``tablectl journal migrate`` chains
SCHEMA_V1 = """
CREATE TABLE IF NOT EXISTS inputs (
    id    INTEGER PRIMARY KEY,
    ts    REAL    NOT NULL,
    event TEXT    NOT NULL
);
CREATE TABLE IF NOT EXISTS outbox (
    seq       INTEGER PRIMARY KEY,
    input_id  INTEGER,
    body      TEXT    NOT NULL,
    delivered INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS snapshots (
    input_id INTEGER PRIMARY KEY,
    seq      INTEGER NOT NULL,
    ts       REAL    NOT NULL,
    state    TEXT    NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""
#: the tables whose ``hash`` column, and the meta keys, that only a chained journal holds: a file holding any of
#: them is chained whatever its ``user_version`` says (set back, a start would have signed it again: refused)
CHAIN_META = ("journal_id", "key_id", "chain_base", "chained_at", "created_at", "continued_by")
#: every meta key a chained journal may hold, and what protects it (an unknown key is refused as inserted)
META_KEYS: dict[str, str] = {
    "journal_id": "keys the chain's genesis (and the chain base's HMAC): an edit breaks the first row",
    "key_id": "must be the id of the key the chain checks under",
    "chain_base": "its own HMAC",
    "created_at": "informational, read by nothing",
    "chained_at": "informational, read by nothing",
    "continued_by": "informational (an archive's), read by nothing",
    "delivered_upto": "bookkeeping with its own HMAC: an edit only makes records be sent again",
    "rules_input": "a hint naming a chained input, checked when read: an edit only rebinds the configured rules",
    "ratings_sent": "bookkeeping with its own HMAC (signed_mark): an edit only makes ended ratings be sent again",
}
Objects = frozenset[tuple[str, str, str, str]]


def objects(conn: sqlite3.Connection) -> Objects:
    """Everything the file's schema holds: (type, name, table, SQL with its white space folded)."""
    return frozenset((str(t), str(n), str(tb), " ".join(str(sql or "").split()))
                     for t, n, tb, sql in conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master"))


def _schema_of(*scripts: str) -> Objects:
    """The objects a fresh SQLite file holds after ``scripts`` (what an honest writer's file holds)."""
    with closing(sqlite3.connect(":memory:")) as conn:
        for script in scripts:
            conn.executescript(script)
        return objects(conn)


_V1_ALTERED = "".join(f"ALTER TABLE {t} ADD COLUMN hash BLOB;" for t in ("inputs", "outbox", "snapshots"))
#: the schema of a chained journal: created so, or (chained by the version before ``journal migrate``) altered
CHAINED_SCHEMAS = (_schema_of(SCHEMA), _schema_of(SCHEMA_V1, _V1_ALTERED, SCHEMA))
UNCHAINED_SCHEMA = _schema_of(SCHEMA_V1)


def schema_difference(found: Objects, expected: Sequence[Objects]) -> str | None:
    """None when ``found`` is one of the ``expected`` schemas exactly; else what differs, in a few words
    (a trigger, view, index or table added; a table missing or altered)."""
    if any(found == e for e in expected):
        return None
    closest = min(expected, key=lambda e: len(found ^ e))
    names = {o[1]: o for o in closest}
    for obj in sorted(found - closest):
        kind, name = obj[0], obj[1]
        return f"{kind} {name} altered" if name in names else f"{kind} {name} added"
    for obj in sorted(closest - found):
        return f"{obj[0]} {obj[1]} missing"
    return "altered"


def chain_fields(conn: sqlite3.Connection, found: Objects) -> list[str]:
    """The chain's fields a file of a known schema holds (see :data:`CHAIN_META`): its hash columns and seals
    table when the schema is a chained one, and the chain's meta keys (queried only in a table of ours)."""
    fields = ["inputs.hash", "outbox.hash", "snapshots.hash", "table seals"] if found in CHAINED_SCHEMAS else []
    marks = ", ".join("?" * len(CHAIN_META))
    fields += [f"meta {r[0]}" for r in conn.execute(f"SELECT key FROM meta WHERE key IN ({marks}) ORDER BY key",
                                                    CHAIN_META)]
    return fields


def migrate_hint(path: Path) -> str:
    return (f"tablectl journal migrate {path} --key FILE --operator NAME --reason TEXT (offline, once; "
            "docs/journal.md)")


def check_format(conn: sqlite3.Connection, path: Path) -> bool:
    """Decide the file's format from what it holds, not from ``user_version`` alone: True for an empty file
    (a new journal), False for a chained one whose schema is exactly a table journal's; every other file is
    refused (:class:`JournalError`, one line): one of the format before the chain (run ``journal migrate``),
    one claiming an older format but holding the chain's fields (set back: tampered), one whose schema was
    edited (a trigger, view, index or table added, a table altered), one of a newer program, or not ours."""
    where = f"journal {path}"
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    found = objects(conn)
    if not found:
        if version:
            raise JournalError(f"{where}: holds no table but claims format {version}: not a table journal")
        return True
    if version > SCHEMA_VERSION:
        raise JournalError(f"{where}: format {version} is newer than this program's {SCHEMA_VERSION}")
    if found not in CHAINED_SCHEMAS and found != UNCHAINED_SCHEMA:
        # nothing in a file of another schema is read, not even to tell its format: a view or a trigger
        # could run anything; only its names and SQL text are compared
        tables = {o[1] for o in found if o[0] == "table"}
        if not {"inputs", "outbox"} <= tables:
            raise JournalError(f"{where}: not a table journal (its tables: {', '.join(sorted(tables)) or 'none'})")
        diff = schema_difference(found, (*CHAINED_SCHEMAS, UNCHAINED_SCHEMA))
        raise JournalError(f"{where}: its schema is not a table journal's ({diff}): tampered; refused")
    fields = chain_fields(conn, found)
    if fields and version != SCHEMA_VERSION:
        raise JournalError(f"{where}: claims format {version} (before the chain) but holds the chain's fields "
                           f"({', '.join(fields)}): tampered (set back so that it would be signed again); refused")
    if found in CHAINED_SCHEMAS:
        return False
    if version == SCHEMA_VERSION:
        raise JournalError(f"{where}: claims format {version} but holds none of the chain's fields: "
                           "tampered, or not a table journal; refused")
    raise JournalError(f"{where}: a journal of an older format ({version or 1}, before the chain): nothing is "
                       f"signed at start; chain it with {migrate_hint(path)}")


def migration_record(conn: sqlite3.Connection) -> dict[str, Any] | None:
    """The record ``tablectl journal migrate`` chained into the journal (who, when, why), or None."""
    row = conn.execute("SELECT body FROM outbox WHERE body LIKE ? ORDER BY seq LIMIT 1",
                       (f'%"type":"{MIGRATED}"%',)).fetchone()
    with suppress(ValueError, TypeError):
        found = json.loads(row[0]) if row else None
        return found if isinstance(found, dict) and found.get("type") == MIGRATED else None
    return None
