"""A journal taken on purpose on a table the central recorder already holds (docs/journal.md, "The recorder").

A table PC replaced after a disk failure starts a new journal (``tablectl run --new-journal``, a demo on a fresh
state directory) or a person adopts one (``--adopt-journal``): its first published record names the journal
(``journal_started``, ``journal_adopted``), and the recorder starts a new record of the table from it, the old
one kept, so the table's next ordinary start is vouched for; the old journal put back is refused by the
recorder, as a swapped journal must be. Only the table may publish such a record (the generated ACL).

Everything is real: journals played by ``tablectl demo`` as table t01, the pit's Mosquitto started from what
``tablectl broker-config`` wrote, and ``tablectl recorder`` as its own process with its generated user.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controller.cli import main as tablectl
from controller.recorder.store import open_store
from tests.mqtt.pit_broker import PIT, PREFIX, Broker, _pit
from tests.mqtt.test_recorder_witness import (
    RECORDER,
    ROUNDS,
    _anchors,
    _demo,
    _forget_state,
    _journal_id,
    _last_seq,
    _recorder_position,
    _refused,
    _the_recorder,
    _until_recorded,
    _url,
)
from tests.recorder.helpers import recorder_process, stop_process


@pytest.fixture(autouse=True)
def _anchors_in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))


class Recorder:
    """The real ``tablectl recorder`` on the pit's broker, as its own process: stopped and started again as its
    operator would (its persistent session keeps what the tables publish meanwhile)."""

    def __init__(self, pit: Broker, db: Path, log: Path) -> None:
        self.pit, self.db, self.log = pit, db, log
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.proc = recorder_process(f"mqtt://127.0.0.1:{self.pit.port}", self.db, self.log,
                                     password=self.pit.password(RECORDER))
        asyncio.run(_subscribed(self.pit, self.proc, self.log))

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            assert stop_process(proc) == 0, self.log.read_text()


@pytest.fixture
def running(pit: Broker, tmp_path: Path) -> Iterator[Recorder]:
    rec = Recorder(pit, tmp_path / "recorder.db", tmp_path / "recorder.log")
    rec.start()
    try:
        yield rec
    finally:
        rec.stop()


@pytest.fixture
def recorder(running: Recorder) -> Path:
    """The running recorder's database."""
    return running.db


async def _subscribed(pit: Broker, proc: subprocess.Popen[bytes], log: Path) -> None:
    """Until the recorder is subscribed: its alarms (retained, maybe empty) come once it is."""
    async with asyncio.timeout(60), pit.client("dashboard") as c:
        await c.subscribe(f"{PREFIX}/recorder/alarms", qos=1)
        async for _ in c.messages:
            return
    assert proc.poll() is None, log.read_text()


async def _remove_position(pit: Broker) -> None:
    """The recorder's operator removes its retained position of t01, as the ``recorder`` user and in its session
    (``clean_session`` false: a clean one would end the recorder's session and what it keeps)."""
    async with pit.client(RECORDER, clean_session=False, identifier=RECORDER) as client:
        await client.publish(f"{PREFIX}/recorder/t01", b"", qos=1, retain=True)


def _alarms(pit: Broker) -> list[dict[str, Any]]:
    async def read() -> list[dict[str, Any]]:
        async with asyncio.timeout(10), pit.client("dashboard") as c:
            await c.subscribe(f"{PREFIX}/recorder/alarms", qos=1)
            async for m in c.messages:
                return list(json.loads(bytes(m.payload)))
        return []

    return asyncio.run(read())


def _kept(db: Path) -> list[tuple[str, str | None, int]]:
    with open_store(str(db), create=False) as store:
        return [(r.table_id, r.journal_id, r.last_seq) for r in store.records("t01")]


def _events(db: Path, table_id: str) -> list[str]:
    with open_store(str(db), create=False) as store:
        return [e.body for e in store.events(table_id)]


def _outbox(journal: Path) -> list[str]:
    import sqlite3
    from contextlib import closing

    with closing(sqlite3.connect(journal)) as db:
        return [str(r[0]) for r in db.execute("SELECT body FROM outbox ORDER BY seq")]


def test_a_new_journal_on_purpose_is_recorded_from_seq_1_and_the_old_journal_put_back_is_refused(
        pit: Broker, recorder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old, new = tmp_path / "old", tmp_path / "new"
    assert _demo(pit, old, ROUNDS, capsys)[0] == 0
    asyncio.run(_until_recorded(pit, old / "t01.journal"))
    old_id = _journal_id(old / "t01.journal")
    # the table PC's disk is replaced: a demo on a fresh state directory is a new journal on purpose
    assert _demo(pit, new, ROUNDS, capsys)[0] == 0
    first = json.loads(_outbox(new / "t01.journal")[0])
    new_id = _journal_id(new / "t01.journal")
    assert (first["seq"], first["type"], first["journal_id"]) == (1, "journal_started", new_id)
    asyncio.run(_until_recorded(pit, new / "t01.journal"))
    assert _events(recorder, "t01") == _outbox(new / "t01.journal"), "recorded from seq 1, body for body"
    assert _kept(recorder) == [(f"t01@{old_id}", old_id, _last_seq(old / "t01.journal"))]
    assert _events(recorder, f"t01@{old_id}") == _outbox(old / "t01.journal"), "the old record kept whole"
    assert not [a for a in _alarms(pit) if a["table_id"] == "t01"], "no conflict: the table said it on purpose"
    # the readers: the current record by the table's id, the kept one by its name
    for table, state in (("t01", new), (f"t01@{old_id}", old)):
        capsys.readouterr()
        assert tablectl(["recall", "--db", str(recorder), "--table", table, "--json"]) == 0
        from_db = json.loads(capsys.readouterr().out)
        assert tablectl(["recall", str(state / "t01.journal"), "--key", str(state / "journal.key"), "--json"]) == 0
        assert from_db == json.loads(capsys.readouterr().out) and len(from_db) == ROUNDS
    # its next ordinary start: admitted (anchor, retained state and recorder all hold the new journal)
    code, err = _demo(pit, new, ROUNDS + 2, capsys)
    assert code == 0, err
    asyncio.run(_until_recorded(pit, new / "t01.journal"))
    # the old journal put back (its own anchor with it, the retained state cleared): refused by the recorder
    _forget_state(pit)
    _refused(pit, old, capsys, f"journal {old / 't01.journal'}: refused by {_the_recorder(pit)}: ",
             f"it holds journal {new_id}", f"but this is journal {old_id}")
    # journal verify --against: each journal against its own record
    for state in (old, new):
        assert tablectl(["journal", "verify", str(state / "t01.journal"), "--key", str(state / "journal.key"),
                         "--against", str(recorder)]) == 0, capsys.readouterr()
        assert "recorder at seq" in capsys.readouterr().out


def test_an_adopted_journal_starts_a_new_record_at_its_adoption(
        pit: Broker, running: Recorder, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    recorder = running.db
    held, bench_state = tmp_path / "held", tmp_path / "bench"
    assert _demo(pit, held, ROUNDS + 3, capsys)[0] == 0
    asyncio.run(_until_recorded(pit, held / "t01.journal"))
    held_id = _journal_id(held / "t01.journal")
    # a journal t01 played on a bench broker (its anchor elsewhere), brought to the pit
    bench = _pit(tmp_path / "bench-broker")
    try:
        assert _demo(bench, bench_state, ROUNDS, capsys)[0] == 0
    finally:
        bench.close()
    shutil.rmtree(_anchors())
    adopted_id = _journal_id(bench_state / "t01.journal")
    # the recorder holds another journal: no adoption overrules it ...
    _forget_state(pit)
    line = _refused(pit, bench_state, capsys, f"refused by {_the_recorder(pit)}: it holds journal {held_id}")
    assert "--adopt-journal" not in line
    # ... until the recorder's operator stops it and removes its position of t01 (a running recorder publishes it
    # again at its next commit of the table), and a person adopts the journal
    running.stop()
    asyncio.run(_remove_position(pit))
    end = _last_seq(bench_state / "t01.journal")
    code = tablectl(["demo", "--tables", "1", "--rounds", str(ROUNDS + 2), "--seed", "3", "--speed", "max",
                     "--state-dir", str(bench_state), "--broker", _url(pit), "--no-dashboard", "--quiet",
                     "--adopt-journal", "--operator", PIT, "--reason", "t01 moved from the bench"])
    assert code == 0, capsys.readouterr().err
    adoption = json.loads(_outbox(bench_state / "t01.journal")[end])
    assert (adoption["seq"], adoption["type"], adoption["journal_id"]) == (end + 1, "journal_adopted", adopted_id)
    running.start()  # what the table published meanwhile comes from its session
    asyncio.run(_until_recorded(pit, bench_state / "t01.journal"))
    assert _events(recorder, "t01") == _outbox(bench_state / "t01.journal")[end:], "from the adoption on"
    assert [k[:2] for k in _kept(recorder)] == [(f"t01@{held_id}", held_id)]
    assert not [a for a in _alarms(pit) if a["table_id"] == "t01"]
    # its next ordinary start, the recorder the only witness: admitted; the journal it replaced: refused
    shutil.rmtree(_anchors())
    _forget_state(pit)
    code, err = _demo(pit, bench_state, ROUNDS + 3, capsys)
    assert code == 0, err
    _forget_state(pit)
    _refused(pit, held, capsys, f"refused by {_the_recorder(pit)}: it holds journal {adopted_id}")
    assert tablectl(["journal", "verify", str(bench_state / "t01.journal"), "--key",
                     str(bench_state / "journal.key"), "--against", str(recorder)]) == 0, capsys.readouterr()


def test_a_forged_journal_started_from_anyone_but_the_table_is_refused_by_the_acl(
        pit: Broker, recorder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    live = tmp_path / "state"
    assert _demo(pit, live, ROUNDS, capsys)[0] == 0
    asyncio.run(_until_recorded(pit, live / "t01.journal"))
    before = asyncio.run(_recorder_position(pit))
    forged = json.dumps({"seq": 1, "ts": 1.0, "type": "journal_started", "journal_id": "f" * 32}).encode()

    async def forge() -> None:
        for user in (PIT, "dashboard", "t02", RECORDER, "eye.one", "tech.kim"):
            # the recorder's user in the recorder's session, as its operator would (:func:`_remove_position`): a
            # clean session would end the running recorder's, and the events published before it subscribed again
            # would never reach it (seen: the table's next start ran ahead of the recorder's reconnection)
            kw: dict[str, Any] = {"clean_session": False, "identifier": RECORDER} if user == RECORDER else {}
            async with pit.client(user, **kw) as c:
                await c.publish(f"{PREFIX}/t01/events", forged, qos=1)

    asyncio.run(forge())
    # the table plays on; once that is recorded, whatever the broker let through has been too
    assert _demo(pit, live, ROUNDS + 1, capsys)[0] == 0
    asyncio.run(_until_recorded(pit, live / "t01.journal"))
    after = asyncio.run(_recorder_position(pit))
    assert after.journal_id == before.journal_id == _journal_id(live / "t01.journal")
    assert _kept(recorder) == [] and _events(recorder, "t01") == _outbox(live / "t01.journal")
