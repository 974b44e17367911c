"""The ``--db URL`` of the readers (``recall``, ``report``, ``ratings``): the central recorder's database opened
for reading, refused in one line (exit 2) when it is missing, not a recorder's or lacks the table asked for;
:class:`DbUnavailable` (exit 1) when it cannot be reached now."""

from __future__ import annotations

from controller.errors import UsageError
from controller.recorder.store import RecorderStore, StoreRefused, StoreUnavailable, TableRecord, open_store


class DbUnavailable(RuntimeError):
    """The recorder's database cannot be reached now: a runtime failure (exit 1), not bad input."""


def open_db(url: str) -> RecorderStore:
    """The recorder's database at ``url``, for reading (never created)."""
    try:
        return open_store(url, create=False)
    except StoreRefused as e:
        raise UsageError(f"--db: {e}") from None
    except StoreUnavailable as e:
        raise DbUnavailable(f"--db: {e}") from None


def known_table(store: RecorderStore, table_id: str) -> TableRecord:
    """The table's record, or :class:`UsageError` naming the tables the recorder holds."""
    record = store.table(table_id)
    if record is None:
        held = [t.table_id for t in store.tables()]
        listed = ", ".join(held[:20]) + (f" and {len(held) - 20} more" if len(held) > 20 else "")
        raise UsageError(f"--table {table_id}: the recorder at {store.where} holds no such table "
                         f"({'its tables: ' + listed if held else 'it holds no table yet'})")
    return record
