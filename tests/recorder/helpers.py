"""The recorder in the tests: run in-process or as ``tablectl recorder``, and what its database must hold."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

from controller.journal import Journal
from controller.mqtt.options import BrokerOptions
from controller.recorder.service import Recorder, RecorderOptions
from controller.recorder.store import StoreError, open_store

#: the keywords of :func:`recording` that say how to reach the broker
BROKER_FIELDS = frozenset(f.name for f in dataclasses.fields(BrokerOptions))


@contextlib.asynccontextmanager
async def recording(brokers: Sequence[str], db: str, **kw: Any) -> AsyncIterator[Recorder]:
    """A recorder running in this event loop until the block ends (stopped cleanly: it must end by itself)."""
    broker = {k: kw.pop(k) for k in list(kw) if k in BROKER_FIELDS}  # the rest are the recorder's own
    rec = Recorder(RecorderOptions(BrokerOptions(brokers, **broker), db=db, **kw))
    task = asyncio.create_task(rec.run())
    try:
        async with asyncio.timeout(60):
            while not rec.ready.is_set():
                if task.done():
                    task.result()
                await asyncio.sleep(0.02)
        yield rec
    finally:
        rec.stop()
        await asyncio.wait_for(task, 60)


def recorder_process(broker: str, db: str | Path, log: Path, *, password: str | None = None,
                     extra: Sequence[str] = ()) -> subprocess.Popen[bytes]:
    """``tablectl recorder`` as its own process (killed -9 or stopped by SIGTERM in the tests)."""
    env = dict(os.environ)
    if password is not None:
        env["TABLECTL_RECORDER_PASSWORD"] = password
    with log.open("ab") as out:
        return subprocess.Popen([sys.executable, "-m", "controller.cli", "recorder", "--broker", broker, "--db",
                                 str(db), *extra], stdout=out, stderr=out, stdin=subprocess.DEVNULL, env=env)


def recorded_seq(db: str | Path, table_id: str) -> int:
    """The end of the table's gapless prefix in the database (0 when the database or the table is not there)."""
    try:
        with open_store(str(db), create=False) as store:
            position = store.position(table_id)
    except StoreError:
        return 0
    return 0 if position is None else position.seq


async def until(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    """Wait for ``predicate`` (polled), failing with ``what`` after ``timeout`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        await asyncio.sleep(0.05)


def assert_holds_the_journal(db: str | Path, table_id: str, journal: Journal) -> None:
    """The database holds exactly the table's journal: every seq once, in order, the very bodies published."""
    last = journal.last_seq
    expected = [(row.seq, row.body) for row in journal.records(1, last)]
    with open_store(str(db), create=False) as store:
        got = [(e.seq, e.body) for e in store.events(table_id)]
        position = store.position(table_id)
        gaps = store.gaps(table_id)
    assert [s for s, _ in got] == list(range(1, last + 1))
    assert got == expected
    assert position is not None and position.seq == last and gaps == []


def stop_process(proc: subprocess.Popen[bytes], timeout: float = 30) -> int:
    """SIGTERM, then its exit code."""
    proc.send_signal(signal.SIGTERM)
    return proc.wait(timeout)
