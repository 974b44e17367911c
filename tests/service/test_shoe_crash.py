"""Card reads across a crash: a shoe in its own process, the table's process killed with kill -9.

The shoe (``tablectl simulate shoe --auto N --log-reads FILE``) is not reset when the table dies: it
goes on dealing as fast as the link takes its cards and numbers every read. A link-level ACK does not
make a card safe; the journal does. Whatever the moment of the kill, every read the shoe made must be
in the table's journal exactly once and in the shoe's order (DESIGN, "Device protocols").

The shoe deals while the table takes bets, so most cards are refused as irregularities: a refused card
is journaled all the same (as the irregularity, with the read's number), which is what is checked. A
one-deck shoe cut at half brings a shuffle, a new load and its numbering across the kills.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.journal import Journal
from controller.journal.anchor import load_key
from controller.service.core import SHOE_READ_KEY
from tests.mqtt_broker import Mosquitto
from tests.service.test_run import _config

TABLECTL = [sys.executable, "-m", "controller.cli"]
CARDS = 600


@pytest.fixture
def shoe_in_its_own_process(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """Shoe (dealing by itself, logging its reads), shuffler and chips as processes of their own."""
    links = tmp_path / "links"
    links.mkdir()
    reads = tmp_path / "shoe-reads.jsonl"
    shoe = [*TABLECTL, "simulate", "shoe", "--link", str(links / "shoe"), "--seed", "5", "--decks", "1",
            "--penetration", "0.5", "--auto", str(CARDS), "--auto-every", "0.004", "--log-reads", str(reads)]
    logs = {kind: (tmp_path / f"{kind}.log").open("w") for kind in ("shoe", "shuffler", "chips")}  # never a full pipe
    procs = [subprocess.Popen(shoe, stdout=subprocess.PIPE, stderr=logs["shoe"])] + [
        subprocess.Popen([*TABLECTL, "simulate", kind, "--link", str(links / kind), "--seed", "5"],
                         stdout=subprocess.PIPE, stderr=logs[kind])
        for kind in ("shuffler", "chips")
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None
            proc.stdout.readline()  # the slave path: the pty exists
        yield links, reads
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(10)
        for log in logs.values():
            log.close()


def _shoe_log(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def _shoe_done(tmp_path: Path) -> bool:
    """Whether the shoe dealt all its cards (it says so on stderr once the last read is in its log)."""
    log = tmp_path / "shoe.log"
    return log.exists() and f"dealt {CARDS} cards" in log.read_text()


def _journaled_reads(journal_path: Path, key: Path) -> list[tuple[tuple[int, int], dict[str, object]]]:
    journal = Journal.open_readonly(journal_path, key=load_key(key))
    try:
        return [(tuple(row.event[SHOE_READ_KEY]), row.event)
                for row in journal.inputs_since(0) if SHOE_READ_KEY in row.event]
    finally:
        journal.close()


class _Table:
    """``tablectl run`` in its own process, its stderr read as it comes (a full pipe would stall it)."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.err = ""
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def start(cls, config: Path, *args: str) -> _Table:
        return cls(await asyncio.create_subprocess_exec(*TABLECTL, "run", "--config", str(config), *args,
                                                        stdout=asyncio.subprocess.DEVNULL,
                                                        stderr=asyncio.subprocess.PIPE))

    async def _read(self) -> None:
        assert self.proc.stderr is not None
        while line := await self.proc.stderr.readline():
            self.err += line.decode()

    async def serving(self) -> None:
        """Wait until it serves (its log says so)."""
        async with asyncio.timeout(60):
            while "table service running" not in self.err:
                assert self.proc.returncode is None and not self._reader.done(), self.err
                await asyncio.sleep(0.05)

    async def end(self, sig: int) -> int:
        if self.proc.returncode is None:
            self.proc.send_signal(sig)
        code = await asyncio.wait_for(self.proc.wait(), 30)
        await self._reader
        return code


async def test_every_read_of_a_shoe_that_outlives_the_table_is_journaled_once_in_order(
        mosquitto: Mosquitto, tmp_path: Path, shoe_in_its_own_process: tuple[Path, Path]) -> None:
    links, reads_log = shoe_in_its_own_process
    config = _config(tmp_path, mosquitto.url, links)
    journal_path, key = tmp_path / "state" / "t05.journal", tmp_path / "keys" / "t05.key"
    rng = random.Random(int(os.environ.get("SHOE_CRASH_SEED", "16")))  # the kill times come from the seed
    first = ["--new-journal"]
    kills = 0
    # Most lives are killed 0.6 to 1.8 s after the table serves (mid-play); every fourth while it starts (its
    # journal being checked, its witnesses asked, its devices opened). Timed from the spawn instead, a loaded
    # machine's slow starts made nearly every kill one during a start, and the shoe dealt too few cards.
    deadline = asyncio.get_running_loop().time() + 180
    for life in range(200):
        if asyncio.get_running_loop().time() > deadline:
            break
        table = await _Table.start(config, *first)
        cut_while_starting = not first and life % 4 == 3  # the journal exists before the first kill
        first = []
        if cut_while_starting:
            await asyncio.sleep(rng.uniform(0.05, 0.6))
        else:
            await table.serving()
            await asyncio.sleep(rng.uniform(0.6, 1.8))
        code = await table.end(signal.SIGKILL)
        assert code == -signal.SIGKILL, table.err  # killed, never ended by itself
        kills += 1
        if len(_shoe_log(reads_log)) >= CARDS:
            break
    assert len(_shoe_log(reads_log)) >= CARDS, "the shoe did not deal its cards"
    # a last run, stopped cleanly once it serves, the shoe has dealt its last card and the journal holds
    # every read the shoe made: a read the shoe makes after the table stops is not lost but not yet
    # asked for (the next table would get it), so the shoe must be done before the logs are compared
    table = await _Table.start(config)
    try:
        await table.serving()
        with contextlib.suppress(TimeoutError):  # a read lost for good shows in the comparison below
            async with asyncio.timeout(60):
                while not _shoe_done(tmp_path) or len(_journaled_reads(journal_path, key)) < len(_shoe_log(reads_log)):
                    await asyncio.sleep(0.2)
    finally:
        assert await table.end(signal.SIGTERM) == 0, table.err
    assert _shoe_done(tmp_path), "the shoe was still dealing when the last table stopped"
    assert kills >= 3, f"only {kills} kills landed while the shoe dealt"
    dealt = [((int(r["load"]), int(r["read"])), r) for r in _shoe_log(reads_log)]  # type: ignore[call-overload]
    journaled = _journaled_reads(journal_path, key)
    numbers = [n for n, _ in journaled]
    lost = [n for n, _ in dealt if n not in set(numbers)]
    assert not lost, f"{len(lost)} reads the shoe made are not in the journal: {lost[:5]}..."
    assert numbers == [n for n, _ in dealt], "journaled reads differ from the shoe's (repeated or out of order)"
    for (number, shoe_read), (_, event) in zip(dealt, journaled, strict=True):
        if event["type"] == "card":  # a card the engine took: the very card the shoe read
            assert event["card"] == shoe_read["card"], number
    assert len({n[0] for n, _ in dealt}) >= 2, "the shoe was reloaded (cut at half a deck)"
    assert "Traceback" not in table.err
