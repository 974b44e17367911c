"""Operators and roles (DESIGN.md): `tablectl broker-config` makes a Mosquitto that enforces them.

Each test starts Mosquitto with the generated configuration (``mosquitto -c DIR/mosquitto.conf``
on free ports) and proves each role's limits both ways. A publish the ACL refuses is dropped
silently by Mosquitto (MQTT 3.1.1, QoS 0/1: the PUBACK still comes), so a refused publish is
shown by a privileged observer (a surveillance user who reads everything and never publishes) that
never sees it while it does see a marker published after the refused message was acknowledged.
Mosquitto's client id is each user's name (``use_username_as_clientid``), so the observer, the
marker's sender and the user under test are three users.
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
from controller.mqtt.addresses import client_id_for
from controller.mqtt.broker_config import hash_password, verify_password, write_broker_config
from controller.profiles import load_rules
from tests.mqtt.pit_broker import OBSERVER, PIT, PIT2, PREFIX, SURVEILLANCE, TECHNICIAN, Broker, _pit
from tests.mqtt_broker import Mosquitto
from tests.service.test_table_service import _opts, _until, table_running

ROOT = Path(__file__).resolve().parents[2]


class Observer:
    """A surveillance user subscribed to the whole pit: what each topic received."""

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
    async with pit.client(OBSERVER) as client:
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
    marker_topic = f"{PREFIX}/t02/cmd/technician/{TECHNICIAN}/ack_alarm"
    async with pit.client(TECHNICIAN) as s:
        await s.publish(marker_topic, marker, qos=1)
    await obs.wait_for(marker_topic, marker)
    await asyncio.sleep(0.1)
    assert not obs.saw(topic, body), f"{user} could publish on {topic}"


async def _allowed_publish(pit: Broker, obs: Observer, user: str, topic: str) -> None:
    body = f"allowed {user} {time.monotonic_ns()}".encode()
    async with pit.client(user) as c:
        await c.publish(topic, body, qos=1)
    await obs.wait_for(topic, body)


async def _receives(pit: Broker, user: str, topic_filter: str, topic: str, sender: str = PIT) -> bool:
    """Whether ``user``, subscribed to ``topic_filter``, gets ``sender``'s publish on ``topic``
    within 1.5 s (it arrives in milliseconds when the ACL lets it through)."""
    body = f"to {user} {time.monotonic_ns()}".encode()
    async with pit.client(user) as c:
        with contextlib.suppress(aiomqtt.MqttError):  # a refused subscription may fail outright
            await c.subscribe(topic_filter, qos=1)
        async with pit.client(sender) as s:
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
    files = write_broker_config(tmp_path / "pit", ["t01", "t02"], pit=["s.jones", "a.li"], surveillance=["eye"],
                                technician=["tech"], screens=2, port=1883, ws_port=9001, user=None)
    conf = files.conf.read_text().splitlines()
    for line in ("per_listener_settings false", "allow_anonymous false", f"password_file {files.passwd}",
                 f"acl_file {files.acl}", "listener 1883 127.0.0.1", "listener 9001 127.0.0.1",
                 "protocol websockets", "socket_domain ipv4"):
        assert line in conf, line
    # the client id is the user name under EACH listener (at the top of the file 2.0.11 ignores it)
    listeners = [n for n, line in enumerate(conf) if line.startswith("listener ")]
    assert len(listeners) == 2 and conf.count("use_username_as_clientid true") == 2
    assert all(n > listeners[0] for n, line in enumerate(conf) if line == "use_username_as_clientid true")
    assert not any(line.startswith("user ") for line in conf)
    acl = files.acl.read_text().splitlines()

    def block(user: str) -> list[str]:
        start = acl.index(f"user {user}") + 1
        end = next((n for n in range(start, len(acl)) if acl[n].startswith("user ")), len(acl))
        return [x for x in acl[start:end] if x.startswith("topic")]

    assert block("t01") == ["topic read tables/t01/#", "topic read tables/recorder/t01"] + [
        f"topic write tables/t01/{k}" for k in (
        "status", "state", "events", "alarms", "history", "analytics", "ratings", "ratings/open",
        "cmd/+/+/+/result")]
    ratings = ["topic deny tables/+/ratings", "topic deny tables/+/ratings/open"]
    assert block("dashboard") == block("dashboard-2") == [*ratings, "topic read tables/#"]
    assert block("a.li") == [*ratings, "topic read tables/#"] + [
        f"topic write tables/+/cmd/pit/a.li/{v}" for v in ("open", "close", "set_limits", "decks_changed", "ack_alarm",
                                                           "selfcheck", "set_dealer")]
    assert block("eye") == ["topic read tables/#", "topic write tables/+/cmd/surveillance/eye/ack_alarm",
                            "topic write tables/+/cmd/surveillance/eye/selfcheck"]
    assert block("tech") == [*ratings, "topic read tables/#", "topic write tables/+/cmd/technician/tech/ack_alarm"]
    assert block("tracking") == ["topic read tables/+/ratings", "topic read tables/+/ratings/open"]
    assert block("recorder") == [*(f"topic read tables/+/{t}" for t in ("events", "state", "ratings", "ratings/open")),
                                 "topic write tables/recorder/#"]
    assert "max_queued_messages 1000000" in conf  # the recorder down for an hour on 200 tables: 300,000 events
    # credentials: 0600, every user, and the passwd file holds their $7$ hashes
    assert stat.S_IMODE(files.credentials.stat().st_mode) == 0o600
    assert stat.S_IMODE(files.passwd.stat().st_mode) == 0o600
    creds = tomllib.loads(files.credentials.read_text())
    users = {"t01", "t02", "dashboard", "dashboard-2", "s.jones", "a.li", "eye", "tech", "tracking", "recorder"}
    assert set(creds["users"]) == users
    some = ("a.li", "eye", "tech", "t02", "dashboard-2", "tracking", "recorder")
    assert [creds["users"][u]["role"] for u in some] == [
        "pit", "surveillance", "technician", "table", "dashboard", "tracking", "recorder"]
    hashes = dict(line.split(":", 1) for line in files.passwd.read_text().splitlines())
    for user, entry in creds["users"].items():
        assert len(entry["password"]) >= 24
        assert hashes[user].startswith("$7$101$") and verify_password(entry["password"], hashes[user])
        assert entry["password"] not in files.passwd.read_text() + "\n".join(conf) + files.acl.read_text()
    assert len({e["password"] for e in creds["users"].values()}) == len(users)
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
    (["--dir", "D", "--tables", "t01", "--pit", "dashboard"], "--pit 'dashboard'"),
    (["--dir", "D", "--tables", "t01", "--pit", "t01"], "--pit 't01'"),
    (["--dir", "D", "--tables", "t01", "--pit", "a b"], "' '"),
    (["--dir", "D", "--tables", "t01", "--pit", "S.Jones"], "'S'"),
    (["--dir", "D", "--tables", "t01", "--surveillance", "ey\u0435"], "U+0435"),  # a Cyrillic e
    (["--dir", "D", "--tables", "t01", "--technician", "   "], "blank"),
    (["--dir", "D", "--tables", "t01", "--pit", "x", "--surveillance", "x"], "one user, one role"),
    (["--dir", "D", "--tables", "t01", "--pit", "x,x"], "twice"),
    (["--dir", "D", "--tables", "t01", "--screens", "0"], "--screens 0"),
    (["--dir", "D", "--tables", "tracking"], "'tracking'"),
    (["--dir", "D", "--tables", "t01,recorder"], "'recorder'"),
    (["--dir", "D", "--tables", "t01,alarms"], "'alarms'"),  # the recorder's alarm topic
    (["--dir", "D", "--tables", "t01", "--pit", "recorder"], "--pit 'recorder'"),
    (["--dir", "D", "--tables", "t01", "--supervisor", "s.jones"], "--supervisor is gone"),
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
    proc = _tablectl("broker-config", "--dir", str(d), "--tables", "t01,t02", "--pit", "s.jones")
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


async def test_anonymous_clients_and_wrong_passwords_are_refused(pit_shared: Broker) -> None:
    pit = pit_shared
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


async def test_a_table_writes_only_its_own_subtree(pit_shared: Broker) -> None:
    pit = pit_shared
    async with observing(pit) as obs:
        for kind in ("status", "state", "events", "alarms", "history", "analytics", "ratings", "ratings/open",
                     f"cmd/pit/{PIT}/set_limits/result"):
            await _allowed_publish(pit, obs, "t01", f"{PREFIX}/t01/{kind}")
        for topic in (f"{PREFIX}/t02/state", f"{PREFIX}/t02/events", f"{PREFIX}/t02/status",
                      f"{PREFIX}/t01/cmd/pit/t01/close",  # a table commanding itself
                      f"{PREFIX}/t02/cmd/pit/{PIT}/close/result",  # another table's result
                      f"{PREFIX}/t01/other", "elsewhere/t01/state"):
            await _refused_publish(pit, obs, "t01", topic)


async def test_a_table_reads_its_own_subtree_only(pit_shared: Broker) -> None:
    pit = pit_shared
    assert await _receives(pit, "t01", f"{PREFIX}/t01/cmd/+/+/+", f"{PREFIX}/t01/cmd/pit/{PIT}/close")
    # its own retained state, the witness of its journal at start (one session at a time: the id is the user)
    async with pit.client("t01") as t01:
        await t01.publish(f"{PREFIX}/t01/state", b'{"seq": 7}', qos=1, retain=True)
    async with pit.client("t01") as t01:
        await t01.subscribe(f"{PREFIX}/t01/#", qos=1)
        async with asyncio.timeout(5):
            async for m in t01.messages:
                if str(m.topic) == f"{PREFIX}/t01/state":
                    assert m.payload == b'{"seq": 7}' and m.retain
                    break
    assert not await _receives(pit, "t01", f"{PREFIX}/t02/cmd/+/+/+", f"{PREFIX}/t02/cmd/pit/{PIT}/close")
    assert not await _receives(pit, "t01", f"{PREFIX}/#", f"{PREFIX}/t02/state", sender="t02")


async def test_the_screens_read_everything_but_the_ratings_and_publish_nothing(pit_shared: Broker) -> None:
    pit = pit_shared
    async with pit.client("t02") as t02:
        await t02.publish(f"{PREFIX}/t02/state", b'{"seq": 1}', qos=1, retain=True)
    async with pit.client("dashboard") as dash:
        await dash.subscribe(f"{PREFIX}/#", qos=1)
        async with asyncio.timeout(5):
            async for m in dash.messages:
                if str(m.topic) == f"{PREFIX}/t02/state":
                    break  # the retained state of another table
    for screen in ("dashboard", "dashboard-2"):
        assert await _receives(pit, screen, f"{PREFIX}/#", f"{PREFIX}/t01/cmd/pit/{PIT}/ack_alarm")
        assert not await _receives(pit, screen, f"{PREFIX}/#", f"{PREFIX}/t01/ratings", sender="t01")
        assert not await _receives(pit, screen, f"{PREFIX}/+/ratings/open", f"{PREFIX}/t01/ratings/open",
                                   sender="t01")
    async with observing(pit) as obs:
        for topic in (f"{PREFIX}/t01/cmd/pit/dashboard/close", f"{PREFIX}/t01/cmd/pit/{PIT}/ack_alarm",
                      f"{PREFIX}/t01/state", f"{PREFIX}/t01/cmd/pit/{PIT}/close/result", f"{PREFIX}/dashboard"):
            await _refused_publish(pit, obs, "dashboard", topic)


async def test_ratings_reach_tracking_and_surveillance_only(pit_shared: Broker) -> None:
    pit = pit_shared
    for user in ("tracking", SURVEILLANCE):
        assert await _receives(pit, user, f"{PREFIX}/+/ratings", f"{PREFIX}/t01/ratings", sender="t01")
        assert await _receives(pit, user, f"{PREFIX}/#", f"{PREFIX}/t02/ratings/open", sender="t02")
    for user in (PIT, TECHNICIAN, "dashboard"):
        assert not await _receives(pit, user, f"{PREFIX}/#", f"{PREFIX}/t01/ratings", sender="t01")
    # tracking reads nothing else, writes nothing
    assert not await _receives(pit, "tracking", f"{PREFIX}/#", f"{PREFIX}/t01/state", sender="t01")
    async with observing(pit) as obs:
        await _refused_publish(pit, obs, "tracking", f"{PREFIX}/t01/ratings")


async def test_a_person_writes_only_its_own_name_and_its_roles_verbs(pit_shared: Broker) -> None:
    pit = pit_shared
    async with observing(pit) as obs:
        for verb in ("open", "close", "set_limits", "decks_changed", "ack_alarm"):
            await _allowed_publish(pit, obs, PIT, f"{PREFIX}/t01/cmd/pit/{PIT}/{verb}")
        await _allowed_publish(pit, obs, SURVEILLANCE, f"{PREFIX}/t02/cmd/surveillance/{SURVEILLANCE}/ack_alarm")
        await _allowed_publish(pit, obs, TECHNICIAN, f"{PREFIX}/t02/cmd/technician/{TECHNICIAN}/ack_alarm")
        for user, topic in (
            (PIT, f"{PREFIX}/t01/cmd/pit/{PIT2}/close"),  # as another person
            (PIT, f"{PREFIX}/t01/cmd/surveillance/{PIT}/ack_alarm"),  # a role it does not hold
            (PIT, f"{PREFIX}/t01/cmd/surveillance/{SURVEILLANCE}/ack_alarm"),  # both
            (PIT, f"{PREFIX}/t01/cmd/pit/S.JONES/close"), (PIT, f"{PREFIX}/t01/cmd/pit/{PIT}x/close"),
            (TECHNICIAN, f"{PREFIX}/t01/cmd/technician/{TECHNICIAN}/close"),  # a verb its role lacks
            (TECHNICIAN, f"{PREFIX}/t01/cmd/pit/{TECHNICIAN}/close"),
            (SURVEILLANCE, f"{PREFIX}/t01/cmd/surveillance/{SURVEILLANCE}/open"),
            (PIT, f"{PREFIX}/t01/state"), (PIT, f"{PREFIX}/t01/events"), (PIT, f"{PREFIX}/t01/alarms"),
            (SURVEILLANCE, f"{PREFIX}/t01/history"), ("t01", f"{PREFIX}/t01/cmd/pit/{PIT}/close"),
        ):
            await _refused_publish(pit, obs, user, topic)


async def test_nobody_but_the_table_writes_a_result_retained_or_not(pit_shared: Broker) -> None:
    """The lab's forged, retained command result: refused by the broker for every person and screen."""
    pit = pit_shared
    async with observing(pit) as obs:
        for user in (PIT, PIT2, SURVEILLANCE, TECHNICIAN, "dashboard", "tracking"):
            for topic in (f"{PREFIX}/t01/cmd/pit/{user}/close/result", f"{PREFIX}/t01/cmd/pit/{PIT2}/close/result",
                          f"{PREFIX}/t01/cmd/surveillance/{SURVEILLANCE}/ack_alarm/result"):
                body = f"forged {user} {time.monotonic_ns()}".encode()
                async with pit.client(user) as c:
                    await c.publish(topic, body, qos=1, retain=True)
                assert not obs.saw(topic, body)
        await _refused_publish(pit, obs, PIT, f"{PREFIX}/t01/cmd/pit/{PIT}/close/result")
    # and no retained forgery is handed to a new subscriber
    async with pit.client(PIT2) as late:
        await late.subscribe(f"{PREFIX}/+/cmd/+/+/+/result", qos=1)
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(1.0):
                async for m in late.messages:
                    raise AssertionError(f"a retained result on {m.topic}: {m.payload!r}")


async def test_nobody_takes_a_tables_client_id(pit_shared: Broker) -> None:
    """The lab's move: the read-only dashboard user connected with the table's client id. The broker
    names each session after its user, so the table stays connected (its last will never fires)."""
    pit = pit_shared
    async with observing(pit, f"{PREFIX}/t01/status") as obs, \
            aiomqtt.Client("127.0.0.1", pit.port, username="t01", password=pit.password("t01"),
                           identifier=client_id_for(PREFIX, "t01"),
                           will=aiomqtt.Will(f"{PREFIX}/t01/status", b"offline", qos=1, retain=True)) as table:
        await table.publish(f"{PREFIX}/t01/status", b"online", qos=1, retain=True)
        await obs.wait_for(f"{PREFIX}/t01/status", b"online")
        for identifier in (client_id_for(PREFIX, "t01"), "t01"):
            for user in ("dashboard", PIT, "tracking"):
                async with pit.client(user, identifier=identifier):
                    await asyncio.sleep(0.1)
                # and through the WebSockets listener, the dashboard's way in
                async with aiomqtt.Client("127.0.0.1", pit.ws_port, username=user, password=pit.password(user),
                                          identifier=identifier, transport="websockets"):
                    await asyncio.sleep(0.1)
        await table.publish(f"{PREFIX}/t01/status", b"still here", qos=1, retain=True)
        await obs.wait_for(f"{PREFIX}/t01/status", b"still here")
        assert not obs.saw(f"{PREFIX}/t01/status", b"offline")


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


async def _send(client: aiomqtt.Client, role: str, user: str, verb: str, payload: dict[str, Any] | bytes) -> str:
    """Publish a command on ``tables/t01/cmd/<role>/<user>/<verb>``; its request id."""
    rid = f"r-{time.monotonic_ns()}"
    body = payload if isinstance(payload, bytes) else json.dumps({**payload, "id": rid}).encode()
    await client.publish(f"{PREFIX}/t01/cmd/{role}/{user}/{verb}", body, qos=1)
    return rid


async def _answer(obs: Observer, role: str, user: str, verb: str, rid: str | None) -> dict[str, Any]:
    """The table's result on ``.../cmd/<role>/<user>/<verb>/result`` with ``rid`` (None: the first new one)."""
    seen = len(obs.got)
    async with asyncio.timeout(10):
        while True:
            for t, body in obs.got[seen if rid is None else 0:]:
                if t == f"{PREFIX}/t01/cmd/{role}/{user}/{verb}/result":
                    result = json.loads(body)
                    if rid is None or result.get("id") == rid:
                        return dict(result)
            obs.arrived.clear()
            await obs.arrived.wait()


async def _result(pit: Broker, obs: Observer, role: str, user: str, verb: str,
                  payload: dict[str, Any]) -> dict[str, Any]:
    async with pit.client(user) as c:
        rid = await _send(c, role, user, verb, payload)
    return await _answer(obs, role, user, verb, rid)


def _refusals(table: Any) -> list[dict[str, Any]]:
    """The ``command_refused`` records the table journaled."""
    return [json.loads(r.body) for r in table.journal.records(1) if '"command_refused"' in r.body]


async def _integrity_alarm(table: Any) -> int:
    table.service.apply(ev.Irregularity("shoe", "a card left the shoe unread", halts=True))
    alarm_id = max(table.core.table.alarms)
    assert table.core.table.alarms[alarm_id].integrity
    return int(alarm_id)


async def test_commands_under_the_generated_acl_are_bound_to_their_sender(pit: Broker, tmp_path: Path) -> None:
    """The table runs as ``t01`` with its generated password. A pit user's commands name him without his
    saying so; another person's publish on his topic never arrives (nothing journaled as him); a pit
    user cannot send on the surveillance topic (the broker) nor clear an integrity alarm on his own (the
    table); surveillance clears it with a reason. Every refusal the table saw is journaled."""
    url = f"mqtt://t01:{pit.password('t01')}@127.0.0.1:{pit.port}"
    opts = _opts(load_rules("ny-4620"), rounds=None, seed=4, prefix=PREFIX)
    async with observing(pit, f"{PREFIX}/t01/#") as obs, \
            table_running(opts, tmp_path / "state", url) as (table, task):
        await table.publisher.wait_connected(10)
        await _until(lambda: table.core.table.rounds_settled >= 1 or task.done(), 30, "a round")
        assert not task.done()
        await _until(lambda: any(s["round"] >= 1 for s in _messages(obs, f"{PREFIX}/t01/state")), 10,
                     "the state of a played round")
        # outside NY 4620.5(f)(2): refused naming the clause; inside: accepted, the topic's user the operator
        outside = await _result(pit, obs, "pit", PIT, "set_limits", {"min_bet": "0.01", "max_bet": "999999999.99"})
        assert outside["ok"] is False and "4620.5(f)(2)" in outside["error"] and outside["operator"] == PIT, outside
        inside = await _result(pit, obs, "pit", PIT, "set_limits", {"min_bet": "2", "max_bet": "5"})
        assert inside["ok"] is True and inside["operator"] == PIT, inside
        # a.li publishes as s.jones, and as surveillance: the broker drops both
        async with pit.client(PIT2) as mallory:
            await _send(mallory, "pit", PIT, "set_limits", {"min_bet": "3", "max_bet": "777"})
            await _send(mallory, "surveillance", PIT2, "ack_alarm", {"alarm_id": 1, "reason": "x"})
        alarm_id = await _integrity_alarm(table)
        async with pit.client(PIT) as jones:  # the surveillance topic in his own name: dropped by the broker
            await _send(jones, "surveillance", PIT, "ack_alarm", {"alarm_id": alarm_id, "reason": "mine"})
        # on his own pit topic it reaches the table, which refuses it by the alarm's kind
        mine = await _result(pit, obs, "pit", PIT, "ack_alarm", {"alarm_id": alarm_id, "reason": "it's fine"})
        assert mine["ok"] is False and "may not acknowledge an integrity alarm" in mine["error"], mine
        assert alarm_id in table.core.table.alarms
        bare = await _result(pit, obs, "surveillance", SURVEILLANCE, "ack_alarm", {"alarm_id": alarm_id})
        assert bare["ok"] is False and "reason" in bare["error"], bare
        done = await _result(pit, obs, "surveillance", SURVEILLANCE, "ack_alarm",
                             {"alarm_id": alarm_id, "reason": "card re-read at the shoe: 7H"})
        assert done["ok"] is True and done["operator"] == SURVEILLANCE, done
        assert alarm_id not in table.core.table.alarms
        # the journal: the inputs name their sender, the refusals are there, nothing of a.li's
        rows = [r.event for r in table.journal.inputs_since(0)]
        assert {"type": "alarm_ack", "alarm_id": alarm_id, "operator": SURVEILLANCE,
                "reason": "card re-read at the shoe: 7H"} in rows
        assert any(r["type"] == "set_limits" and r["operator"] == PIT and r["max_bet"] == 500 for r in rows)
        assert not any(r["type"] == "set_limits" and r.get("max_bet") == 77700 for r in rows)
        refusals = _refusals(table)
        assert [(r["role"], r["user"], r["verb"]) for r in refusals] == [
            ("pit", PIT, "set_limits"), ("pit", PIT, "ack_alarm"), ("surveillance", SURVEILLANCE, "ack_alarm")]
        assert all(r["operator"] == r["user"] and r["error"] for r in refusals)
        assert not any(PIT2 in json.dumps(r) for r in refusals)
        # published on events like every record, and the alarm_cleared names who and why
        await _until(lambda: any(e["type"] == "alarm_cleared" and e["id"] == alarm_id
                                 for e in _messages(obs, f"{PREFIX}/t01/events")), 10, "alarm_cleared")
        events = _messages(obs, f"{PREFIX}/t01/events")
        cleared = next(e for e in events if e["type"] == "alarm_cleared" and e["id"] == alarm_id)
        assert (cleared["operator"], cleared["reason"]) == (SURVEILLANCE, "card re-read at the shoe: 7H")
        assert sum(e["type"] == "command_refused" for e in events) == 3
        assert any(e["type"] in ("limits", "limits_pending") and e.get("operator") == PIT for e in events)
    assert pit.password("t01") not in pit.log()


#: the lab's payloads and senders, each refused in one line and journaled
ATTACKS: list[tuple[str, str, str, bytes, str]] = [
    ("pit", "   ", "close", b"{}", "sender refused: user name is blank"),
    ("pit", "s.j\u043enes", "close", b"{}", "U+043E"),  # a Cyrillic o
    ("pit", "S.Jones", "close", b"{}", "'S'"),
    ("pit", "s.jones", "close", b'{"operator": "a.li"}', "operator: 'a.li' is not the sender 's.jones'"),
    ("pit", "s.jones", "close", b'{"operator": "   "}', "is not the sender"),
    ("pit", "s.jones", "set_limits", b'{"min_bet": "5", "max_bet": "10", "max_bet": "99999"}', "duplicate key"),
    ("pit", "s.jones", "close", b"[" * 2040 + b"]" * 2040, "nested 2040 deep"),
    ("technician", "tech.kim", "close", b"{}", "role technician may not send close"),
    ("admin", "s.jones", "close", b"{}", "role 'admin' sends no commands"),
]


async def test_without_an_acl_the_table_refuses_each_attack_in_one_line_and_journals_it(
        mosquitto: Mosquitto, tmp_path: Path) -> None:
    """A broker with no ACL at all: whatever reaches the table, the table checks the sender itself."""
    opts = _opts(load_rules("ny-4620"), rounds=None, seed=5, prefix=PREFIX)
    async with table_running(opts, tmp_path / "state", mosquitto.url) as (table, task), \
            aiomqtt.Client(mosquitto.host, mosquitto.port) as client:
        await table.publisher.wait_connected(10)
        await _until(lambda: table.core.table.phase != "closed" or task.done(), 30, "the open table")
        obs = Observer(client)
        pump = asyncio.create_task(obs.pump())
        await client.subscribe(f"{PREFIX}/t01/cmd/+/+/+/result", qos=1)
        before = table.core.table.snapshot()
        try:
            for role, user, verb, payload, needle in ATTACKS:
                waiting = asyncio.create_task(_answer(obs, role, user, verb, None))
                await asyncio.sleep(0)
                await client.publish(f"{PREFIX}/t01/cmd/{role}/{user}/{verb}", payload, qos=1)
                result = await waiting
                assert result["ok"] is False and needle in result["error"], (user, result)
                assert "\n" not in result["error"] and "Traceback" not in result["error"]
                assert result.get("operator") in (None, "s.jones", "tech.kim")
                if user != "s.jones" and user != "tech.kim":
                    assert "operator" not in result  # a name that is no user name is echoed as nobody
            # a pit user's ack of an integrity alarm reaches the table here: the table refuses it
            alarm_id = await _integrity_alarm(table)
            waiting = asyncio.create_task(_answer(obs, "pit", "s.jones", "ack_alarm", None))
            await asyncio.sleep(0)
            await client.publish(f"{PREFIX}/t01/cmd/pit/s.jones/ack_alarm",
                                 json.dumps({"alarm_id": alarm_id, "reason": "looks fine"}).encode(), qos=1)
            result = await waiting
            assert result["ok"] is False and "integrity alarm" in result["error"], result
            assert alarm_id in table.core.table.alarms
        finally:
            pump.cancel()
        after = table.core.table.snapshot()
        refusals = _refusals(table)
        inputs = [r.event for r in table.journal.inputs_since(0)]
    assert after["limits"] == before["limits"] and after["phase"] != "closed"  # no attack closed it or moved limits
    assert [(r["role"], r["user"], r["verb"]) for r in refusals] == [
        *((role, user, verb) for role, user, verb, _, _ in ATTACKS), ("pit", "s.jones", "ack_alarm")]
    for r, (_, user, _, _, needle) in zip(refusals, [*ATTACKS, ATTACKS[3]], strict=True):
        assert needle in r["error"] or r["verb"] == "ack_alarm"
        assert ("operator" in r) == (user in ("s.jones", "tech.kim"))
    # nothing was played as anyone: no input names an operator
    assert not [r for r in inputs if r.get("operator") is not None]


async def test_a_pit_user_sends_set_dealer_only_in_its_own_name_and_no_other_role_at_all(pit_shared: Broker) -> None:
    """DESIGN "The dealer on duty": no role can sign a dealer in under another user's name, and only the pit may."""
    pit = pit_shared
    async with observing(pit) as obs:
        await _allowed_publish(pit, obs, PIT, f"{PREFIX}/t01/cmd/pit/{PIT}/set_dealer")
        for user, topic in (
            (PIT, f"{PREFIX}/t01/cmd/pit/{PIT2}/set_dealer"),  # as another pit user
            (PIT2, f"{PREFIX}/t02/cmd/pit/{PIT}/set_dealer"),
            (SURVEILLANCE, f"{PREFIX}/t01/cmd/surveillance/{SURVEILLANCE}/set_dealer"),  # a verb its role lacks
            (SURVEILLANCE, f"{PREFIX}/t01/cmd/pit/{SURVEILLANCE}/set_dealer"),  # a role it does not hold
            (TECHNICIAN, f"{PREFIX}/t01/cmd/technician/{TECHNICIAN}/set_dealer"),
            ("dashboard", f"{PREFIX}/t01/cmd/pit/dashboard/set_dealer"),  # a screen
            ("dashboard-2", f"{PREFIX}/t01/cmd/pit/{PIT}/set_dealer"),
            ("tracking", f"{PREFIX}/t01/cmd/pit/tracking/set_dealer"),
            ("t01", f"{PREFIX}/t01/cmd/pit/t01/set_dealer"),  # a table naming its own dealer
        ):
            await _refused_publish(pit, obs, user, topic)
