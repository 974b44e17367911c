"""The broker's retained ``state.seq`` as a second witness of a journal's end (DESIGN, "Journal integrity and
game recall"; ``docs/journal.md``, "The broker's retained state").

The anchor cannot tell a state directory put back from an older copy when its anchor was put back (or removed)
with it; the broker, which kept the ``state`` the table published last, can. The demo cases play a demo on a
real Mosquitto, roll its state directory back and restart it; the unit cases ask
:func:`controller.mqtt.witness.retained_state_seq` directly.
"""

from __future__ import annotations

import logging
import shutil
import socket
import sqlite3
import time
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import aiomqtt
import pytest

from controller.cli import main as tablectl
from controller.journal import Journal, JournalError
from controller.journal.witnesses import judge
from controller.mqtt.client import MqttClient
from controller.mqtt.ports import free_port
from controller.mqtt.witness import retained_state_seq, retained_state_seqs
from controller.sim.demo import pit_witnesses  # now: run_demo's ``out`` default is this sys.stdout
from tests.mqtt.pit_broker import Broker
from tests.mqtt_broker import Mosquitto

ROUNDS = 6
REFUSAL = ("behind the broker's retained state of t01 ({url}): the journal ends at seq {behind} but the broker's "
           "retained state of t01 ({url}) holds seq {ahead}")


@pytest.fixture(autouse=True)
def xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Anchors go to the user's state folder: here, one of the test's own."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg"


def _demo(state: Path, rounds: int, broker: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = tablectl(["demo", "--tables", "1", "--rounds", str(rounds), "--seed", "3", "--speed", "max",
                     "--state-dir", str(state), "--broker", broker, "--no-dashboard", "--quiet"])
    return code, capsys.readouterr().err


def _last_seq(journal: Path) -> int:
    with closing(sqlite3.connect(journal)) as db:
        return int(db.execute("SELECT MAX(seq) FROM outbox").fetchone()[0])


async def _retain(broker: Mosquitto | Broker, topic: str, payload: bytes, user: str | None = None) -> None:
    password = broker.password(user) if isinstance(broker, Broker) and user else None
    async with aiomqtt.Client("127.0.0.1", broker.port, username=user, password=password) as client:
        await client.publish(topic, payload, qos=1, retain=True)


@dataclass
class RolledBack:
    """A demo's state directory and anchors as they were ``behind`` seq, the broker having seen ``ahead``."""

    live: Path
    backup: Path
    anchors: Path
    anchors_backup: Path
    behind: int
    ahead: int

    def put_back(self, anchor: str) -> None:
        """The whole state directory from the older copy; its anchor put back with it, or removed."""
        shutil.rmtree(self.live)
        shutil.copytree(self.backup, self.live)
        shutil.rmtree(self.anchors)
        if anchor == "put back":
            shutil.copytree(self.anchors_backup, self.anchors)


@pytest.fixture
def rolled(mosquitto: Mosquitto, tmp_path: Path, xdg: Path, capsys: pytest.CaptureFixture[str]) -> RolledBack:
    """A demo played ROUNDS rounds (copied: state dir and anchors), then 3 more: the broker retains the newer state."""
    live = tmp_path / "state"
    assert _demo(live, ROUNDS, mosquitto.url, capsys)[0] == 0
    anchors = xdg / "tablectl" / "anchors"
    copy = RolledBack(live, tmp_path / "backup", anchors, tmp_path / "anchors-backup", 0, 0)
    shutil.copytree(live, copy.backup)
    shutil.copytree(anchors, copy.anchors_backup)
    copy.behind = _last_seq(live / "t01.journal")
    assert _demo(live, ROUNDS + 3, mosquitto.url, capsys)[0] == 0
    copy.ahead = _last_seq(live / "t01.journal")
    assert copy.ahead > copy.behind
    return copy


# -- the demo on a real broker -------------------------------------------------------------------------------


@pytest.mark.parametrize("anchor", ["put back", "removed"])
def test_a_state_dir_put_back_with_its_anchor_is_refused_by_the_brokers_retained_state(
        rolled: RolledBack, mosquitto: Mosquitto, anchor: str, capsys: pytest.CaptureFixture[str]) -> None:
    rolled.put_back(anchor)  # the anchor now agrees with the old journal (or there is none): it cannot tell
    code, err = _demo(rolled.live, ROUNDS + 3, mosquitto.url, capsys)
    line = err.strip()
    assert code == 2, f"the table went online on a rolled-back journal (exit {code}): {err}"
    assert len(line.splitlines()) == 1 and "Traceback" not in line, err
    assert f"journal {rolled.live / 't01.journal'}: " in line, line
    assert REFUSAL.format(ahead=rolled.ahead, behind=rolled.behind, url=mosquitto.url) in line, line
    assert line.endswith("put back from an older copy (docs/journal.md)"), line
    assert _last_seq(rolled.live / "t01.journal") == rolled.behind  # nothing played


def test_the_same_roll_back_with_the_broker_unreachable_rests_on_the_anchor(
        rolled: RolledBack, capsys: pytest.CaptureFixture[str]) -> None:
    rolled.put_back("put back")
    started = time.monotonic()
    code, err = _demo(rolled.live, ROUNDS + 3, f"mqtt://127.0.0.1:{free_port()}", capsys)
    assert code == 0, err  # what the anchor alone says: nothing wrong (the window DESIGN's witness closes)
    assert "retained state" not in err, err
    assert _last_seq(rolled.live / "t01.journal") > rolled.behind
    assert time.monotonic() - started < 60


def test_the_same_roll_back_with_the_anchor_left_alone_is_refused_by_the_anchor_broker_or_not(
        rolled: RolledBack, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.rmtree(rolled.live)
    shutil.copytree(rolled.backup, rolled.live)  # the anchor still records the newer end
    code, err = _demo(rolled.live, ROUNDS + 3, f"mqtt://127.0.0.1:{free_port()}", capsys)
    assert code == 2 and "behind its anchor" in err, err


def test_a_normal_restart_and_a_new_journal_on_the_same_broker_are_not_refused(
        rolled: RolledBack, mosquitto: Mosquitto, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _demo(rolled.live, ROUNDS + 3, mosquitto.url, capsys)[0] == 0  # nothing to play: retained == journal
    code, err = _demo(rolled.live, ROUNDS + 4, mosquitto.url, capsys)
    assert code == 0, err
    assert _last_seq(rolled.live / "t01.journal") > rolled.ahead
    # a fresh state directory starts a new journal on purpose: the broker's t01 state is the old journal's
    code, err = _demo(tmp_path / "fresh", 1, mosquitto.url, capsys)
    assert code == 0, err
    assert _last_seq(tmp_path / "fresh" / "t01.journal") < rolled.ahead


async def test_the_pit_is_asked_in_one_go_not_table_after_table(mosquitto: Mosquitto) -> None:
    """A demo of many tables: one connection for all (an unreachable broker costs ~2 s, not 2 s a table)."""
    def journal(table_id: str, last_seq: int, journal_id: str = "j") -> Journal:
        return cast(Journal, SimpleNamespace(last_seq=last_seq, journal_id=journal_id,
                                             path=Path(f"/pit/{table_id}.journal")))

    await _retain(mosquitto, "tables/t01/state", b'{"seq": 40, "journal_id": "j"}')
    await _retain(mosquitto, "tables/t02/state", b'{"seq": 40, "journal_id": "j"}')
    await _retain(mosquitto, "tables/t03/state", b'{"seq": 40, "journal_id": "j"}')
    pit = ["t01", "t02", "t03", "t04", *(f"t{i:03d}" for i in range(5, 300))]
    started = time.monotonic()
    witnesses = await pit_witnesses(mosquitto.url, "tables", pit)
    assert time.monotonic() - started < 1.5
    said = {t: w.testify(journal(t, 40 if t != "t02" else 39)) for t, (w, _recorder) in witnesses.items()}
    assert [said[t].verdict for t in ("t01", "t02", "t03", "t04")] == ["vouches", "ahead", "vouches", "silent"]
    with pytest.raises(JournalError) as refused:
        judge(journal("t02", 39), [said["t02"]], adopt_hint="")
    assert str(refused.value) == (f"journal /pit/t02.journal: behind the broker's retained state of t02 "
                                  f"({mosquitto.url}): the journal ends at seq 39 but the broker's retained state "
                                  f"of t02 ({mosquitto.url}) holds seq 40: rolled back, truncated, emptied or put "
                                  "back from an older copy (docs/journal.md)")
    with silent_listener() as port:
        started = time.monotonic()
        witnesses = await pit_witnesses(f"mqtt://127.0.0.1:{port}", "tables", pit)
        assert time.monotonic() - started < 3.5
        assert {w.testify(journal(t, 40)).verdict for t, ws in witnesses.items() for w in ws} == {"silent"}


# -- tablectl run ----------------------------------------------------------------------------------------------


async def test_tablectl_run_is_refused_when_the_broker_retains_a_later_state(mosquitto: Mosquitto,
                                                                             tmp_path: Path) -> None:
    from controller.journal.admission import open_table_journal
    from controller.service.runner import run_table
    from controller.service.settings import load_settings
    from drivers.errors import PortNotFound
    from tests.service.test_run import _config

    settings = load_settings(_config(tmp_path, mosquitto.url, tmp_path / "no-devices"))
    settings.state_dir.mkdir(parents=True)
    open_table_journal(settings.journal_path, table_id="t05", key_file=settings.journal_key,
                       anchor_dir=settings.anchor_dir, new=True).close()  # ends at seq 1: journal_started
    await _retain(mosquitto, "runs/t05/state", b'{"seq": 7, "table_id": "t05"}')
    with pytest.raises(JournalError, match=r"the journal ends at seq 1 but the broker's retained state of t05 "
                                           r"\(.*\) holds seq 7: "):
        await run_table(settings)
    await _retain(mosquitto, "runs/t05/state", b'{"seq": 0, "table_id": "t05"}')
    with pytest.raises(PortNotFound):  # past the witness, on to the devices (absent here)
        await run_table(settings)


# -- the witness itself ----------------------------------------------------------------------------------------


class silent_listener:
    """A TCP port that accepts connections and never answers: a broker that hangs."""

    def __enter__(self) -> int:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(512)
        return int(self.sock.getsockname()[1])

    def __exit__(self, *exc: object) -> None:
        self.sock.close()


async def test_the_retained_seq_of_the_tables_own_state_is_read(mosquitto: Mosquitto) -> None:
    await _retain(mosquitto, "tables/t01/state", b'{"seq": 42, "table_id": "t01", "phase": "betting"}')
    await _retain(mosquitto, "tables/t02/state", b'{"seq": 99}')
    await _retain(mosquitto, "other/t01/state", b'{"seq": 77}')
    started = time.monotonic()
    assert await retained_state_seq(mosquitto.url, prefix="tables", table_id="t01") == 42
    assert time.monotonic() - started < 1.0
    assert await retained_state_seq(mosquitto.url, prefix="other", table_id="t01") == 77
    seqs = await retained_state_seqs(mosquitto.url, prefix="tables", table_ids=["t01", "t02", "t03"])
    assert seqs == {"t01": 42, "t02": 99, "t03": None}


async def test_no_retained_state_is_none_at_once(mosquitto: Mosquitto, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "controller.mqtt.witness")
    started = time.monotonic()
    assert await retained_state_seq(mosquitto.url, prefix="tables", table_id="t01", timeout=5.0) is None
    assert time.monotonic() - started < 1.0  # the marker's SUBACK says "none": no timeout waited out
    (record,) = caplog.records
    assert record.levelno == logging.INFO and "no retained state for t01" in record.getMessage()


async def test_an_unreachable_broker_is_none_within_the_timeout_without_its_password(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "controller.mqtt.witness")
    started = time.monotonic()
    url = f"mqtt://t01:hunter2@127.0.0.1:{free_port()}"
    assert await retained_state_seq(url, prefix="tables", table_id="t01") is None  # refused: at once
    assert time.monotonic() - started < 1.0
    with silent_listener() as port:
        started = time.monotonic()
        url = f"mqtt://t01:hunter2@127.0.0.1:{port}"
        assert await retained_state_seq(url, prefix="tables", table_id="t01", timeout=1.0) is None
        assert 0.8 < time.monotonic() - started < 2.0
    assert len(caplog.records) == 2, caplog.text
    assert all("could not ask mqtt://t01:***@127.0.0.1:" in r.getMessage() for r in caplog.records), caplog.text
    assert "hunter2" not in caplog.text


@pytest.mark.parametrize("payload", [b"not json", b"[1, 2]", b'{"seq": "12"}', b'{"seq": -1}', b'{"seq": true}',
                                     b'{"phase": "betting"}', b"\xff\xfe"])
async def test_a_malformed_state_is_none_with_a_warning(mosquitto: Mosquitto, payload: bytes,
                                                        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "controller.mqtt.witness")
    await _retain(mosquitto, "tables/t01/state", payload)
    assert await retained_state_seq(mosquitto.url, prefix="tables", table_id="t01") is None
    (record,) = caplog.records
    assert record.levelno == logging.WARNING and "without a usable seq for t01" in record.getMessage()


async def test_under_the_generated_acl_a_table_reads_its_own_retained_state_and_no_other(
        pit: Broker, caplog: pytest.LogCaptureFixture) -> None:
    """DESIGN's roles: a table reads its own subtree, so the broker can witness its journal (the ACL before
    let it read only its cmd/#: Mosquitto granted the subscription and delivered nothing, and the witness
    never vouched on a pit's real broker)."""
    caplog.set_level(logging.INFO, "controller.mqtt.witness")
    await _retain(pit, "tables/t01/state", b'{"seq": 42, "journal_id": "j1"}', user="t01")  # the table writes it
    await _retain(pit, "tables/t02/state", b'{"seq": 9, "journal_id": "j2"}', user="t02")
    url = f"mqtt://t01:{pit.password('t01')}@127.0.0.1:{pit.port}"
    started = time.monotonic()
    assert await retained_state_seq(url, prefix="tables", table_id="t01") == 42
    assert time.monotonic() - started < 1.0
    # another table's state stays hidden from it: asking for t02 as t01 gets nothing
    assert await retained_state_seq(url, prefix="tables", table_id="t02") is None
    # nor may the table forge its neighbour's state (the ACL lets it write its own topics only)
    await _retain(pit, "tables/t02/state", b'{"seq": 1000, "journal_id": "forged"}', user="t01")
    assert await retained_state_seq(f"mqtt://127.0.0.1:{pit.port}", prefix="tables", table_id="t02",
                                    username="dashboard", password=pit.password("dashboard")) == 9
    assert pit.password("t01") not in caplog.text


async def test_a_refused_subscription_is_none(monkeypatch: pytest.MonkeyPatch, mosquitto: Mosquitto,
                                              caplog: pytest.LogCaptureFixture) -> None:
    """A broker that answers the SUBSCRIBE with 0x80 (Mosquitto 2.0 grants and drops; others refuse)."""
    from paho.mqtt.packettypes import PacketTypes
    from paho.mqtt.reasoncodes import ReasonCode

    async def refuse(self: MqttClient, *args: Any, **kwargs: Any) -> list[ReasonCode]:
        return [ReasonCode(PacketTypes.SUBACK, identifier=0x80)]

    caplog.set_level(logging.INFO, "controller.mqtt.witness")
    await _retain(mosquitto, "tables/t01/state", b'{"seq": 42}')
    monkeypatch.setattr(MqttClient, "subscribe", refuse)
    assert await retained_state_seq(mosquitto.url, prefix="tables", table_id="t01") is None
    (record,) = caplog.records
    assert "refused the subscription to tables/t01/state" in record.getMessage(), record.getMessage()


async def test_the_embedded_brokers_retained_state_is_read_too(tmp_path: Path) -> None:
    from controller.floor.embedded_broker import EmbeddedBroker

    async with EmbeddedBroker(tmp_path / "broker", ["t01", "t02"]) as broker:
        async with aiomqtt.Client(broker.host, broker.port, username="t01", password=broker.passwords["t01"],
                                  identifier="tables-t01") as client:
            await client.publish("tables/t01/state", b'{"seq": 5}', qos=1, retain=True)
        # as the table itself reads it at start (its witness client id is the table's: DESIGN, "Operators and roles")
        assert await retained_state_seq(broker.url, prefix="tables", table_id="t01", username="t01",
                                        password=broker.passwords["t01"]) == 5
        assert await retained_state_seq(broker.ws_url, prefix="tables", table_id="t01", username="t01",
                                        password=broker.passwords["t01"]) == 5
        started = time.monotonic()
        assert await retained_state_seq(broker.url, prefix="tables", table_id="t02", username="t02",
                                        password=broker.passwords["t02"]) is None
        assert time.monotonic() - started < 1.0

