"""The dealer of each round in the recorder's database (DESIGN, "The dealer on duty": the recorder's record names
each round's dealer), and the migration of a database from before it.

Schema 2 adds ``dealer_id`` to ``events`` (and to ``held``, whose rows move into ``events``): the ``dealer_id`` a
``no_more_bets`` or ``round_settled`` body carries (the round's dealer of record), null on every other event and
on the rounds no dealer was on duty for. An index by dealer finds a dealer's rounds across the floor
(``tablectl recall --db URL --dealer ID``) without reading every table's record.

A schema-1 database (a recorder of before dealers) is migrated by the first writer that opens it, in one
transaction: the columns and the index added, the settlements and closings of betting whose bodies name a dealer
(tables upgraded before their recorder) given theirs, every other row null, the version set to 2. A reader
(``recall``, ``report``, ``ratings --db``) never writes: it reads a schema-1 database as it is, finding a dealer's
rounds by their bodies' text instead.
"""

from __future__ import annotations

import json
from typing import Any, Final

from controller.recorder.backends import Tx

__all__ = ["DEALER_INDEX", "DEALER_TYPES", "dealer_of", "migrate_from_1"]

#: the events that carry a round's dealer of record
DEALER_TYPES: Final = ("no_more_bets", "round_settled")
DEALER_INDEX: Final = "CREATE INDEX IF NOT EXISTS events_by_dealer ON events (dealer_id, type, table_id, seq)"
#: rows read per step while migrating
_PAGE: Final = 2000


def dealer_of(kind: str, data: dict[str, Any]) -> str | None:
    """The dealer of record a published body names (only a round's ``no_more_bets`` and ``round_settled``)."""
    if kind not in DEALER_TYPES:
        return None
    dealer = data.get("dealer_id")
    return dealer if isinstance(dealer, str) and dealer else None


def migrate_from_1(tx: Tx) -> None:
    """Schema 1 to 2 (see the module docstring), in the caller's transaction; nothing when another writer opening
    the database at the same moment did it first (the version's row locked, then read again)."""
    known = tx.rows(f"SELECT value FROM meta WHERE key = ?{tx.for_update}", ("version",))
    if not known or known[0][0] != "1":
        return
    for table in ("events", "held"):
        tx.run(f"ALTER TABLE {table} ADD COLUMN dealer_id TEXT")
    tx.run(DEALER_INDEX)
    for table in ("events", "held"):
        after: tuple[str, int] = ("", 0)
        while True:
            rows = tx.rows(f"SELECT table_id, seq, type, body FROM {table} WHERE type IN (?, ?) AND body LIKE ?"
                           " AND (table_id > ? OR (table_id = ? AND seq > ?)) ORDER BY table_id, seq LIMIT ?",
                           (*DEALER_TYPES, '%"dealer_id":"%', after[0], after[0], after[1], _PAGE))
            for table_id, seq, kind, body in rows:
                data = json.loads(body)
                dealer = dealer_of(str(kind), data) if isinstance(data, dict) else None
                if dealer is not None:
                    tx.run(f"UPDATE {table} SET dealer_id = ? WHERE table_id = ? AND seq = ?", (dealer, table_id, seq))
            if len(rows) < _PAGE:
                break
            after = (str(rows[-1][0]), int(rows[-1][1]))
    tx.run("UPDATE meta SET value = ? WHERE key = ?", ("2", "version"))
