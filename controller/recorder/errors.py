"""The recorder store's errors, split by what the caller does about them: a refusal (bad input, one line, not
retried), an outage (retried), a body that is not a table's (dropped, said)."""

from __future__ import annotations

__all__ = ["BadRecord", "StoreError", "StoreRefused", "StoreUnavailable"]


class StoreError(Exception):
    """Root of the recorder store's errors; the message is one line naming the database."""


class StoreRefused(StoreError):
    """The database is missing, not a recorder's, or of another schema version: bad input, not retried."""


class StoreUnavailable(StoreError):
    """The database cannot be reached now (PostgreSQL down, SQLite locked): retry later."""


class BadRecord(StoreError, ValueError):
    """A body handed to the store is not what a table publishes (not a JSON object, wrong ``seq``, ...)."""
