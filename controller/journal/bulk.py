"""The bulk of a start's check: SQLite's ``quick_check`` and the digest of every sealed segment as its rows are now.

A long journal's jobs run in worker processes, one per core (:func:`run_jobs`). Threads of one process were tried
first and measured (issue 40, 100,000 rounds, 2 cores): SQLite's aggregates in two threads of one process took
longer than in one (their CPU grew by half again, most of it the kernel's), while two processes took half the time
of one. A short journal's jobs run on the caller's connection: starting the workers (about 0.1 s) would cost
more than they save. The parent checks each digest against its seal (:mod:`controller.journal.verify`); a worker
only reads the file (read-only, no key) and hashes what it reads.
"""

from __future__ import annotations

import array
import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

__all__ = ["PROCESSES_FROM_ROWS", "Job", "job_result", "run_jobs"]

#: rows (inputs and records) in sealed segments from which the jobs run in worker processes
PROCESSES_FROM_ROWS = 400_000
#: (kind, first, last): ``("quick_check", 0, 0)``, or a table's ``"inputs"`` / ``"outbox"`` rows first..last
Job = tuple[str, int, int]


def job_result(conn: sqlite3.Connection, kind: str, first: int, last: int) -> Any:
    """One job: ``quick_check``'s lines, or the digests of one table's rows in a sealed range (None when they
    cannot make one: rows missing, not text...).

    Each concatenation leaves SQLite as the bytes it stores (``CAST ... AS BLOB``: the UTF-8 the writer hashed),
    so the megabytes of a segment are hashed as they are read, never decoded to a Python text and encoded back;
    the only value per row that reaches Python is its time (the seal hashes the 8-byte doubles)."""
    sha = hashlib.sha256
    parts: tuple[bytes, ...]
    if kind == "quick_check":
        return [str(r[0]) for r in conn.execute("PRAGMA quick_check")]
    # The concatenations must tell the rows apart, or bytes moved across a row boundary, or a NULL (which
    # group_concat skips), would leave them equal: every hash is 32 bytes; every input id is an integer
    # (counted: a text '12,13', a blob '12' or a NULL is not; an integer joins as the writer joins them, and
    # ``quote()`` on every id, which the check used before, costs more); events, bodies and
    # times are NOT NULL, newline-free JSON and 8-byte doubles. ``sum(length(hash) = 32)`` counts the hashes
    # that are there and of that length (a NULL one is not counted).
    try:
        if kind == "inputs":
            n, whole, text, hashes = conn.execute(
                "SELECT count(*), sum(length(hash) = 32), CAST(group_concat(event, char(10)) AS BLOB), "
                "CAST(group_concat(hash, '') AS BLOB) FROM inputs WHERE id BETWEEN ? AND ?", (first, last)).fetchone()
            ts = array.array("d", [t for (t,) in conn.execute("SELECT ts FROM inputs WHERE id BETWEEN ? AND ?",
                                                               (first, last)).fetchall()]).tobytes()
            parts = (sha(text or b"").digest(), sha(hashes or b"").digest(), sha(ts).digest())
        else:
            n, whole, text, ids, integers, hashes = conn.execute(
                "SELECT count(*), sum(length(hash) = 32), CAST(group_concat(body, char(10)) AS BLOB), "
                "CAST(group_concat(input_id, ',') AS BLOB), count(*) FILTER (WHERE typeof(input_id) = 'integer'), "
                "CAST(group_concat(hash, '') AS BLOB) FROM outbox WHERE seq BETWEEN ? AND ?", (first, last)).fetchone()
            if integers != n:  # an input id that is not an integer: the rows one by one name it
                return None
            parts = (sha(text or b"").digest(), sha(ids or b"").digest(), sha(hashes or b"").digest())
    except (TypeError, ValueError):  # a time that is not a number: the rows one by one name it
        return None
    return parts if n == (whole or 0) == last - first + 1 else None


def run_jobs(conn: sqlite3.Connection, path: Path, jobs: Sequence[Job], *, workers: int | None = None) -> list[Any]:
    """Every job's result, in order. When the jobs cover :data:`PROCESSES_FROM_ROWS` rows or more and there is
    more than one core, the segments are shared among ``workers`` worker processes (default: the cores, up to 4)
    by their rows while ``quick_check`` runs here; otherwise every job runs on ``conn``, one after the other.
    A worker that cannot start, cannot open the file or fails leaves its share to ``conn`` (whose error, on a
    file SQLite cannot read, is the one the caller reports)."""
    rows = sum(last - first + 1 for kind, first, last in jobs if kind != "quick_check")
    count = workers if workers is not None else min(4, os.cpu_count() or 1)
    if count < 2 or rows < PROCESSES_FROM_ROWS:
        return [job_result(conn, *job) for job in jobs]
    here = [k for k, job in enumerate(jobs) if job[0] == "quick_check"]
    shares = _shares([k for k, job in enumerate(jobs) if job[0] != "quick_check"], jobs, count)
    results: list[Any] = [None] * len(jobs)
    uri = f"file:{quote(str(path.resolve()))}?mode=ro"
    started: list[tuple[list[int], subprocess.Popen[bytes] | None]] = []
    try:
        for share in shares:
            started.append((share, _start(uri, [jobs[k] for k in share])))
        for k in here:
            results[k] = job_result(conn, *jobs[k])
        for share, worker in started:
            answers = _answers(worker, len(share))
            for k, answer in zip(share, answers if answers is not None else [None] * len(share), strict=True):
                results[k] = answer if answers is not None else job_result(conn, *jobs[k])
    finally:
        for _, worker in started:
            if worker is not None and worker.poll() is None:  # interrupted: no worker outlives the check
                worker.kill()
                worker.wait()
    return results


def _shares(indices: list[int], jobs: Sequence[Job], count: int) -> list[list[int]]:
    """The jobs split into ``count`` shares of about the same rows (largest first, each to the lightest share)."""
    shares: list[list[int]] = [[] for _ in range(count)]
    weights = [0] * count
    rows = {k: jobs[k][2] - jobs[k][1] + 1 for k in indices}
    for k in sorted(indices, key=rows.__getitem__, reverse=True):
        lightest = weights.index(min(weights))
        shares[lightest].append(k)
        weights[lightest] += rows[k]
    return [sorted(share) for share in shares if share]


def _start(uri: str, jobs: list[Job]) -> subprocess.Popen[bytes] | None:
    """A worker: this file run by the same interpreter, isolated (``-I``: the standard library only, nothing of
    the environment), its jobs on its standard input. Not :mod:`multiprocessing`: its workers import the parent's
    main module again (a script without a ``__main__`` guard would run twice)."""
    if not sys.executable:  # an interpreter embedded in another program: no worker to start
        return None
    try:
        worker = subprocess.Popen([sys.executable, "-I", __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL)
    except OSError:
        return None
    assert worker.stdin is not None
    try:
        with worker.stdin:
            worker.stdin.write(json.dumps({"uri": uri, "jobs": jobs}).encode())
    except OSError:  # the worker ended at once
        pass
    return worker


def _answers(worker: subprocess.Popen[bytes] | None, expected: int) -> list[Any] | None:
    """A worker's results (digests back to bytes), or None when it failed or said something else."""
    if worker is None:
        return None
    assert worker.stdout is not None
    with worker.stdout:
        out = worker.stdout.read()
    worker.wait()
    if worker.returncode != 0:
        return None
    try:
        answers = json.loads(out)["results"]
        if not isinstance(answers, list) or len(answers) != expected:
            return None
        return [None if a is None else tuple(bytes.fromhex(p) for p in a) for a in answers]
    except (ValueError, KeyError, TypeError):
        return None


def _worker() -> int:
    """A worker's main: the jobs on its standard input, on its own read-only connection; their results (digests
    in hex) on its standard output."""
    request = json.load(sys.stdin)
    conn = sqlite3.connect(request["uri"], uri=True, timeout=5)
    try:
        results = [job_result(conn, str(kind), int(first), int(last)) for kind, first, last in request["jobs"]]
    finally:
        conn.close()
    json.dump({"results": [None if r is None else [p.hex() for p in r] for r in results]}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(_worker())
