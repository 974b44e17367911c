"""The central recorder as the third witness of a journal's end (DESIGN, "Journal integrity and game recall" and
"The casino floor"; docs/journal.md, "The recorder").

Each insider's move is played on real journals (a demo as table t01) and a real Mosquitto started from what
``tablectl broker-config`` writes: the table reads its own ``state`` and the recorder's position of it with its
own credentials. In every move the anchor is removed or put back with the journal and the broker's retained
``state`` is cleared, so the recorder alone can tell.

The recorder's position is published as the recorder publishes it (``<prefix>/recorder/t01``, retained: the end
of what it holds, the journal id, the chain head the table published with its ``state`` there) by the
generated ``recorder`` user, the only one the ACL lets write it; the last test runs the real ``tablectl
recorder`` on the same broker instead.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sqlite3
import time
from contextlib import closing
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from controller.cli import main as tablectl
from controller.journal import Journal
from controller.mqtt.recorder_witness import RecorderWitness, parse_position
from controller.mqtt.witness import read_retained
from controller.sim import demo as _demo_module  # noqa: F401  # now: run_demo's ``out`` default is this sys.stdout
from tests.mqtt.pit_broker import PREFIX, Broker

ROUNDS = 4
RECORDER = "recorder"


@pytest.fixture(autouse=True)
def _anchors_in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))


def _url(pit: Broker, user: str = "t01") -> str:
    return f"mqtt://{user}:{pit.password(user)}@127.0.0.1:{pit.port}"


def _demo(pit: Broker, state: Path, rounds: int, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = tablectl(["demo", "--tables", "1", "--rounds", str(rounds), "--seed", "3", "--speed", "max",
                     "--state-dir", str(state), "--broker", _url(pit), "--no-dashboard", "--quiet"])
    err = capsys.readouterr().err
    assert pit.password("t01") not in err
    return code, err


def _db(journal: Path) -> closing[sqlite3.Connection]:
    return closing(sqlite3.connect(journal))


def _last_seq(journal: Path) -> int:
    with _db(journal) as db:
        return int(db.execute("SELECT COALESCE(MAX(seq), 0) FROM outbox").fetchone()[0])


def _journal_id(journal: Path) -> str:
    with _db(journal) as db:
        return str(db.execute("SELECT value FROM meta WHERE key = 'journal_id'").fetchone()[0])


def _head(journal: Path, seq: int) -> str:
    with _db(journal) as db:
        return bytes(db.execute("SELECT hash FROM outbox WHERE seq = ?", (seq,)).fetchone()[0]).hex()


def _position(journal: Path) -> dict[str, Any]:
    """What the recorder holds of t01 having received everything the table published from ``journal``."""
    seq = _last_seq(journal)
    return {"table_id": "t01", "seq": seq, "journal_id": _journal_id(journal), "head_seq": seq,
            "head": _head(journal, seq), "ts": time.time()}


async def _retain(pit: Broker, user: str, topic: str, payload: bytes) -> None:
    async with pit.client(user) as client:
        await client.publish(topic, payload, qos=1, retain=True)


def _record(pit: Broker, position: dict[str, Any] | None) -> None:
    """The recorder retains its position of t01 (None: it holds none)."""
    payload = json.dumps(position).encode() if position is not None else b""
    asyncio.run(_retain(pit, RECORDER, f"{PREFIX}/recorder/t01", payload))


def _forget_state(pit: Broker) -> None:
    """The broker's retained state of t01 cleared (a broker restarted empty, or cleared by the table's user)."""
    asyncio.run(_retain(pit, "t01", f"{PREFIX}/t01/state", b""))


def _anchors() -> Path:
    return Path(os.environ["XDG_STATE_HOME"]) / "tablectl" / "anchors"


def _refused(pit: Broker, state: Path, capsys: pytest.CaptureFixture[str], *expected: str) -> str:
    before = _last_seq(state / "t01.journal")
    code, err = _demo(pit, state, ROUNDS + 3, capsys)
    line = err.strip()
    assert code == 2, f"the table went online (exit {code}): {err}"
    assert len(line.splitlines()) == 1 and "Traceback" not in line, err
    for part in expected:
        assert part in line, line
    assert _last_seq(state / "t01.journal") == before, "nothing may be played on a refused journal"
    return line


def _the_recorder(pit: Broker) -> str:
    return f"the recorder's position of t01 (mqtt://t01:***@127.0.0.1:{pit.port})"


# -- the insider's moves ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("anchor", ["put back", "removed"])
def test_a_journal_rolled_back_behind_the_recorder_is_refused_naming_it_and_both_positions(
        pit: Broker, tmp_path: Path, anchor: str, capsys: pytest.CaptureFixture[str]) -> None:
    live, backup = tmp_path / "state", tmp_path / "backup"
    assert _demo(pit, live, ROUNDS, capsys)[0] == 0
    shutil.copytree(live, backup)
    shutil.copytree(_anchors(), tmp_path / "anchors-backup")
    behind = _last_seq(live / "t01.journal")
    assert _demo(pit, live, ROUNDS + 3, capsys)[0] == 0
    ahead = _last_seq(live / "t01.journal")
    _record(pit, _position(live / "t01.journal"))
    # the state directory put back from the older copy; the anchor with it (or gone); the retained state cleared
    shutil.rmtree(live)
    shutil.copytree(backup, live)
    shutil.rmtree(_anchors())
    if anchor == "put back":
        shutil.copytree(tmp_path / "anchors-backup", _anchors())
    _forget_state(pit)
    line = _refused(pit, live, capsys, f"journal {live / 't01.journal'}: behind {_the_recorder(pit)}: ",
                    f"the journal ends at seq {behind} but {_the_recorder(pit)} holds seq {ahead} (journal "
                    f"{_journal_id(live / 't01.journal')}): rolled back, truncated, emptied or put back")
    assert pit.password("t01") not in line
    # without the recorder's position the same move goes unseen by the others (or finds no witness at all)
    _record(pit, None)
    code, err = _demo(pit, live, ROUNDS + 3, capsys)
    if anchor == "put back":
        assert code == 0, err  # the anchor agrees with the old journal: what the recorder is there to catch
    else:
        assert code == 2 and "no witness vouches for it" in err, err


def test_another_journal_in_the_tables_place_is_refused_by_the_recorder_even_at_the_same_seq(
        pit: Broker, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ours, other = tmp_path / "ours", tmp_path / "other"
    assert _demo(pit, other, ROUNDS, capsys)[0] == 0  # the journal the recorder holds
    held = _position(other / "t01.journal")
    assert _demo(pit, ours, ROUNDS, capsys)[0] == 0  # a new journal for t01, started fresh (same seed, same seq)
    assert _last_seq(ours / "t01.journal") == held["seq"]
    _record(pit, held)
    shutil.rmtree(_anchors())
    _forget_state(pit)
    line = _refused(pit, ours, capsys, f"journal {ours / 't01.journal'}: refused by {_the_recorder(pit)}: ")
    assert (f"it holds journal {held['journal_id']} up to seq {held['seq']}, but this is journal "
            f"{_journal_id(ours / 't01.journal')} at seq {held['seq']} (another journal in the table's place)") in line


def _rechain(journal: Path, key: bytes, into: Path, seq: int) -> None:
    """What someone holding the key can do: write the journal again, every row chained and signed under the
    key, with the record at ``seq`` altered (its ``ts``) and the same journal id: every row checks."""
    with _db(journal) as db:
        inputs = db.execute("SELECT id, ts, event FROM inputs ORDER BY id").fetchall()
        records = db.execute("SELECT seq, input_id, body FROM outbox ORDER BY seq").fetchall()
        journal_id = str(db.execute("SELECT value FROM meta WHERE key = 'journal_id'").fetchone()[0])
    Journal(into, key=key).close()
    with _db(into) as db, db:
        db.execute("UPDATE meta SET value = ? WHERE key = 'journal_id'", (journal_id,))
    by_input: dict[int, list[dict[str, Any]]] = {}
    for n, input_id, body in records:
        data = json.loads(body)
        if n == seq:
            data["ts"] = round(data["ts"] + 0.001, 3)
        by_input.setdefault(int(input_id), []).append(data)
    with Journal(into, key=key) as forged:
        forged.add_records(by_input.get(0, []))  # before the first input: a new journal's journal_started
        for input_id, ts, event in inputs:
            with forged.transaction():
                assert forged.append_input(event, ts=ts) == input_id
                forged.add_records(by_input.get(int(input_id), []), input_id=input_id)
        forged.verify()
    os.chmod(into, 0o600)


def test_a_journal_chained_again_with_the_key_at_the_same_seq_is_refused_by_the_recorders_head(
        pit: Broker, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    live = tmp_path / "state"
    assert _demo(pit, live, ROUNDS, capsys)[0] == 0
    journal = live / "t01.journal"
    held = _position(journal)
    _record(pit, held)
    forged = tmp_path / "forged.journal"
    _rechain(journal, _key_bytes(live), forged, held["seq"] - 5)
    shutil.move(forged, journal)
    assert (_last_seq(journal), _journal_id(journal)) == (held["seq"], held["journal_id"])
    assert _head(journal, held["seq"]) != held["head"]
    shutil.rmtree(_anchors())
    _forget_state(pit)
    line = _refused(pit, live, capsys, f"journal {journal}: refused by {_the_recorder(pit)}: ",
                    f"it holds head {held['head'][:16]}... at seq {held['seq']}, but this journal's record at seq "
                    f"{held['seq']} has head {_head(journal, held['seq'])[:16]}...: rewritten and chained again")
    assert "journal key" in line


def _key_bytes(state: Path) -> bytes:
    from controller.journal.anchor import load_key

    return load_key(state / "journal.key")


# -- the honest starts -----------------------------------------------------------------------------------------


def test_the_recorder_alone_vouches_for_the_tables_own_journal_behind_it_or_level(
        pit: Broker, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    live = tmp_path / "state"
    assert _demo(pit, live, ROUNDS, capsys)[0] == 0
    retained = asyncio.run(read_retained(_url(pit), prefix=PREFIX, table_ids=["t01"]))["t01"]
    state = cast(Any, retained.state)
    assert state.seq == _last_seq(live / "t01.journal"), "the table's retained state"
    level = _position(live / "t01.journal")
    _record(pit, level)
    for rounds in (ROUNDS + 1, ROUNDS + 2):  # level with the journal, then behind it (the recorder lags)
        shutil.rmtree(_anchors())
        _forget_state(pit)
        code, err = _demo(pit, live, rounds, capsys)
        assert code == 0, err
        assert _last_seq(live / "t01.journal") > level["seq"]


async def test_the_table_reads_its_own_recorder_position_and_no_other_tables(pit: Broker) -> None:
    """Under the generated ACL: in the same short connection as its retained state; another table's is hidden."""
    for table in ("t01", "t02"):
        position = {"table_id": table, "seq": 7, "journal_id": "a" * 32, "head_seq": 7, "head": "ab" * 32, "ts": 1.0}
        await _retain(pit, RECORDER, f"{PREFIX}/recorder/{table}", json.dumps(position).encode())
    started = time.monotonic()
    mine = (await read_retained(_url(pit), prefix=PREFIX, table_ids=["t01"]))["t01"]
    assert time.monotonic() - started < 1.0
    assert mine.recorder == parse_position(json.dumps(position | {"table_id": "t01"}).encode(), "t01")
    theirs = (await read_retained(_url(pit), prefix=PREFIX, table_ids=["t02"]))["t02"]
    assert isinstance(theirs.recorder, str) and "holds no recorder position of t02" in theirs.recorder
    # nor may a table (or a screen) write a position: only the recorder's user
    for user in ("t01", "dashboard"):
        await _retain(pit, user, f"{PREFIX}/recorder/t01", b'{"table_id": "t01", "seq": 1000000}')
    again = (await read_retained(_url(pit), prefix=PREFIX, table_ids=["t01"]))["t01"]
    assert again.recorder == mine.recorder


# -- the witness's own rules -----------------------------------------------------------------------------------


def _journal(last_seq: int, journal_id: str = "j" * 32, heads: dict[int, bytes] | None = None) -> Journal:
    held = heads or {}
    return cast(Journal, SimpleNamespace(last_seq=last_seq, journal_id=journal_id, path=Path("/pit/t01.journal"),
                                         record_hash=held.get))


def _said(payload: dict[str, Any] | bytes, journal: Journal) -> tuple[str, int | None, str]:
    raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    t = RecorderWitness("t01", "mqtt://u:secret@h:1", parse_position(raw, "t01")).testify(journal)
    assert "secret" not in t.witness + t.detail
    return t.verdict, t.seq, t.detail


def test_the_recorders_testimony() -> None:
    jid = "j" * 32
    head = bytes.fromhex("cd" * 32)
    ours = _journal(50, jid, {40: head})
    at = {"table_id": "t01", "seq": 45, "journal_id": jid, "head_seq": 40, "head": head.hex(), "ts": 1.0}
    assert _said(at, ours)[:2] == ("vouches", 45)
    assert _said(at | {"seq": 50}, ours)[:2] == ("vouches", 50)
    assert _said(at | {"seq": 51}, ours)[:2] == ("ahead", 51)
    assert _said(at | {"journal_id": "k" * 32}, ours)[0] == "differs"
    assert _said(at | {"journal_id": "k" * 32, "seq": 900}, ours)[0] == "differs"  # another journal, named so
    assert _said(at | {"head": "ce" * 32}, ours)[0] == "differs"
    assert _said(at | {"head_seq": None, "head": None}, ours)[:2] == ("vouches", 45)
    assert _said(at | {"journal_id": None}, ours)[0] == "silent"
    assert _said(at | {"journal_id": None, "seq": 60}, ours)[0] == "ahead"
    assert _said(at, _journal(50, jid, {}))[0] == "silent"  # its head's record archived away: not compared
    for bad in (b"", b"not json", b"[1]", json.dumps(at | {"table_id": "t02"}).encode(),
                json.dumps(at | {"seq": "45"}).encode(), json.dumps(at | {"seq": -1}).encode(),
                json.dumps(at | {"seq": True}).encode(), json.dumps(at | {"head_seq": 46}).encode(),
                json.dumps(at | {"head": "XYZ"}).encode(), json.dumps(at | {"head": None}).encode(),
                json.dumps(at | {"journal_id": 5}).encode()):
        verdict, _, detail = _said(bad, ours)
        assert verdict == "silent" and detail, bad


# -- tablectl run ----------------------------------------------------------------------------------------------


async def test_tablectl_run_asks_the_recorder_too(pit: Broker, tmp_path: Path) -> None:
    from controller.journal import JournalError
    from controller.journal.admission import open_table_journal
    from controller.service.runner import run_table
    from controller.service.settings import load_settings
    from drivers.errors import PortNotFound
    from tests.service.test_run import _config

    settings = load_settings(_config(tmp_path, _url(pit), tmp_path / "no-devices"),
                             overrides={"table_id": "t01", "mqtt": {"prefix": PREFIX}})
    settings.state_dir.mkdir(parents=True)
    open_table_journal(settings.journal_path, table_id="t01", key_file=settings.journal_key,
                       anchor_dir=settings.anchor_dir, new=True).close()  # ends at seq 1: journal_started
    with _db(settings.journal_path) as db:
        journal_id = str(db.execute("SELECT value FROM meta WHERE key = 'journal_id'").fetchone()[0])
    ahead = {"table_id": "t01", "seq": 7, "journal_id": journal_id, "head_seq": None, "head": None, "ts": 1.0}
    await _retain(pit, RECORDER, f"{settings.mqtt.prefix}/recorder/t01", json.dumps(ahead).encode())
    with pytest.raises(JournalError, match=r"the journal ends at seq 1 but the recorder's position of t01 "
                                           r"\(mqtt://t01:\*\*\*@127\.0\.0\.1:\d+\) holds seq 7 "):
        await run_table(settings)
    await _retain(pit, RECORDER, f"{settings.mqtt.prefix}/recorder/t01", json.dumps(ahead | {"seq": 1}).encode())
    with pytest.raises(PortNotFound):  # past the witnesses, on to the devices (absent here)
        await run_table(settings)


# -- with the real recorder ------------------------------------------------------------------------------------


async def _recorder_position(pit: Broker) -> Any:
    return (await read_retained(_url(pit), prefix=PREFIX, table_ids=["t01"]))["t01"].recorder


async def _until_recorded(pit: Broker, journal: Path, timeout: float = 60) -> None:
    """Until the recorder's retained position of t01 holds the journal's end and the head the table published
    there (the recorder writes what came since its last write in one go, and publishes positions at intervals)."""
    want = _position(journal)
    got: Any = None
    try:
        async with asyncio.timeout(timeout):
            while True:
                got = await _recorder_position(pit)
                if not isinstance(got, str) and (got.seq, got.journal_id, got.head_seq, got.head) == (
                        want["seq"], want["journal_id"], want["head_seq"], want["head"]):
                    return
                await asyncio.sleep(0.2)
    except TimeoutError:
        raise AssertionError(f"the recorder's position after {timeout:g} s: {got!r}; "
                             f"the journal's end: {want}") from None


def test_the_real_recorder_vouches_for_the_tables_journal_and_refuses_it_rolled_back(
        pit: Broker, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``tablectl recorder`` records the demo through the generated ACL and retains its position; its position
    alone admits the table's own journal (anchor and retained state gone) and refuses it put back from a copy
    (anchor put back with it)."""
    from tests.recorder.helpers import recorder_process, stop_process

    live, backup = tmp_path / "state", tmp_path / "backup"
    log = tmp_path / "recorder.log"
    proc = recorder_process(f"mqtt://127.0.0.1:{pit.port}", tmp_path / "recorder.db", log,
                            password=pit.password(RECORDER))
    try:
        async def subscribed() -> None:  # its alarms (retained, maybe empty) come once it is subscribed
            async with asyncio.timeout(60), pit.client("dashboard") as c:
                await c.subscribe(f"{PREFIX}/recorder/alarms", qos=1)
                async for _ in c.messages:
                    return

        asyncio.run(subscribed())
        assert _demo(pit, live, ROUNDS, capsys)[0] == 0
        shutil.copytree(live, backup)
        shutil.copytree(_anchors(), tmp_path / "anchors-backup")
        behind = _last_seq(live / "t01.journal")
        assert _demo(pit, live, ROUNDS + 3, capsys)[0] == 0
        ahead = _last_seq(live / "t01.journal")
        asyncio.run(_until_recorded(pit, live / "t01.journal"))
    finally:
        assert stop_process(proc) == 0, log.read_text()
    shutil.rmtree(_anchors())
    _forget_state(pit)
    code, err = _demo(pit, live, ROUNDS + 3, capsys)  # nothing left to play: admitted, by the recorder alone
    assert code == 0, err
    shutil.rmtree(live)
    shutil.copytree(backup, live)
    shutil.rmtree(_anchors())
    shutil.copytree(tmp_path / "anchors-backup", _anchors())
    _forget_state(pit)
    _refused(pit, live, capsys, f"behind {_the_recorder(pit)}: the journal ends at seq {behind} but "
                                f"{_the_recorder(pit)} holds seq {ahead}")
