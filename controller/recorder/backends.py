"""The recorder store's two backends behind one small interface: SQLite (a file) and PostgreSQL (psycopg 3).

Both run the store's SQL as written, with ``?`` placeholders (PostgreSQL's ``%s`` are put in by
:class:`Postgres`), in explicit transactions (:meth:`Backend.transaction`): committed whole or rolled back.
Each maps its driver's errors to the store's (:mod:`controller.recorder.errors`): a database that is not a
recorder's, or a URL the server refuses, is :class:`StoreRefused`; one that cannot be reached now (PostgreSQL
down or restarting, SQLite locked past its busy timeout) :class:`StoreUnavailable`, after which PostgreSQL's
connection is made again at the next transaction.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, Protocol

from controller.recorder.errors import StoreError, StoreRefused, StoreUnavailable

__all__ = ["Backend", "Postgres", "Sqlite", "Tx", "is_postgres_url", "redact"]


def is_postgres_url(url: str) -> bool:
    return url.startswith(("postgresql://", "postgres://"))


def redact(url: str) -> str:
    """The URL without its password, for messages."""
    return re.sub(r"(://[^:/@]*):[^@/]*@", r"\1:***@", url)


class Tx(Protocol):
    #: appended to a SELECT that locks the row it reads (PostgreSQL; SQLite's BEGIN IMMEDIATE locks the file)
    for_update: str

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Execute; the number of rows changed."""


class Backend(Protocol):
    where: str

    def transaction(self) -> AbstractContextManager[Tx]: ...

    def table_names(self) -> set[str]: ...

    def close(self) -> None: ...


class _SqliteTx:
    for_update = ""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return list(self._conn.execute(sql, tuple(params)).fetchall())

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        return self._conn.execute(sql, tuple(params)).rowcount


class Sqlite:
    """An SQLite file in WAL mode; a writer's every transaction ``BEGIN IMMEDIATE``, so writers queue instead of
    failing, a reader's ``BEGIN DEFERRED``."""

    def __init__(self, path: Path, *, create: bool) -> None:
        self.where = str(path)
        if not create and not path.exists():
            raise StoreRefused(f"{path}: no recorder database there")
        if path.exists() and not path.is_file():
            raise StoreRefused(f"{path}: not a file")
        try:
            self._conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=10.0)
        except sqlite3.Error as e:
            raise StoreRefused(f"{path}: cannot open: {e}") from None
        #: a writer takes the write lock at once (writers queue, never fail half way); a reader reads a snapshot
        #: beside the writer (WAL) and never blocks it
        self._begin = "BEGIN IMMEDIATE" if create else "BEGIN DEFERRED"
        try:
            if create:
                self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=FULL")
        except sqlite3.DatabaseError as e:
            self._conn.close()
            raise self._error(e) from None

    def _error(self, e: sqlite3.Error) -> StoreError:
        text = str(e)
        if "locked" in text or "busy" in text or "disk I/O" in text or "unable to open" in text:
            return StoreUnavailable(f"{self.where}: {text}")
        if isinstance(e, sqlite3.DatabaseError) and ("not a database" in text or "no such" in text
                                                     or "malformed" in text):
            return StoreRefused(f"{self.where}: not a recorder's database ({text})")
        return StoreError(f"{self.where}: {text}")

    @contextmanager
    def transaction(self) -> Iterator[Tx]:
        try:
            self._conn.execute(self._begin)
        except sqlite3.Error as e:
            raise self._error(e) from None
        try:
            yield _SqliteTx(self._conn)
        except sqlite3.Error as e:
            self._conn.rollback()
            raise self._error(e) from None
        except BaseException:
            self._conn.rollback()
            raise
        try:
            self._conn.commit()
        except sqlite3.Error as e:
            self._conn.rollback()
            raise self._error(e) from None

    def table_names(self) -> set[str]:
        with self.transaction() as tx:
            return {r[0] for r in tx.rows("SELECT name FROM sqlite_master WHERE type = 'table'")}

    def close(self) -> None:
        self._conn.close()


class _PostgresTx:
    for_update = " FOR UPDATE"

    def __init__(self, cur: Any) -> None:
        self._cur = cur

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        self._cur.execute(sql.replace("?", "%s"), tuple(params))
        return list(self._cur.fetchall())

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        self._cur.execute(sql.replace("?", "%s"), tuple(params))
        return int(self._cur.rowcount)


class Postgres:
    """PostgreSQL through psycopg 3; the connection is made again at the next call after it was lost."""

    def __init__(self, url: str, *, connect_timeout: float) -> None:
        try:
            import psycopg
        except ImportError:
            raise StoreRefused("PostgreSQL needs psycopg: pip install 'blackjack-table-controller[floor]'") from None
        self._psycopg = psycopg
        self._url = url
        self._timeout = connect_timeout
        self.where = redact(url)
        self._conn: Any = None
        self._connect()

    def _connect(self) -> Any:
        if self._conn is not None and not self._conn.closed:
            return self._conn
        try:
            self._conn = self._psycopg.connect(self._url, autocommit=True, connect_timeout=max(1, int(self._timeout)))
        except self._psycopg.OperationalError as e:
            text = _first_line(e)
            said = text.partition("FATAL:")[2].strip()
            if any(p in said for p in _REFUSALS):  # the server answered no: a wrong URL, not an outage
                raise StoreRefused(f"{self.where}: cannot connect: {said}") from None
            raise StoreUnavailable(f"{self.where}: cannot connect: {said or text}") from None
        except self._psycopg.Error as e:
            raise StoreRefused(f"{self.where}: {_first_line(e)}") from None
        return self._conn

    def _error(self, e: Exception) -> StoreError:
        errors = self._psycopg.errors
        if isinstance(e, errors.UndefinedTable | errors.UndefinedColumn):
            return StoreRefused(f"{self.where}: not a recorder's database ({_first_line(e)})")
        if isinstance(e, self._psycopg.OperationalError | self._psycopg.InterfaceError):
            if self._conn is not None and self._conn.broken:
                self._conn.close()
            return StoreUnavailable(f"{self.where}: {_first_line(e)}")
        return StoreError(f"{self.where}: {_first_line(e)}")

    @contextmanager
    def transaction(self) -> Iterator[Tx]:
        conn = self._connect()
        try:
            with conn.transaction(), conn.cursor() as cur:
                yield _PostgresTx(cur)
        except self._psycopg.Error as e:
            raise self._error(e) from None

    def table_names(self) -> set[str]:
        with self.transaction() as tx:
            return {r[0] for r in tx.rows(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()")}

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()


#: what a PostgreSQL server says when it refuses a connection for good (the URL names a database, user or
#: password it does not have): bad input, not retried
_REFUSALS = ("does not exist", "password authentication failed", "no pg_hba.conf entry", "authentication failed")


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__
