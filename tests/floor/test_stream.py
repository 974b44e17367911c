"""The ``TABLES`` stream: every table's events, captured from MQTT, replicated on the three nodes."""

from __future__ import annotations

import base64
import json

from controller.floor.nats_client import NatsRequester
from controller.floor.stream import STREAM, stream_info
from tests.floor.conftest import Floor
from tests.floor.helpers import publish


async def _last_event(floor: Floor, table: str) -> bytes:
    user, password = floor.cluster.admin_login()
    node = floor.cluster.node(1)
    async with NatsRequester(floor.cluster.bind, node.client, user=user, password=password) as nats:
        answer = await nats.request(f"$JS.API.STREAM.MSG.GET.{STREAM}", {"last_by_subj": f"tables.{table}.events"})
    assert "error" not in answer, answer
    return base64.b64decode(answer["message"]["data"])


async def test_every_tables_events_are_captured_by_the_stream_with_three_replicas(floor: Floor) -> None:
    user, password = floor.cluster.admin_login()
    info = await stream_info(floor.cluster.bind, floor.cluster.node(0).client, user=user, password=password)
    assert info["config"]["subjects"] == ["tables.*.events"]
    assert info["config"]["num_replicas"] == 3
    assert info["config"]["max_age"] == 30 * 86_400 * 1_000_000_000
    assert info["config"]["allow_direct"] is True  # the recorder reads it back in batches (recorder/backfill.py)
    assert len(info["cluster"]["replicas"]) == 2 and info["cluster"]["leader"]  # a leader and two followers
    before = info["state"]["messages"]
    body = json.dumps({"seq": 1, "type": "round_started", "table": "t04"}).encode()
    await publish(floor, 0, "t04", "tables/t04/events", body)
    await publish(floor, 0, "t04", "tables/t04/state", b'{"seq": 1}', retain=True)  # not an event: not captured
    assert await _last_event(floor, "t04") == body
    after = await stream_info(floor.cluster.bind, floor.cluster.node(2).client, user=user, password=password)
    assert after["state"]["messages"] == before + 1


async def test_a_forged_event_never_reaches_the_stream(floor: Floor) -> None:
    genuine = json.dumps({"seq": 7, "table": "t02"}).encode()
    await publish(floor, 0, "t02", "tables/t02/events", genuine)
    await publish(floor, 1, "jane.doe", "tables/t02/events", b'{"seq": 8, "forged": true}')
    await publish(floor, 1, "t01", "tables/t02/events", b'{"seq": 8, "forged": true}')
    assert await _last_event(floor, "t02") == genuine


async def test_the_pits_users_cannot_use_the_nats_port(floor: Floor) -> None:
    import pytest

    from controller.floor.nats_client import NatsError

    for user in ("t01", "dashboard", "jane.doe", "sam"):
        with pytest.raises(NatsError, match="Authorization Violation"):
            async with NatsRequester(floor.cluster.bind, floor.cluster.node(0).client, user=user,
                                     password=floor.passwords[user]):
                pass
