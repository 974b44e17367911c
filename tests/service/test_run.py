"""``tablectl run --config FILE``: the service process on simulated devices and a real Mosquitto."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import aiomqtt
import pytest

from controller.mqtt.state_model import StateSnapshot
from tests.mqtt.mqtt_helpers import recording
from tests.mqtt_broker import Mosquitto

TABLECTL = [sys.executable, "-m", "controller.cli"]


def _config(tmp: Path, broker: str, links: Path, **extra: str) -> Path:
    body = f"""
table_id = "t05"
profile = "house-h17"
state_dir = "{tmp / 'state'}"
journal_key = "{tmp / 'keys' / 't05.key'}"
anchor_dir = "{tmp / 'anchors'}"
auto_open = true
log_level = "INFO"
tick_every_s = 1

[devices.shoe]
port = "{links / 'shoe'}"

[devices.shuffler]
port = "{links / 'shuffler'}"
decks = 6

[devices.chips]
port = "{links / 'chips'}"

[devices.console]
backend = "sim"

[mqtt]
url = "{broker}"
prefix = "runs"
"""
    body += "".join(f"{k} = {v}\n" for k, v in extra.items())
    path = tmp / "t05.toml"
    path.write_text(body)
    path.chmod(0o600)  # its broker URL may hold the table's password: a file others may read is refused
    return path


@pytest.fixture
def simulated_devices(tmp_path: Path) -> Iterator[Path]:
    """The shoe, shuffler and chip sensors as ``tablectl simulate`` processes on ptys."""
    links = tmp_path / "links"
    links.mkdir()
    procs = [
        subprocess.Popen([*TABLECTL, "simulate", kind, "--link", str(links / kind), "--seed", "5"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        for kind in ("shoe", "shuffler", "chips")
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None
            proc.stdout.readline()  # the slave path: the pty exists
        yield links
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(10)


def _run_sync(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TABLECTL, *args], capture_output=True, text=True, timeout=60)


def test_a_bad_config_exits_2_naming_the_key(tmp_path: Path) -> None:
    path = _config(tmp_path, "mqtt://127.0.0.1:1883", tmp_path, journal_sync='"SOMETIMES"')
    done = _run_sync(["run", "--config", str(path)])
    assert done.returncode == 2
    line = done.stderr.strip()
    assert len(line.splitlines()) == 1 and "journal_sync" in line and str(path) in line, line


def test_a_missing_device_exits_2_naming_the_port(tmp_path: Path) -> None:
    path = _config(tmp_path, "mqtt://127.0.0.1:1883", tmp_path / "nowhere")
    done = _run_sync(["run", "--config", str(path), "--new-journal"])
    assert done.returncode == 2, done.stderr
    line = done.stderr.strip().splitlines()[-1]
    assert "nowhere/shoe" in line, done.stderr


async def test_run_serves_the_table_and_stops_cleanly(mosquitto: Mosquitto, tmp_path: Path, simulated_devices: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    path = _config(tmp_path, mosquitto.url, simulated_devices)
    monkeypatch.setenv("TABLECTL_PIT", "pit-7")  # the table's pit, from the environment as any key
    async with recording(mosquitto.host, mosquitto.port, "runs/t05/#") as rec:
        proc = await asyncio.create_subprocess_exec(*TABLECTL, "run", "--config", str(path), "--new-journal",
                                                    stderr=asyncio.subprocess.PIPE)
        try:
            # opened at the first start, shuffled by the simulated shuffler, then betting
            await rec.wait_for(lambda r: any(m.json()["phase"] == "betting" for m in r.on("/state")), 30)
            # a second service on the same table (same journal) is refused at start, naming why
            second = await asyncio.create_subprocess_exec(*TABLECTL, "run", "--config", str(path),
                                                          stderr=asyncio.subprocess.PIPE)
            _, second_err = await asyncio.wait_for(second.communicate(), 60)
            assert second.returncode == 2, second_err
            assert "t05.journal: in use by another program" in second_err.decode().splitlines()[-1]
            # and the first goes on serving
            async with aiomqtt.Client(mosquitto.host, mosquitto.port) as client:
                await client.subscribe("runs/t05/cmd/pit/s.jones/set_limits/result", qos=1)
                await client.publish("runs/t05/cmd/pit/s.jones/set_limits",
                                     b'{"min_bet": "10", "max_bet": "800", "id": 4, "operator": "s.jones"}', qos=1)
                async with asyncio.timeout(10):
                    async for m in client.messages:
                        result = json.loads(bytes(m.payload))  # type: ignore[arg-type]
                        break
            assert result["ok"] is True and result["id"] == 4, result
            await rec.wait_for(lambda r: r.on("/state")[-1].json()["limits"]["max_bet"] == "800", 10)
        finally:
            proc.send_signal(signal.SIGTERM)
            assert proc.stderr is not None
            err = (await asyncio.wait_for(proc.stderr.read(), 30)).decode()
            code = await proc.wait()
        await rec.wait_for(lambda r: r.on("/status")[-1].payload == b"offline", 10)
    assert code == 0, err
    statuses = [m.payload for m in rec.on("/status")]
    assert statuses[0] == b"online" and statuses[-1] == b"offline"
    states = [StateSnapshot.model_validate(m.json()) for m in rec.on("/state")]
    assert states[-1].devices == {"shoe": "ok", "shuffler": "ok", "chips": "ok", "console": "ok"}
    assert {s.pit for s in states} == {"pit-7"} and {m.json()["pit"] for m in rec.on("/analytics")} == {"pit-7"}
    with closing(sqlite3.connect(tmp_path / "state" / "t05.journal")) as db:
        heads = {seq: bytes(h).hex() for seq, h in db.execute("SELECT seq, hash FROM outbox")}
    assert all(s.head == heads[s.seq] for s in states), "each state names its record's chain hash"
    events = [m.json()["type"] for m in rec.on("/events")]
    assert events[:3] == ["journal_started", "rules_changed", "table_opened"], \
        "a new journal first names itself (seq 1), then binds its rules"
    with closing(sqlite3.connect(tmp_path / "state" / "t05.journal")) as db:
        journal_id = db.execute("SELECT value FROM meta WHERE key = 'journal_id'").fetchone()[0]
    assert rec.on("/events")[0].json()["journal_id"] == journal_id
    assert "shuffle_requested" in events and "shuffle_done" in events
    assert [m.json()["seq"] for m in rec.on("/events")] == list(range(1, len(events) + 1))
    # structured logs: one JSON object a line, the service's own lines naming the table
    lines = [json.loads(line) for line in err.splitlines() if line.strip()]
    assert any(entry.get("table") == "t05" and entry["msg"] == "table service running" for entry in lines)
    journal = tmp_path / "state" / "t05.journal"
    assert stat.S_IMODE(os.stat(journal).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(tmp_path / "state").st_mode) == 0o700
    assert stat.S_IMODE(os.stat(tmp_path / "keys" / "t05.key").st_mode) == 0o600  # made by --new-journal
    done = _run_sync(["journal", "verify", str(journal), "--key", str(tmp_path / "keys" / "t05.key"),
                      "--anchor-dir", str(tmp_path / "anchors")])  # exit 0: every row checks and the anchor vouched
    assert done.returncode == 0 and " rows (" in done.stdout and "vouched for by its anchor" in done.stdout, done.stderr


async def test_run_on_an_unreachable_broker_says_so_once_without_the_password(tmp_path: Path,
                                                                            simulated_devices: Path) -> None:
    from controller.mqtt.ports import free_port

    url = f"mqtt://t05:hunter2@127.0.0.1:{free_port()}"  # nothing listens there
    path = _config(tmp_path, url, simulated_devices)
    proc = await asyncio.create_subprocess_exec(*TABLECTL, "run", "--config", str(path), "--log-level", "DEBUG",
                                                "--new-journal", stderr=asyncio.subprocess.PIPE)
    assert proc.stderr is not None
    lines: list[str] = []
    try:
        async with asyncio.timeout(30):
            while not any("not reachable" in line for line in lines):
                raw = await proc.stderr.readline()
                assert raw, "\n".join(lines)
                lines.append(raw.decode())
        await asyncio.sleep(2)  # retries go on, quietly
    finally:
        proc.send_signal(signal.SIGTERM)
        lines += (await asyncio.wait_for(proc.stderr.read(), 30)).decode().splitlines()
        code = await proc.wait()
    err = "\n".join(lines)
    assert code == 0, err
    assert "hunter2" not in err, err
    outage = [json.loads(line) for line in lines if "not reachable" in line]
    assert len(outage) == 1 and outage[0]["level"] == "WARNING", err
    assert outage[0]["msg"].startswith(f"t05: MQTT broker mqtt://t05:***@127.0.0.1:{url.rsplit(':', 1)[1]} "
                                       "not reachable (Connection refused): playing on"), outage


def test_run_starts_no_new_journal_unless_told(tmp_path: Path) -> None:
    path = _config(tmp_path, "mqtt://127.0.0.1:1883", tmp_path / "nowhere")
    (tmp_path / "keys").mkdir()
    from controller.journal.anchor import create_key

    create_key(tmp_path / "keys" / "t05.key")
    done = _run_sync(["run", "--config", str(path)])
    assert done.returncode == 2, done.stderr
    line = done.stderr.strip()
    assert len(line.splitlines()) == 1 and "t05.journal: no such journal" in line and "--new-journal" in line, line


def test_run_on_a_journal_with_a_corrupt_row_exits_2_in_one_line_naming_it(tmp_path: Path) -> None:
    from controller.journal.admission import open_table_journal

    path = _config(tmp_path, "mqtt://127.0.0.1:1883", tmp_path / "nowhere")
    journal_path = tmp_path / "state" / "t05.journal"
    with open_table_journal(journal_path, table_id="t05", key_file=tmp_path / "keys" / "t05.key",
                            anchor_dir=tmp_path / "anchors", new=True) as journal:
        journal.commit_event({"now": 1.0, "deck_set": "A", "operator": None, "type": "table_opened"},
                             [{"type": "table_opened"}])
        journal.commit_event({"type": "shuffle_started"}, [])
    with closing(sqlite3.connect(journal_path)) as db, db:
        db.execute("""UPDATE inputs SET event = '{"type": "shuffle_sta' WHERE id = 2""")
    done = _run_sync(["run", "--config", str(path)])
    assert done.returncode == 2, done.stderr
    line = done.stderr.strip()
    assert len(line.splitlines()) == 1 and "Traceback" not in line, line
    assert "t05.journal: inputs row 2 (input): its hash does not match its content" in line, line
    (tmp_path / "keys" / "t05.key").unlink()
    done = _run_sync(["run", "--config", str(path)])
    assert done.returncode == 2 and "t05.key: no such file" in done.stderr.strip(), done.stderr


async def test_auto_open_opens_a_table_whose_first_start_ended_before_it_opened(
        mosquitto: Mosquitto, tmp_path: Path, simulated_devices: Path) -> None:
    """``auto_open``: a first start that ended after binding its rules but before opening (a power cut, a kill:
    the demo met it as a resume that waited forever for an open) still opens the table at the next start; only a
    table that has been opened (and perhaps closed by the pit since) waits for ``cmd/open``."""
    path = _config(tmp_path, mosquitto.url, simulated_devices)
    path.write_text(path.read_text().replace("auto_open = true", "auto_open = false"))
    async with recording(mosquitto.host, mosquitto.port, "runs/t05/#") as rec:
        first = await asyncio.create_subprocess_exec(*TABLECTL, "run", "--config", str(path), "--new-journal",
                                                     stderr=asyncio.subprocess.DEVNULL)
        try:
            await rec.wait_for(lambda r: any(m.json()["type"] == "rules_changed" for m in r.on("/events")), 30)
        finally:
            first.send_signal(signal.SIGKILL)
            await first.wait()
    with closing(sqlite3.connect(tmp_path / "state" / "t05.journal")) as db:
        kinds = [json.loads(e)["type"] for (e,) in db.execute("SELECT event FROM inputs ORDER BY id")]
    assert "rules_changed" in kinds and "table_opened" not in kinds, kinds  # the state a cut first start leaves
    path.write_text(path.read_text().replace("auto_open = false", "auto_open = true"))
    async with recording(mosquitto.host, mosquitto.port, "runs/t05/#") as rec:
        again = await asyncio.create_subprocess_exec(*TABLECTL, "run", "--config", str(path),
                                                     stderr=asyncio.subprocess.PIPE)
        try:
            await rec.wait_for(lambda r: any(m.json()["phase"] == "betting" for m in r.on("/state")), 30)
            async with aiomqtt.Client(mosquitto.host, mosquitto.port) as client:  # the pit closes it
                await client.publish("runs/t05/cmd/pit/s.jones/close", b'{"id": 1}', qos=1)
            await rec.wait_for(lambda r: r.on("/state")[-1].json()["phase"] == "closed", 30)
        finally:
            again.send_signal(signal.SIGTERM)
            assert again.stderr is not None
            err = (await asyncio.wait_for(again.stderr.read(), 30)).decode()
            assert await again.wait() == 0, err
    async with recording(mosquitto.host, mosquitto.port, "runs/t05/state") as rec:  # opened once: the pit's close holds
        third = await asyncio.create_subprocess_exec(*TABLECTL, "run", "--config", str(path),
                                                     stderr=asyncio.subprocess.DEVNULL)
        try:
            await rec.wait_for(lambda r: len(r.on("/state")) >= 2, 30)  # the retained one, then the new start's
        finally:
            third.send_signal(signal.SIGTERM)
            await asyncio.wait_for(third.wait(), 30)
    assert [m.json()["phase"] for m in rec.on("/state")][:2] == ["closed", "closed"]
