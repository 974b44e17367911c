"""The soak's central recorder (``tablectl soak --recorder``) and its invariant: the record is the journal.

``tablectl recorder`` runs in its own process on the soak's broker (each node of its cluster), writing
``<state-dir>/recorder.db``, its stderr in ``<state-dir>/recorder-N.log``. Its own faults are drawn from a
generator of their own (``<seed>:recorder``) and run beside the pit's steps, so the pit's schedule is the
same with and without it: now and then the recorder is killed with ``kill -9`` and started again a moment
later (its persistent session brings back what it had not acknowledged).

The invariant, read through the recorder's store (:func:`controller.recorder.store.open_store`) beside the
running recorder and each table's journal beside the running table: **the recorder's database holds exactly
each table's journal, seq for seq**. After every step, what it holds (its gapless prefix) equals the
journal's published bodies byte for byte, and it holds nothing the journal does not; at the end, once the
pit has delivered everything, it holds every journal to its last seq, with no gap and nothing held beyond.
A comparison goes on from where the last one stopped, so a long soak reads each event once.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from controller.journal import Journal, JournalError
from controller.sim.soak_check import InvariantBroken

__all__ = ["INVARIANT", "SoakRecorder"]

INVARIANT = "the recorder holds exactly each journal"
#: how long the recorder may take to hold every journal to its last seq once the pit has delivered it
CATCH_UP_S = 90.0


class SoakRecorder:
    """``tablectl recorder`` as the soak runs it, killed on its own schedule, and the record checked."""

    def __init__(self, state_dir: Path, *, brokers: Sequence[str], prefix: str, password: str | None,
                 seed: int, stream: tuple[Sequence[str], str, str] | None = None) -> None:
        self.state_dir = state_dir
        #: on a floor: the TABLES stream's NATS addresses, user and password (gaps filled from it, as the demo's
        #: recorder does: events published while the cluster refused the recorder's first subscription reach
        #: no session of it, and without the stream its record never starts)
        self.stream = stream
        self.db = state_dir / "recorder.db"
        self.brokers = list(brokers)
        self.prefix = prefix
        self.password = password
        self.rng = random.Random(f"{seed}:recorder")
        self.proc: asyncio.subprocess.Process | None = None
        self.runs = 0
        self.kills = 0
        self.logs: list[Path] = []
        self._checked: dict[str, int] = {}  # table -> the seq up to which the record equals the journal

    # -- the process ------------------------------------------------------------------------------

    async def start(self) -> None:
        self.runs += 1
        log = self.state_dir / f"recorder-{self.runs}.log"
        self.logs.append(log)
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        if self.password is not None:
            env["TABLECTL_RECORDER_PASSWORD"] = self.password
        stream_args: list[str] = []
        if self.stream is not None:
            urls, user, password = self.stream
            stream_args = ["--stream", ",".join(urls), "--stream-user", user]
            env["TABLECTL_STREAM_PASSWORD"] = password
        with log.open("wb") as err:
            self.proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "controller.cli", "recorder", "--broker", ",".join(self.brokers),
                "--db", str(self.db), "--prefix", self.prefix, "--log-level", "WARNING", *stream_args,
                stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL, stderr=err, env=env)

    async def kill(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGKILL)
        await proc.wait()

    async def stop(self) -> None:
        """SIGTERM: the recorder finishes the commit in hand and exits 0."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            proc.terminate()
        try:
            await asyncio.wait_for(proc.wait(), 30)
        except TimeoutError:
            proc.kill()
            await proc.wait()

    async def faults(self, mean_s: float) -> None:
        """Its own schedule, beside the pit's (cancelled before the final check): every ``5 x mean_s`` to
        ``20 x mean_s`` seconds (3 s at least: it must get to work between kills), ``kill -9`` mid-stream, down
        for 0.2 to 3 s, started again."""
        while True:
            await asyncio.sleep(self.rng.uniform(max(3.0, 5 * mean_s), max(6.0, 20 * mean_s)))
            down_s = self.rng.uniform(0.2, 3.0)
            self.kills += 1
            await self.kill()
            try:
                await asyncio.sleep(down_s)
            finally:
                await self.start()

    def exited(self) -> int | None:
        """The exit code of a recorder that stopped on its own, else None."""
        return self.proc.returncode if self.proc is not None else None

    # -- the invariant ------------------------------------------------------------------------------

    def check(self, journals: Path, table_ids: Sequence[str], key: bytes) -> dict[str, int]:
        """The record so far equals each journal, seq for seq; returns each table's position in the record."""
        from controller.recorder.store import StoreError, open_store

        if not self.db.exists():
            return {}
        try:
            store = open_store(str(self.db), create=False)
        except StoreError:
            return {}  # not written yet
        positions: dict[str, int] = {}
        try:
            for table_id in table_ids:
                path = journals / f"{table_id}.journal"
                position = store.position(table_id)
                if position is None or not path.exists():
                    continue
                held = position.seq
                positions[table_id] = held
                with Journal.open_readonly(path, key=key) as journal:
                    last = journal.last_seq
                    if held > last:
                        raise InvariantBroken(INVARIANT, f"{table_id}: the recorder holds seq {held}, the journal "
                                              f"ends at {last}")
                    if journal.journal_id is not None and position.journal_id not in (None, journal.journal_id):
                        raise InvariantBroken(INVARIANT, f"{table_id}: the recorder's journal id "
                                              f"{position.journal_id}, the journal's {journal.journal_id}")
                    start = self._checked.get(table_id, 0) + 1
                    if held < start:
                        continue
                    rows = {row.seq: row.body for row in journal.records(start, held)}
                    expected = start
                    for event in store.events(table_id, start, held):
                        if event.seq != expected:
                            raise InvariantBroken(INVARIANT, f"{table_id}: the recorder lacks seq {expected} "
                                                  f"below its position {held}")
                        journaled = rows.get(event.seq, "")
                        if journaled != event.body:
                            raise InvariantBroken(INVARIANT, f"{table_id} seq {event.seq}: the recorder holds "
                                                  f"{event.body[:120]!r}, the journal {journaled[:120]!r}")
                        expected += 1
                    if expected != held + 1:
                        raise InvariantBroken(INVARIANT, f"{table_id}: the recorder's position is {held} but it "
                                              f"holds events only to {expected - 1}")
                    self._checked[table_id] = held
        except JournalError as e:
            raise InvariantBroken("journal verifies", str(e)) from None
        finally:
            store.close()
        return positions

    async def check_final(self, journals: Path, table_ids: Sequence[str], key: bytes, *,
                          catch_up_s: float = CATCH_UP_S) -> None:
        """Once the pit has delivered everything: the whole record equals every journal to its last seq (read
        again from seq 1: nothing edited since an earlier check), and holds no more."""
        from controller.recorder.store import open_store

        self._checked.clear()
        last: dict[str, int] = {}
        for table_id in table_ids:
            with Journal.open_readonly(journals / f"{table_id}.journal", key=key) as journal:
                last[table_id] = journal.last_seq
        deadline = time.monotonic() + catch_up_s
        while True:
            positions = self.check(journals, table_ids, key)
            behind = {t: (positions.get(t, 0), s) for t, s in last.items() if positions.get(t, 0) < s}
            if not behind:
                break
            if self.exited() is not None:
                raise InvariantBroken(INVARIANT, f"the recorder exited {self.exited()} before holding every "
                                      f"journal: {behind} (see {self.logs[-1]})")
            if time.monotonic() > deadline:
                raise InvariantBroken(INVARIANT, f"after {catch_up_s:g} s the recorder holds only (held, journal "
                                      f"last seq): {behind}")
            await asyncio.sleep(0.5)
        store = open_store(str(self.db), create=False)
        try:
            for table_id, seq in last.items():
                beyond = next(iter(store.events(table_id, seq + 1)), None)
                if beyond is not None:
                    raise InvariantBroken(INVARIANT, f"{table_id}: the recorder holds seq {beyond.seq} beyond the "
                                          f"journal's last {seq}")
                gaps = store.gaps(table_id)
                if gaps:
                    raise InvariantBroken(INVARIANT, f"{table_id}: the recorder holds events beyond gaps {gaps}")
        finally:
            store.close()
