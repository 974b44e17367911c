"""The journal's errors: one line each, naming the file and why (every refusal of the journal is one of these)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["JournalError", "JournalIntegrityError"]


class JournalError(RuntimeError):
    """The journal cannot be opened or is not one of ours (path and reason in the message)."""


class JournalIntegrityError(JournalError):
    """A row that does not check: ``table``, ``row`` (its id), ``kind`` and ``reason`` name it."""

    def __init__(self, path: Path, table: str, row: int, kind: str, reason: str) -> None:
        super().__init__(f"journal {path}: {table} row {row} ({kind}): {reason}")
        self.table, self.row, self.kind, self.reason = table, row, kind, reason
