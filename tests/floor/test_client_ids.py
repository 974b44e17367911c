"""Nobody takes a table's or the recorder's MQTT session on the floor's cluster: each insider's move, tried.

NATS binds no client id to a user; the floor's auth callout does (controller/floor/auth_policy.py): a client
id reserved for a table (its session, its start witness) or the recorder is refused to every other user at
connect, on every node and over WebSockets too, while the owner stays connected. Before the callout, a pit
user with a table's client id took its session and knocked it off (this file's first test was a strict xfail).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import uuid

import aiomqtt
import pytest

from controller.floor.nats_config import ROUTE_USER
from controller.mqtt.addresses import client_id_for
from tests.floor.conftest import Floor
from tests.floor.helpers import client, connected, reading

TABLE_ID = client_id_for("tables", "t01")
WITNESS_ID = f"{TABLE_ID}-witness"


async def _refused(floor: Floor, node: int, user: str, client_id: str, *, websockets: bool = False) -> str:
    """Connect as ``user`` with ``client_id``: the broker's refusal, which must be 'not authorized' (not the
    cluster's 'unavailable' while it elects leaders, which a retry would get past)."""
    deadline = asyncio.get_running_loop().time() + 30
    while True:
        try:
            async with client(floor, node, user, client_id=client_id, websockets=websockets):
                pass
        except aiomqtt.MqttError as exc:
            if re.search(r"code:(135|5)\b|[Nn]ot authori[sz]ed", str(exc)):
                return str(exc)
            if asyncio.get_running_loop().time() > deadline:
                raise
            await asyncio.sleep(0.5)
            continue
        pytest.fail(f"{user} connected with client id {client_id!r}")


async def _still_heard(floor: Floor, table: aiomqtt.Client, topic: str) -> None:
    """``table`` is still connected: what it publishes now reaches a screen on another node."""
    body = f'{{"still": "{uuid.uuid4()}"}}'.encode()
    async with reading(floor, 2, "dashboard", topic) as screen:
        await table.publish(topic, body, qos=1, retain=True)
        await screen.wait_for(topic, body, timeout=15)


async def test_nobody_can_take_a_tables_client_id(floor: Floor) -> None:
    table = await connected(floor, 0, "t01", client_id=TABLE_ID)
    try:
        for node, user in ((1, "jane.doe"), (0, "sam"), (2, "dashboard"), (1, "t02"), (0, "recorder")):
            await _refused(floor, node, user, TABLE_ID)
        await _refused(floor, 1, "jane.doe", TABLE_ID, websockets=True)
        await _still_heard(floor, table, "tables/t01/state")
    finally:
        with contextlib.suppress(aiomqtt.MqttError):
            await table.__aexit__(None, None, None)


async def test_nobody_but_the_table_takes_its_start_witness_id(floor: Floor) -> None:
    for user in ("dashboard", "jane.doe", "t02"):
        await _refused(floor, 1, user, WITNESS_ID)
    async with client(floor, 1, "t01", client_id=WITNESS_ID):  # its owner may
        pass


async def test_nobody_takes_the_recorders_session_or_its_queued_events(floor: Floor) -> None:
    """The recorder's persistent session keeps what came while it was away; an intruder with its client id
    would take those events and acknowledge them, and they would never reach the record."""
    body = f'{{"seq": 1, "id": "{uuid.uuid4()}"}}'.encode()
    topic = "tables/t03/events"
    def recorder(clean: bool) -> aiomqtt.Client:
        return aiomqtt.Client(*floor.mqtt(0), username="recorder", password=floor.passwords["recorder"],
                              identifier="recorder", clean_session=clean, timeout=10)

    deadline = asyncio.get_running_loop().time() + 30
    while True:  # a QoS 1 subscription is refused while the cluster elects leaders (another test's node loss)
        async with recorder(False) as first:
            granted = await first.subscribe(topic, qos=1)
        if all(int(getattr(q, "value", q)) < 0x80 for q in granted):
            break  # away now; its session (clean_session false) stays and keeps what comes
        assert asyncio.get_running_loop().time() < deadline, granted
        await asyncio.sleep(0.5)
    table = await connected(floor, 1, "t03")
    try:
        await table.publish(topic, body, qos=1)
    finally:
        await table.__aexit__(None, None, None)
    for user in ("jane.doe", "tom", "t03", "tracking"):
        await _refused(floor, 2, user, "recorder")
    async with recorder(False) as back:
        async with asyncio.timeout(20):
            async for m in back.messages:
                if m.topic.value == topic and m.payload == body:
                    break
    async with recorder(True):  # end the session, so no other test finds it holding events
        pass


async def test_a_person_keeps_any_client_id_of_their_own(floor: Floor) -> None:
    """The binding reserves the tables' and the recorder's ids only: people and screens pick their own."""
    for user, cid in (("jane.doe", "jane-laptop"), ("dashboard", "pitdash-0a1b2c"), ("t01", "tablectl-x")):
        async with client(floor, 2, user, client_id=cid):
            pass


async def test_without_its_auth_service_the_floor_refuses_new_clients_and_keeps_connected_ones(floor: Floor) -> None:
    """Fail closed: with no callout service answering, nobody new gets in, even with the right password;
    a table already connected plays on; the services back, clients connect again."""
    table = await connected(floor, 0, "t01", client_id=TABLE_ID)
    try:
        for node in range(3):
            floor.cluster.kill_auth(node)
        with pytest.raises(aiomqtt.MqttError):
            async with client(floor, 1, "jane.doe"):
                pass
        await table.publish("tables/t01/status", b"online", qos=1, retain=True)
        floor.revive()
        async with client(floor, 1, "jane.doe"):
            pass
        await _still_heard(floor, table, "tables/t01/state")
    finally:
        with contextlib.suppress(aiomqtt.MqttError):
            await table.__aexit__(None, None, None)


async def test_no_pit_user_reaches_the_nats_port_where_the_auth_requests_are_answered(floor: Floor) -> None:
    """The callout's requests travel as NATS messages: a pit user on the NATS protocol could try to answer
    them. Nobody but the cluster's own tools may use that port."""
    import nats
    from nats.errors import NoServersError

    url = f"nats://{floor.cluster.bind}:{floor.cluster.node(0).client}"
    for user in ("jane.doe", "dashboard", "t01", "recorder"):
        with pytest.raises((NoServersError, OSError, nats.errors.Error)):
            nc = await nats.connect(url, user=user, password=floor.passwords[user], allow_reconnect=False,
                                    connect_timeout=5, max_reconnect_attempts=0)
            await nc.close()


def test_the_node_configs_hold_no_password_in_clear(floor: Floor) -> None:
    configs = [floor.cluster.dir / n.name / "nats.conf" for n in floor.cluster.nodes]
    texts = [c.read_text() for c in configs]
    for user, password in floor.passwords.items():
        if user == ROUTE_USER:  # presented by a node on the routes it dials: only in the route URLs (mode 0600)
            assert all(t.count(password) == t.count(f"nats-route://{ROUTE_USER}:{password}@") > 0 for t in texts)
            continue
        assert not any(password in t for t in texts), user
    assert all(t.count('password: "$2b$') == 3 for t in texts)  # floor-admin, floor-auth, floor-route
    for n in floor.cluster.nodes:
        assert "Plaintext passwords detected" not in floor.cluster.log(n.name)


async def test_a_tables_client_id_under_a_prefix_with_a_dot_is_one_nats_accepts(floor: Floor) -> None:
    """NATS refuses a client id holding a '.' ('invalid character in client ID'): a table under the prefix
    ``casino.floor`` once could not connect at all."""
    async with client(floor, 0, "t01", client_id=client_id_for("casino.floor", "t01")):
        pass
