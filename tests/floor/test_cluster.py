"""The floor's three-node NATS cluster, real processes on loopback: retained messages on every node,
a node lost, and the roles of DESIGN.md enforced by the broker (each attack tried, none passes)."""

from __future__ import annotations

import asyncio
import uuid

import aiomqtt
import pytest

from tests.floor.conftest import Floor
from tests.floor.helpers import client, connected, publish, read_retained, reading, wait_settled


def _unique() -> bytes:
    return f'{{"seq": 1, "id": "{uuid.uuid4()}"}}'.encode()


async def test_retained_state_published_on_node_1_is_read_on_node_3_over_tcp_and_websockets(floor: Floor) -> None:
    body = _unique()
    await publish(floor, 0, "t01", "tables/t01/state", body, retain=True)
    async with reading(floor, 2, "dashboard", "tables/t01/state", websockets=True) as screen:
        await screen.wait_for("tables/t01/state", body)
    async with reading(floor, 2, "tom", "tables/t01/state") as tool:
        await tool.wait_for("tables/t01/state", body)
    assert tool.messages[-1][2] is True  # delivered as a retained message


async def test_a_killed_node_keeps_retained_messages_on_the_other_two_and_its_client_moves(floor: Floor) -> None:
    body = _unique()
    await publish(floor, 0, "t02", "tables/t02/state", body, retain=True)
    async with client(floor, 0, "t02", client_id="tablectl-tables-t02") as table:
        await table.subscribe("tables/t02/cmd/#", qos=1)
        floor.cluster.kill(0)
        with pytest.raises(aiomqtt.MqttError):  # the table sees its node go
            async with asyncio.timeout(10):
                async for _ in table.messages:
                    pass
    await wait_settled(floor, (1, 2))
    for node in (1, 2):
        assert await read_retained(floor, node, "dashboard", "tables/t02/state") == body
    # the table moves to node 2 with the same client id and goes on; node 3 sees it
    moved = _unique()
    async with reading(floor, 2, "dashboard", "tables/t02/state") as screen:
        await publish(floor, 1, "t02", "tables/t02/state", moved, retain=True)
        await screen.wait_for("tables/t02/state", moved)
    floor.revive()
    await wait_settled(floor, (0, 1, 2))
    assert await read_retained(floor, 0, "dashboard", "tables/t02/state") == moved  # the revived node has it


async def test_nobody_but_a_person_writes_its_own_commands_and_nobody_but_a_table_its_topics(floor: Floor) -> None:
    forged = [
        ("jane.doe", "tables/t01/cmd/pit/bob/open"),  # another pit user's name
        ("jane.doe", "tables/t01/cmd/surveillance/jane.doe/ack_alarm"),  # a role she does not have
        ("jane.doe", "tables/t01/cmd/surveillance/sam/ack_alarm"),  # another person's name and role
        ("jane.doe", "tables/t01/cmd/pit/jane.doe/shuffle"),  # a verb no role has
        ("tom", "tables/t01/cmd/technician/tom/open"),  # a verb his role does not have
        ("jane.doe", "tables/t01/cmd/pit/jane.doe/open/result"),  # a table's answer
        ("jane.doe", "tables/t01/state"),  # a table's own topics
        ("jane.doe", "tables/t01/events"),
        ("tom", "tables/t01/cmd/pit/tom/open"),  # a technician posing as pit
        ("t01", "tables/t02/state"),  # a table writing another's topics
        ("t01", "tables/t02/cmd/pit/jane.doe/open"),  # a table posing as a person
        ("dashboard", "tables/t01/cmd/pit/jane.doe/open"),  # a read-only screen
        ("tracking", "tables/t01/ratings"),
    ]
    async with reading(floor, 2, "sam", "tables/#") as watch:
        for user, topic in forged:
            await publish(floor, 0, user, topic, b'{"forged": true}')
        await publish(floor, 0, "jane.doe", "tables/t01/cmd/pit/jane.doe/open", b"{}")  # her own: passes
        await publish(floor, 1, "t01", "tables/t01/cmd/pit/jane.doe/open/result", b'{"ok": true}')
        await watch.wait_for("tables/t01/cmd/pit/jane.doe/open/result")
        await asyncio.sleep(0.5)
    seen = watch.topics()
    assert [t for t, p, _ in watch.messages if p == b'{"forged": true}'] == []
    assert "tables/t01/cmd/pit/jane.doe/open" in seen


async def test_a_forged_retained_state_does_not_replace_the_tables(floor: Floor) -> None:
    body = _unique()
    await publish(floor, 0, "t03", "tables/t03/state", body, retain=True)
    await publish(floor, 1, "jane.doe", "tables/t03/state", b'{"seq": 999999}', retain=True)
    await publish(floor, 1, "t01", "tables/t03/state", b'{"seq": 999999}', retain=True)
    assert await read_retained(floor, 2, "dashboard", "tables/t03/state") == body
    assert await read_retained(floor, 0, "sam", "tables/t03/state") == body


async def test_only_tracking_and_surveillance_read_ratings(floor: Floor) -> None:
    rating = _unique()
    await publish(floor, 0, "t04", "tables/t04/ratings/open", rating, retain=True)
    # read_retained subscribes again until the retained message comes: after a node loss (another test's)
    # NATS answers a subscription without it for a few seconds (failed once in CI with a single subscription)
    assert await read_retained(floor, 1, "tracking", "tables/t04/ratings/open") == rating
    assert await read_retained(floor, 1, "sam", "tables/t04/ratings/open") == rating
    for user in ("dashboard", "tom", "jane.doe"):
        async with reading(floor, 2, user, "tables/#") as other:
            await publish(floor, 0, "t04", "tables/t04/ratings", rating)
            await publish(floor, 0, "t04", "tables/t04/state", b'{"after": "ratings"}', retain=True)
            await other.wait_for("tables/t04/state", b'{"after": "ratings"}')
        assert [t for t in other.topics() if "ratings" in t] == [], user


async def test_a_table_reads_only_its_own_subtree(floor: Floor) -> None:
    await publish(floor, 0, "t02", "tables/t02/state", b'{"t02": true}', retain=True)
    c = await connected(floor, 1, "t01")
    try:
        filters = ("tables/#", "tables/t02/#", "tables/+/state", "tables/t01/#")
        granted = {f: await c.subscribe(f, qos=1) for f in filters}
    finally:
        await c.__aexit__(None, None, None)
    refused = {f for f, codes in granted.items() if any(int(getattr(q, "value", q)) >= 0x80 for q in codes)}
    assert refused == {"tables/#", "tables/t02/#", "tables/+/state"}
    async with reading(floor, 1, "t01", "tables/t01/#") as table:
        await publish(floor, 0, "t01", "tables/t01/state", b'{"t01": true}', retain=True)
        await table.wait_for("tables/t01/state", b'{"t01": true}')


async def test_a_wrong_password_an_unknown_user_or_no_password_is_refused_at_connect(floor: Floor) -> None:
    host, port = floor.mqtt(0)
    for user, password in (("jane.doe", "guess"), ("mallory", "guess"), ("t01", floor.passwords["jane.doe"])):
        with pytest.raises(aiomqtt.MqttError):
            async with aiomqtt.Client(host, port, username=user, password=password, timeout=5):
                pass
    with pytest.raises(aiomqtt.MqttError):
        async with aiomqtt.Client(host, port, username="jane.doe", timeout=5):
            pass


@pytest.mark.xfail(strict=True, reason="NATS 2.15.1 does not apply a callout user's allowed_connection_types "
                   "(server/auth_callout.go registers the user without the check its config users get), and its "
                   "request does not say which listener the client came in on (docs/floor.md, 'Known gaps')")
async def test_a_table_over_websockets_is_refused_at_connect(floor: Floor) -> None:
    with pytest.raises(aiomqtt.MqttError):
        async with client(floor, 0, "t01", websockets=True):
            pass
