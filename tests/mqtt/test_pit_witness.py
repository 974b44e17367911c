"""The broker as a witness on a pit's real broker: Mosquitto started from what ``tablectl broker-config``
writes, the table logging in as itself (DESIGN, "Operators and roles": a table reads its own subtree; its
retained ``state`` is a witness of its journal at start).

On the code before, the generated ACL let a table read only its ``cmd/#``: Mosquitto granted the
subscription to its ``state`` and delivered nothing, so on a real pit the broker never vouched and never
refused, and a state directory put back with its anchor started and played.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import aiomqtt
import pytest

from controller.cli import main as tablectl
from controller.sim import demo as _demo_module  # noqa: F401  # now: run_demo's ``out`` default is this sys.stdout
from tests.mqtt.pit_broker import Broker

ROUNDS = 4


@pytest.fixture(autouse=True)
def _anchors_in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))


async def _publish(pit: Broker, user: str, payload: bytes, topic: str = "tables/t01/state") -> None:
    async with pit.client(user) as client:
        await client.publish(topic, payload, qos=1, retain=True)


async def _retained(pit: Broker) -> dict[str, object] | None:
    """t01's retained state as the dashboard sees it (None: none)."""
    from controller.mqtt.witness import RetainedState, retained_states

    states = await retained_states(f"mqtt://127.0.0.1:{pit.port}", prefix="tables", table_ids=["t01"],
                                   username="dashboard", password=pit.password("dashboard"))
    state = states["t01"]
    return {"seq": state.seq, "journal_id": state.journal_id} if isinstance(state, RetainedState) else None


@pytest.fixture
def clean(pit: Broker) -> Broker:
    """The pit's broker (``tests/mqtt/pit_broker.py``: tables t01 and t02, its people and screens)."""
    return pit


def _demo(pit: Broker, state: Path, rounds: int, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    url = f"mqtt://t01:{pit.password('t01')}@127.0.0.1:{pit.port}"
    code = tablectl(["demo", "--tables", "1", "--rounds", str(rounds), "--seed", "3", "--speed", "max",
                     "--state-dir", str(state), "--broker", url, "--no-dashboard", "--quiet"])
    err = capsys.readouterr().err
    assert pit.password("t01") not in err
    return code, err


def _last_seq(journal: Path) -> int:
    with closing(sqlite3.connect(journal)) as db:
        return int(db.execute("SELECT COALESCE(MAX(seq), 0) FROM outbox").fetchone()[0])


def _journal_id(journal: Path) -> str:
    with closing(sqlite3.connect(journal)) as db:
        return str(db.execute("SELECT value FROM meta WHERE key = 'journal_id'").fetchone()[0])


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


def test_a_state_dir_put_back_with_its_anchor_is_refused_by_the_pits_broker(
        clean: Broker, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    live, backup = tmp_path / "state", tmp_path / "backup"
    assert _demo(clean, live, ROUNDS, capsys)[0] == 0
    shutil.copytree(live, backup)
    shutil.copytree(_anchors(), tmp_path / "anchors-backup")
    behind = _last_seq(live / "t01.journal")
    assert _demo(clean, live, ROUNDS + 3, capsys)[0] == 0
    ahead = _last_seq(live / "t01.journal")
    assert asyncio.run(_retained(clean)) == {"seq": ahead, "journal_id": _journal_id(live / "t01.journal")}
    for anchors in ("put back", "removed"):
        shutil.rmtree(live)
        shutil.copytree(backup, live)
        shutil.rmtree(_anchors())
        if anchors == "put back":  # the anchor agrees with the old journal: only the broker can tell
            shutil.copytree(tmp_path / "anchors-backup", _anchors())
        _refused(clean, live, capsys, "t01.journal: behind the broker's retained state of t01 (mqtt://t01:***@",
                 f"the journal ends at seq {behind} but the broker's retained state of t01",
                 f"holds seq {ahead}: rolled back")


def test_with_the_anchor_gone_the_pits_broker_vouches_and_with_its_state_gone_the_anchor_does(
        clean: Broker, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    live = tmp_path / "state"
    assert _demo(clean, live, ROUNDS, capsys)[0] == 0
    shutil.rmtree(_anchors())
    code, err = _demo(clean, live, ROUNDS + 1, capsys)  # the broker holds this journal's state: it vouches
    assert code == 0, err
    asyncio.run(_publish(clean, "t01", b""))  # the retained state deleted: the anchor (written again) alone vouches
    code, err = _demo(clean, live, ROUNDS + 2, capsys)
    assert code == 0, err
    asyncio.run(_publish(clean, "t01", b""))
    shutil.rmtree(_anchors())  # and with neither: nobody vouches
    _refused(clean, live, capsys, "no witness vouches for it", "holds no retained state", "--adopt-journal")


def test_another_journal_at_the_tables_place_is_refused_by_the_pits_broker_at_any_seq(
        clean: Broker, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The retained state names its journal: a journal of another id is not the one the pit saw, even at the
    same (or a lower) seq, where comparing seqs alone would let it start."""
    old, new = tmp_path / "old", tmp_path / "new"
    assert _demo(clean, old, ROUNDS, capsys)[0] == 0
    assert _demo(clean, new, ROUNDS, capsys)[0] == 0  # a new journal for t01, on purpose: the broker follows it
    assert _last_seq(old / "t01.journal") == _last_seq(new / "t01.journal")  # same seed: the same seq
    line = _refused(clean, old, capsys, "t01.journal: refused by the broker's retained state of t01")
    assert (f"it is of journal {_journal_id(new / 't01.journal')} at seq {_last_seq(new / 't01.journal')}, but "
            f"this is journal {_journal_id(old / 't01.journal')}") in line, line


def test_nobody_but_the_table_can_forge_its_retained_state_on_the_pits_broker(
        clean: Broker, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    live = tmp_path / "state"
    assert _demo(clean, live, ROUNDS, capsys)[0] == 0
    honest = asyncio.run(_retained(clean))
    forged = json.dumps({"seq": 10**6, "journal_id": "forged"}).encode()
    for user in sorted(set(clean.files.passwords) - {"t01"}):  # every other user broker-config made
        # Mosquitto drops a publish its ACL does not grant (or disconnects the client): nothing is retained,
        # and nobody else may delete it either
        for payload in (forged, b""):
            with contextlib.suppress(aiomqtt.MqttError):
                asyncio.run(_publish(clean, user, payload))
    assert asyncio.run(_retained(clean)) == honest
    code, err = _demo(clean, live, ROUNDS + 1, capsys)
    assert code == 0, err
