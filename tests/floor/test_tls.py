"""A floor's cluster with ``--tls``: every listener and route speaks TLS with the pit's own CA; a table and a
screen verify the nodes against it; a client in clear gets nowhere."""

from __future__ import annotations

import asyncio
import ssl
import stat
from pathlib import Path

import aiomqtt
import pytest

from controller.floor.cluster import NatsCluster, loopback_ports
from controller.floor.nats_config import write_nats_cluster
from controller.journal import Journal
from controller.mqtt.options import BrokerOptions
from controller.mqtt.publisher import MqttPublisher


async def test_a_tls_cluster_serves_tables_and_screens_that_verify_it_and_refuses_clear_text(tmp_path: Path) -> None:
    files = write_nats_cluster(tmp_path / "floor", ["t01"], ports=loopback_ports(3), tls=True)
    d = files.dir
    for key in ("ca.key", "server.key", "route.key", "credentials.toml"):
        assert stat.S_IMODE((d / key).stat().st_mode) == 0o600
    assert all(u.startswith("mqtts://") for u in files.mqtt_urls)
    assert all(u.startswith("wss://") for u in files.ws_urls)
    cluster = NatsCluster(d)
    await asyncio.to_thread(cluster.start)
    try:
        info = await cluster.ensure_stream()  # JetStream's API over the NATS port, in TLS too
        assert info["config"]["num_replicas"] == 3
        ctx = ssl.create_default_context(cafile=str(files.ca))
        journal = Journal(tmp_path / "t01.journal")
        pub = MqttPublisher(journal, table_id="t01", broker=BrokerOptions(
            list(files.mqtt_urls), username="t01", password=files.passwords["t01"], tls_ca=files.ca))
        try:
            async with pub:
                await pub.wait_connected(30)
                pub.publish_state(0, {"seq": 0, "phase": "closed", "tls": True})
                await pub.wait_drained(30)
        finally:
            journal.close()
        node3 = cluster.node(2)
        screen_client = aiomqtt.Client(cluster.bind, node3.ws, username="dashboard",
                                       password=files.passwords["dashboard"], transport="websockets",
                                       websocket_path="/mqtt", tls_context=ctx, timeout=10)
        async with screen_client as screen:
            await screen.subscribe("tables/t01/state", qos=1)
            async with asyncio.timeout(20):
                async for m in screen.messages:
                    assert b'"tls":true' in bytes(m.payload)  # type: ignore[arg-type]
                    break
        with pytest.raises(aiomqtt.MqttError):  # MQTT in clear on a TLS listener
            async with aiomqtt.Client(cluster.bind, cluster.node(0).mqtt, username="dashboard",
                                      password=files.passwords["dashboard"], timeout=5):
                pass
        with pytest.raises(aiomqtt.MqttError):  # TLS, but not verified against the pit's CA
            async with aiomqtt.Client(cluster.bind, cluster.node(0).mqtt, username="dashboard",
                                      password=files.passwords["dashboard"], tls_context=ssl.create_default_context(),
                                      timeout=5):
                pass
    finally:
        await asyncio.to_thread(cluster.stop)
