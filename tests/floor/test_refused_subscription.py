"""A table whose subscription to its commands a node refuses subscribes again: it is never left connected and deaf.

Found by ``tablectl soak --cluster 3`` (seed 138, a loaded machine): after a node loss the cluster answered a
table's subscription with SUBACK 0x80 while it elected leaders, the table stayed connected without it, and a
command got no result ("t02 cmd/set_limits: no result in 20 s"). Shown here on a cluster of its own whose
permissions refuse the subscription first (the same SUBACK 0x80), then grant it: the auth callout services
restarted with the table's permissions granted again, which its next connection gets.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import aiomqtt
import pytest

from controller.contract.results import CommandResult
from controller.contract.topics import CommandTopic
from controller.floor.cluster import NatsCluster, NatsNotInstalled, find_nats_server, loopback_ports
from controller.floor.nats_config import write_nats_cluster
from controller.journal import Journal
from controller.mqtt.options import BrokerOptions
from controller.mqtt.publisher import MqttPublisher
from controller.service.commands import accepted, parse_command

ALLOW = {"allow": ["tables.t01", "tables.t01.>", "tables.recorder.t01"]}
DENY = {**ALLOW, "deny": ["tables.t01.cmd.>"]}


async def test_a_refused_command_subscription_is_asked_again_not_left_deaf(tmp_path: Path) -> None:
    try:
        find_nats_server()
    except NatsNotInstalled as exc:
        pytest.skip(str(exc))
    files = write_nats_cluster(tmp_path / "node", ["t01"], people={"pit": ["jane.doe"]}, ports=loopback_ports(3))
    users_json = tmp_path / "node" / "auth" / "users.json"
    text = users_json.read_text()
    users = json.loads(text)
    assert users["users"]["t01"]["permissions"]["subscribe"] == ALLOW
    users["users"]["t01"]["permissions"]["subscribe"] = DENY
    users_json.write_text(json.dumps(users))
    node = NatsCluster(tmp_path / "node")
    node.start()
    seen: list[str] = []

    async def handle(command: CommandTopic, payload: bytes) -> CommandResult:
        cmd = parse_command(command.verb, payload, user=command.user)
        assert not isinstance(cmd, CommandResult)
        seen.append(command.verb)
        return accepted(cmd, seq=1)

    journal = Journal(tmp_path / "t.journal")
    pw = files.passwords
    try:
        async with MqttPublisher(journal, table_id="t01", on_command=handle,
                                 broker=BrokerOptions(node.mqtt_urls, username="t01", password=pw["t01"],
                                                      backoff_max=0.5)) as pub:
            await pub.wait_connected(30)
            await asyncio.sleep(1.0)  # refused meanwhile (SUBACK 0x80)
            users_json.write_text(text)  # the permissions granted again, the auth services restarted
            for n in range(3):
                node.kill_auth(n)
            node.start()
            host, port = node.bind, node.node(0).mqtt
            async with aiomqtt.Client(host, port, username="jane.doe", password=pw["jane.doe"]) as pit:
                async with asyncio.timeout(30):
                    while not seen:  # a person sends it again until the table answers
                        await pit.publish("tables/t01/cmd/pit/jane.doe/open", b'{"id": "x"}', qos=1)
                        await asyncio.sleep(0.5)
        assert seen[0] == "open"
    finally:
        journal.close()
        node.stop()
