"""Operators and roles (DESIGN.md): `tablectl broker-config` makes a Mosquitto that enforces them.

Each test starts Mosquitto with the generated configuration (``mosquitto -c DIR/mosquitto.conf``
on free ports) and proves each role's limits both ways. A publish the ACL refuses is dropped
silently by Mosquitto (MQTT 3.1.1, QoS 0/1: the PUBACK still comes), so a refused publish is
shown by a privileged observer (a supervisor, who reads everything) that never sees it while it
does see a marker published after the refused message was acknowledged.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import ssl
import stat
import subprocess
import sys
import time
import tomllib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from controller.game import events as ev
from controller.mqtt.broker_config import hash_password, verify_password, write_broker_config
from controller.profiles import load_rules
from tests.mqtt.pit_broker import PREFIX, SUPERVISOR, Broker, _pit
from tests.service.test_table_service import _opts, _until, table_running

ROOT = Path(__file__).resolve().parents[2]


class Observer:
    """A supervisor subscribed to the whole pit: what each topic received."""

    def __init__(self, client: aiomqtt.Client) -> None:
        self.client = client
        self.got: list[tuple[str, bytes]] = []
        self.arrived = asyncio.Event()

    async def pump(self) -> None:
        async for m in self.client.messages:
            self.got.append((str(m.topic), bytes(m.payload)))  # type: ignore[arg-type]
            self.arrived.set()

    async def wait_for(self, topic: str, payload: bytes, timeout: float = 5.0) -> None:
        async with asyncio.timeout(timeout):
            while (topic, payload) not in self.got:
                self.arrived.clear()
                await self.arrived.wait()

    def saw(self, topic: str, payload: bytes) -> bool:
        return (topic, payload) in self.got


@contextlib.asynccontextmanager
async def observing(pit: Broker, topic: str = f"{PREFIX}/#") -> AsyncIterator[Observer]:
    async with pit.client(SUPERVISOR, identifier="observer") as client:
        await client.subscribe(topic, qos=1)
        obs = Observer(client)
        task = asyncio.create_task(obs.pump())
        try:
            yield obs
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def _refused_publish(pit: Broker, obs: Observer, user: str, topic: str) -> None:
    """``user``'s publish on ``topic`` never reaches a subscriber (a marker sent after it does)."""
    body = f"forbidden {user} {time.monotonic_ns()}".encode()
    async with pit.client(user) as c:
        await c.publish(topic, body, qos=1)  # acknowledged (3.1.1) but dropped by the ACL
    marker = f"marker {time.monotonic_ns()}".encode()
    async with pit.client(SUPERVISOR) as s:
        await s.publish(f"{PREFIX}/t02/cmd/marker", marker, qos=1)
    await obs.wait_for(f"{PREFIX}/t02/cmd/marker", marker)
    await asyncio.sleep(0.1)
    assert not obs.saw(topic, body), f"{user} could publish on {topic}"


async def _allowed_publish(pit: Broker, obs: Observer, user: str, topic: str) -> None:
    body = f"allowed {user} {time.monotonic_ns()}".encode()
    async with pit.client(user) as c:
        await c.publish(topic, body, qos=1)
    await obs.wait_for(topic, body)


async def _receives(pit: Broker, user: str, topic_filter: str, topic: str) -> bool:
    """Whether ``user``, subscribed to ``topic_filter``, gets a supervisor's publish on ``topic``
    within 1.5 s (it arrives in milliseconds when the ACL lets it through)."""
    body = f"to {user} {time.monotonic_ns()}".encode()
    async with pit.client(user, identifier=f"reader-{user}") as c:
        with contextlib.suppress(aiomqtt.MqttError):  # a refused subscription may fail outright
            await c.subscribe(topic_filter, qos=1)
        async with pit.client(SUPERVISOR) as s:
            await s.publish(topic, body, qos=1)
        try:
            async with asyncio.timeout(1.5):
                async for m in c.messages:
                    if bytes(m.payload) == body:  # type: ignore[arg-type]
                        return True
        except TimeoutError:
            return False
    return False


# ---------------------------------------------------------------------------------------------- files


def test_broker_config_writes_the_files_with_the_roles(tmp_path: Path) -> None:
    files = write_broker_config(tmp_path / "pit", ["t01", "t02"], supervisors=["s.jones", "a.li"], port=1883,
                                ws_port=9001, user=None)
    conf = files.conf.read_text()
    for line in ("per_listener_settings false", "allow_anonymous false", f"password_file {files.passwd}",
                 f"acl_file {files.acl}", "listener 1883 127.0.0.1", "listener 9001 127.0.0.1",
                 "protocol websockets", "socket_domain ipv4"):
        assert line in conf.splitlines(), line
    assert "user " not in conf
    acl = files.acl.read_text().splitlines()
    t01 = acl[acl.index("user t01") + 1:acl.index("user t02")]
    assert [x for x in t01 if x.startswith("topic")] == [
        "topic write tables/t01/status", "topic write tables/t01/state", "topic write tables/t01/events",
        "topic write tables/t01/alarms", "topic write tables/t01/history", "topic write tables/t01/analytics",
        "topic write tables/t01/cmd/+/result", "topic read tables/t01/#"]
    dash = acl[acl.index("user dashboard") + 1:acl.index("user s.jones")]
    assert [x for x in dash if x.startswith("topic")] == ["topic read tables/#"]
    sup = acl[acl.index("user a.li") + 1:]
    assert [x for x in sup if x.startswith("topic")] == ["topic read tables/#", "topic write tables/+/cmd/#"]
    # credentials: 0600, every user, and the passwd file holds their $7$ hashes
    assert stat.S_IMODE(files.credentials.stat().st_mode) == 0o600
    assert stat.S_IMODE(files.passwd.stat().st_mode) == 0o600
    creds = tomllib.loads(files.credentials.read_text())
    assert set(creds["users"]) == {"t01", "t02", "dashboard", "s.jones", "a.li"}
    assert creds["users"]["a.li"]["role"] == "supervisor" and creds["users"]["t02"]["role"] == "table"
    hashes = dict(line.split(":", 1) for line in files.passwd.read_text().splitlines())
    for user, entry in creds["users"].items():
        assert len(entry["password"]) >= 24
        assert hashes[user].startswith("$7$101$") and verify_password(entry["password"], hashes[user])
        assert entry["password"] not in files.passwd.read_text() + conf + files.acl.read_text()
    assert len({e["password"] for e in creds["users"].values()}) == 5
    assert "password" not in repr(files) and creds["users"]["t01"]["password"] not in repr(files)


def test_the_hash_is_the_one_mosquitto_passwd_writes(tmp_path: Path) -> None:
    passwd = Path("/usr/bin/mosquitto_passwd")
    if not passwd.exists():
        pytest.skip("mosquitto_passwd is not installed")
    f = tmp_path / "p"
    f.write_text("alice:open sesame\n")
    subprocess.run([str(passwd), "-U", str(f)], check=True)
    _, entry = f.read_text().strip().split(":", 1)
    assert verify_password("open sesame", entry) and not verify_password("open sesam", entry)
    salt = entry.split("$")[3]
    import base64

    assert hash_password("open sesame", salt=base64.b64decode(salt)) == entry


def _tablectl(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TABLECTL_PURE_ENGINE": "1"}
    return subprocess.run([sys.executable, "-m", "controller.cli", *args], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=60)


@pytest.mark.parametrize(("args", "needle"), [
    (["--tables", "t01"], "--dir"),
    (["--dir", "D", "--tables", ""], "--tables"),
    (["--dir", "D", "--tables", "t01,t 2"], "'t 2'"),
    (["--dir", "D", "--tables", "t01,t01"], "twice"),
    (["--dir", "D", "--tables", "t01", "--prefix", "a/#"], "--prefix"),
    (["--dir", "D", "--tables", "t01", "--port", "70000"], "--port 70000"),
    (["--dir", "D", "--tables", "t01", "--port", "1883", "--ws-port", "1883"], "two ports"),
    (["--dir", "D", "--tables", "t01", "--supervisor", "dashboard"], "--supervisor"),
    (["--dir", "D", "--tables", "t01", "--supervisor", "a b"], "--supervisor"),
    (["--dir", "D", "--tables", "t01", "--port", "x"], "--port"),
])
def test_bad_input_exits_2_with_one_line(tmp_path: Path, args: list[str], needle: str) -> None:
    args = [str(tmp_path / "d") if a == "D" else a for a in args]
    proc = _tablectl("broker-config", *args)
    assert proc.returncode == 2, proc
    lines = [x for x in proc.stderr.splitlines() if "UserWarning" not in x and "_prefer_current_engine" not in x]
    assert len(lines) == 1 and needle in lines[0], proc.stderr
    assert not (tmp_path / "d" / "credentials.toml").exists()


def test_the_cli_prints_no_password_and_refuses_to_overwrite(tmp_path: Path) -> None:
    d = tmp_path / "pit"
    proc = _tablectl("broker-config", "--dir", str(d), "--tables", "t01,t02", "--supervisor", "s.jones")
    assert proc.returncode == 0, proc.stderr
    creds = tomllib.loads((d / "credentials.toml").read_text())
    for entry in creds["users"].values():
        assert entry["password"] not in proc.stdout + proc.stderr
    again = _tablectl("broker-config", "--dir", str(d), "--tables", "t01")
    assert again.returncode == 2 and "--force" in again.stderr
    assert tomllib.loads((d / "credentials.toml").read_text()) == creds
    forced = _tablectl("broker-config", "--dir", str(d), "--tables", "t01", "--force")
    assert forced.returncode == 0, forced.stderr
    assert tomllib.loads((d / "credentials.toml").read_text())["users"]["t01"] != creds["users"]["t01"]


# ---------------------------------------------------------------------------------------------- roles


async def test_anonymous_clients_and_wrong_passwords_are_refused(pit: Broker) -> None:
    with pytest.raises(aiomqtt.MqttError):
        async with pit.client(None):
            pass
    with pytest.raises(aiomqtt.MqttError):
        async with pit.client("t01", "not the password"):
            pass
    with pytest.raises(aiomqtt.MqttError):
        async with pit.client("t01", pit.password("t02")):  # another user's password
            pass
    wrong = "not the password"
    assert wrong not in pit.log() and pit.password("t01") not in pit.log()


async def test_a_table_writes_only_its_own_subtree(pit: Broker) -> None:
    async with observing(pit) as obs:
        for kind in ("status", "state", "events", "alarms", "history", "analytics", "cmd/set_limits/result"):
            await _allowed_publish(pit, obs, "t01", f"{PREFIX}/t01/{kind}")
        for topic in (f"{PREFIX}/t02/state", f"{PREFIX}/t02/events", f"{PREFIX}/t02/status",
                      f"{PREFIX}/t01/cmd/close",  # a table commanding itself
                      f"{PREFIX}/t02/cmd/close", f"{PREFIX}/t01/other", "elsewhere/t01/state"):
            await _refused_publish(pit, obs, "t01", topic)


async def test_a_table_reads_only_its_own_commands(pit: Broker) -> None:
    assert await _receives(pit, "t01", f"{PREFIX}/t01/cmd/+", f"{PREFIX}/t01/cmd/close")
    assert not await _receives(pit, "t01", f"{PREFIX}/t02/cmd/+", f"{PREFIX}/t02/cmd/close")
    assert not await _receives(pit, "t01", f"{PREFIX}/#", f"{PREFIX}/t02/cmd/close")


async def test_the_dashboard_reads_everything_and_publishes_nothing(pit: Broker) -> None:
    async with pit.client("t02") as t02:
        await t02.publish(f"{PREFIX}/t02/state", b'{"seq": 1}', qos=1, retain=True)
    async with pit.client("dashboard", identifier="dash") as dash:
        await dash.subscribe(f"{PREFIX}/#", qos=1)
        async with asyncio.timeout(5):
            async for m in dash.messages:
                if str(m.topic) == f"{PREFIX}/t02/state":
                    break  # the retained state of another table
    assert await _receives(pit, "dashboard", f"{PREFIX}/#", f"{PREFIX}/t01/cmd/ack_alarm")
    async with observing(pit) as obs:
        for topic in (f"{PREFIX}/t01/cmd/ack_alarm", f"{PREFIX}/t01/state", f"{PREFIX}/t01/cmd/close/result",
                      f"{PREFIX}/dashboard"):
            await _refused_publish(pit, obs, "dashboard", topic)


async def test_a_supervisor_commands_and_reads_but_cannot_publish_as_a_table(pit: Broker) -> None:
    async with observing(pit) as obs:
        await _allowed_publish(pit, obs, SUPERVISOR, f"{PREFIX}/t01/cmd/ack_alarm")
        await _allowed_publish(pit, obs, SUPERVISOR, f"{PREFIX}/t02/cmd/set_limits")
        for topic in (f"{PREFIX}/t01/state", f"{PREFIX}/t01/status", f"{PREFIX}/t01/events",
                      f"{PREFIX}/t01/alarms", f"{PREFIX}/t01/history", "elsewhere/t01/cmd/close"):
            await _refused_publish(pit, obs, SUPERVISOR, topic)


async def test_tls_clients_verifying_the_generated_ca_connect(tmp_path: Path) -> None:
    pit = _pit(tmp_path, tls=True)
    try:
        assert pit.files.ca is not None and "listener" in pit.files.conf.read_text()
        assert "cafile" in pit.files.conf.read_text() and pit.files.mqtt_url.startswith("mqtts://")
        ctx = ssl.create_default_context(cafile=str(pit.files.ca))
        async with aiomqtt.Client("127.0.0.1", pit.port, username="t01", password=pit.password("t01"),
                                  tls_context=ctx) as c:
            await c.publish(f"{PREFIX}/t01/status", b"online", qos=1)
        async with aiomqtt.Client("localhost", pit.port, username="dashboard", password=pit.password("dashboard"),
                                  tls_context=ssl.create_default_context(cafile=str(pit.files.ca))) as c:
            await c.subscribe(f"{PREFIX}/#", qos=1)
        # a client that does not trust the pit's CA does not connect, nor does plain MQTT
        with pytest.raises(aiomqtt.MqttError):
            async with aiomqtt.Client("127.0.0.1", pit.port, username="t01", password=pit.password("t01"),
                                      tls_context=ssl.create_default_context(), timeout=3):
                pass
        with pytest.raises(aiomqtt.MqttError):
            async with aiomqtt.Client("127.0.0.1", pit.port, username="t01", password=pit.password("t01"),
                                      timeout=3):
                pass
        # the WebSockets listener speaks TLS too (a handshake verified against the CA)
        reader, writer = await asyncio.open_connection("127.0.0.1", pit.ws_port, ssl=ctx,
                                                       server_hostname="127.0.0.1")
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()
        del reader
        assert stat.S_IMODE((pit.files.dir / "server.key").stat().st_mode) == 0o600
        assert stat.S_IMODE((pit.files.dir / "ca.key").stat().st_mode) == 0o600
    finally:
        pit.close()


# ---------------------------------------------------------------------------------------------- a real table


def _messages(obs: Observer, topic: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for t, body in obs.got:
        if t == topic:
            with contextlib.suppress(ValueError):
                out.append(json.loads(body))
    return out


async def _result(obs: Observer, verb: str, payload: dict[str, Any]) -> dict[str, Any]:
    rid = f"r-{time.monotonic_ns()}"
    await obs.client.publish(f"{PREFIX}/t01/cmd/{verb}", json.dumps({**payload, "id": rid}).encode(), qos=1)
    async with asyncio.timeout(10):
        while True:
            for result in _messages(obs, f"{PREFIX}/t01/cmd/{verb}/result"):
                if result.get("id") == rid:
                    return result
            obs.arrived.clear()
            await obs.arrived.wait()


async def test_a_table_runs_as_its_user_and_a_supervisor_commands_it(pit: Broker, tmp_path: Path) -> None:
    """The table service publishes as ``t01`` with its generated password; a supervisor's commands
    name the operator, are held to the rule text, and an integrity alarm needs a reason."""
    url = f"mqtt://t01:{pit.password('t01')}@127.0.0.1:{pit.port}"
    opts = _opts(load_rules("ny-4620"), rounds=None, seed=4, prefix=PREFIX)
    async with observing(pit, f"{PREFIX}/t01/#") as sup, \
            table_running(opts, tmp_path / "state", url) as (table, task):
        await table.publisher.wait_connected(10)
        await _until(lambda: table.core.table.rounds_settled >= 1 or task.done(), 30, "a round")
        assert not task.done()
        # the table's state reached the pit through the ACL
        await _until(lambda: any(s["round"] >= 1 for s in _messages(sup, f"{PREFIX}/t01/state")), 10,
                     "the state of a played round")
        # no operator: refused naming the field
        refused = await _result(sup, "set_limits", {"min_bet": "2", "max_bet": "5"})
        assert refused["ok"] is False and refused["error"] == "operator: required field missing"
        # outside NY 4620.5(f)(2): refused naming the clause; inside: accepted, operator echoed
        outside = await _result(sup, "set_limits", {"min_bet": "0.01", "max_bet": "999999999.99",
                                                    "operator": "s.jones"})
        assert outside["ok"] is False and "4620.5(f)(2)" in outside["error"], outside
        assert outside["operator"] == "s.jones"
        inside = await _result(sup, "set_limits", {"min_bet": "2", "max_bet": "5", "operator": "s.jones"})
        assert inside["ok"] is True and inside["operator"] == "s.jones", inside
        # an integrity alarm: the console's button does not clear it, a bare ack neither
        table.service.apply(ev.Irregularity("shoe", "a card left the shoe unread", halts=True))
        alarm_id = max(table.core.table.alarms)
        assert table.core.table.alarms[alarm_id].integrity
        assert table.service.inputs._acknowledge(table.core.table) == []
        bare = await _result(sup, "ack_alarm", {"alarm_id": alarm_id, "operator": "s.jones"})
        assert bare["ok"] is False and "reason" in bare["error"] and "integrity" in bare["error"], bare
        done = await _result(sup, "ack_alarm", {"alarm_id": alarm_id, "operator": "s.jones",
                                                "reason": "card re-read at the shoe: 7H"})
        assert done["ok"] is True, done
        assert alarm_id not in table.core.table.alarms
        # the journal holds the operator with the inputs, the events show who and why
        rows = [r.event for r in table.journal.inputs_since(0)]
        assert {"type": "alarm_ack", "alarm_id": alarm_id, "operator": "s.jones",
                "reason": "card re-read at the shoe: 7H"} in rows
        assert any(r["type"] == "set_limits" and r["operator"] == "s.jones" for r in rows)
        await _until(lambda: any(e["type"] == "alarm_cleared" and e["id"] == alarm_id
                                 for e in _messages(sup, f"{PREFIX}/t01/events")), 10, "alarm_cleared")
        events = _messages(sup, f"{PREFIX}/t01/events")
        cleared = next(e for e in events if e["type"] == "alarm_cleared" and e["id"] == alarm_id)
        assert (cleared["operator"], cleared["reason"]) == ("s.jones", "card re-read at the shoe: 7H")
        assert any(e["type"] in ("limits", "limits_pending") and e.get("operator") == "s.jones" for e in events)
    assert pit.password("t01") not in pit.log()
