"""The recorder store's two backends behind one small interface: SQLite (a file) and PostgreSQL (psycopg 3).

Both run the store's SQL as written, with ``?`` placeholders (PostgreSQL's ``%s`` are put in by
:class:`Postgres`), in explicit transactions (:meth:`Backend.transaction`): committed whole or rolled back.
A write whose result is not needed is *sent* (:meth:`Tx.send`): it runs in order with the transaction's other
statements, the consecutive sends of one statement as one ``executemany``; PostgreSQL runs a transaction asked
to be ``pipelined`` (the store's batches) in pipeline mode (``conn.pipeline()``), so those writes do not each wait
a round trip: only a statement whose rows or row count are read does, and the commit. A sent write that fails
fails its transaction (at the next statement that waits, at the latest at the commit), which is then rolled back
whole, as any other. (A transaction of one call is not pipelined: on loopback that measured no faster, a little
slower: 1,500-2,000 lone events a second against 1,800-2,800, 2026-11-29, load average 3 to 4.)
Each maps its driver's errors to the store's (:mod:`controller.recorder.errors`): a database that is not a
recorder's, or a URL the server refuses, is :class:`StoreRefused`; one that cannot be reached now (PostgreSQL
down or restarting, SQLite locked past its busy timeout) :class:`StoreUnavailable`, after which PostgreSQL's
connection is made again at the next transaction.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
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

    def send(self, sql: str, params: Sequence[Any] = ()) -> None:
        """Execute in order with the transaction's other statements, without waiting for the result (see the
        module's docstring); an error it raises fails the transaction."""


class _Sends:
    """The sends not yet executed: consecutive ones of the same statement, executed as one ``executemany``
    before any other statement."""

    __slots__ = ("params", "sql")

    def __init__(self) -> None:
        self.sql: str | None = None
        self.params: list[tuple[Any, ...]] = []

    def add(self, sql: str, params: Sequence[Any]) -> tuple[str, list[tuple[Any, ...]]] | None:
        """Queue one; the run to execute first when it is another statement."""
        before = self.take() if self.sql is not None and sql != self.sql else None
        self.sql = sql
        self.params.append(tuple(params))
        return before

    def take(self) -> tuple[str, list[tuple[Any, ...]]] | None:
        """The queued run, emptied."""
        if self.sql is None:
            return None
        run = (self.sql, self.params)
        self.sql, self.params = None, []
        return run


class Backend(Protocol):
    where: str

    def transaction(self, *, pipelined: bool = False) -> AbstractContextManager[Tx]:
        """A transaction; ``pipelined``: one of many statements, their round trips worth saving (PostgreSQL)."""

    def table_names(self) -> set[str]: ...

    def close(self) -> None: ...


class _SqliteTx:
    for_update = ""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._sends = _Sends()

    def flush(self) -> None:
        run = self._sends.take()
        if run is not None:
            self._conn.executemany(*run)

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        self.flush()
        return list(self._conn.execute(sql, tuple(params)).fetchall())

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        self.flush()
        return self._conn.execute(sql, tuple(params)).rowcount

    def send(self, sql: str, params: Sequence[Any] = ()) -> None:
        run = self._sends.add(sql, params)
        if run is not None:
            self._conn.executemany(*run)


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
    def transaction(self, *, pipelined: bool = False) -> Iterator[Tx]:
        try:
            self._conn.execute(self._begin)
        except sqlite3.Error as e:
            raise self._error(e) from None
        try:
            tx = _SqliteTx(self._conn)
            yield tx
            tx.flush()
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
    """A transaction in pipeline mode (when libpq has it): statements are sent at once; a read of rows or of a
    row count waits for the results up to it, a send does not."""

    for_update = " FOR UPDATE"

    def __init__(self, cur: Any, pipeline: Any) -> None:
        self._cur = cur
        self._pipeline = pipeline
        self._sends = _Sends()

    def flush(self) -> None:
        self._execute(self._sends.take())

    def _execute(self, run: tuple[str, list[tuple[Any, ...]]] | None) -> None:
        if run is None:
            return
        if len(run[1]) == 1:  # executemany would make a pipeline of its own for one statement
            self._cur.execute(run[0].replace("?", "%s"), run[1][0])
        else:
            self._cur.executemany(run[0].replace("?", "%s"), run[1])

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        self.flush()
        self._cur.execute(sql.replace("?", "%s"), tuple(params))
        return list(self._cur.fetchall())

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        self.flush()
        self._cur.execute(sql.replace("?", "%s"), tuple(params))
        if self._pipeline is not None:
            self._pipeline.sync()  # the row count is known once the result is in
        return int(self._cur.rowcount)

    def send(self, sql: str, params: Sequence[Any] = ()) -> None:
        self._execute(self._sends.add(sql, params))


class Postgres:
    """PostgreSQL through psycopg 3; the connection is made again at the next call after it was lost."""

    def __init__(self, url: str, *, connect_timeout: float) -> None:
        try:
            import psycopg
        except ImportError:
            raise StoreRefused("PostgreSQL needs psycopg: pip install 'blackjack-table-controller[floor]'") from None
        self._psycopg = psycopg
        #: libpq 14 and later: a transaction's statements are sent without waiting each for its result
        self._pipelined = bool(psycopg.Pipeline.is_supported())
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
    def transaction(self, *, pipelined: bool = False) -> Iterator[Tx]:
        """One transaction, ``pipelined`` in pipeline mode when libpq has it: committed (the COMMIT's result
        received) or rolled back before this returns."""
        conn = self._connect()
        try:
            with (conn.pipeline() if pipelined and self._pipelined else nullcontext()) as pipeline, \
                    conn.transaction(), \
                    conn.cursor() as cur:
                tx = _PostgresTx(cur, pipeline)
                yield tx
                tx.flush()
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
