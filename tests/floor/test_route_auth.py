"""A stranger's own nats-server routed to a floor written without ``--tls`` gets nothing of the floor.

The attack of issue 33: the cluster port of a plaintext floor took any server. A stranger's node (no
credential of the floor, the floor's cluster name and account name copied) routed to it, then read every
table's traffic and injected commands and ``state`` in any user's name. The floor's routes now carry the
cluster's own credentials (:mod:`controller.floor.nats_config`), so the stranger's route is refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.floor.cluster import find_nats_server
from controller.floor.subjects import mqtt_topic_subject
from controller.mqtt.ports import stable_port
from tests.floor.conftest import Floor
from tests.floor.helpers import publish, reading


@contextlib.contextmanager
def stranger_server(tmp_path: Path, route_to: int) -> Iterator[int]:
    """A nats-server of the stranger's own, in the floor's account and cluster name, routed to ``route_to``;
    yields its client port (user ``x``, password ``x``, account ``FLOOR``)."""
    client, cluster = stable_port(), stable_port()
    conf = tmp_path / "stranger.conf"
    conf.write_text("\n".join([
        'server_name: "stranger"',
        f'listen: "127.0.0.1:{client}"',
        'accounts { FLOOR { users: [{user: "x", password: "x"}] } }',
        f'cluster {{name: "floor", listen: "127.0.0.1:{cluster}", routes: ["nats-route://127.0.0.1:{route_to}"]}}',
        "",
    ]))
    log = (tmp_path / "stranger.log").open("wb")
    proc = subprocess.Popen([find_nats_server(), "-c", str(conf)], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 10
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", client), timeout=1):
                break
            assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "stranger.log").read_text()
            time.sleep(0.1)
        yield client
    finally:
        proc.terminate()
        proc.wait(10)
        log.close()


async def test_a_strangers_server_routed_to_a_plaintext_floor_reads_nothing_and_injects_nothing(
        floor: Floor, tmp_path: Path) -> None:
    import nats
    from nats.aio.msg import Msg

    assert floor.cluster.ca is None  # the floor of the shared fixture is written without --tls
    conf = (floor.cluster.dir / "n1" / "nats.conf").read_text()
    assert "authorization" in conf.split("cluster {", 1)[1].split("\n", 1)[0]
    log_before = len(floor.cluster.log(0))
    marker = f"stranger-{uuid.uuid4()}".encode()
    with stranger_server(tmp_path, floor.cluster.node(0).cluster) as port:
        stranger = await nats.connect(f"nats://x:x@127.0.0.1:{port}", connect_timeout=5)
        got: list[tuple[str, bytes]] = []

        async def take(msg: Msg) -> None:
            got.append((msg.subject, msg.data))

        await stranger.subscribe(">", cb=take)
        await stranger.flush()
        forged = [mqtt_topic_subject("tables/t01/cmd/pit/jane.doe/set_limits"),
                  mqtt_topic_subject("tables/t01/cmd/surveillance/sam/ack_alarm"),
                  mqtt_topic_subject("tables/t01/state"), mqtt_topic_subject("tables/t01/events")]
        try:
            async with reading(floor, 1, "sam", "tables/#") as floor_reader:
                for _ in range(12):  # six seconds: routes are tried at once and again every second
                    probe = f"probe-{uuid.uuid4()}".encode()
                    await publish(floor, 1, "t04", "tables/t04/events", probe)
                    for subject in forged:
                        await stranger.publish(subject, marker)
                    await stranger.flush()
                    await asyncio.sleep(0.5)
                    assert not [s for s, d in got if d == probe], "the stranger read the floor's traffic"
                    assert not any(p == marker for _, p, _ in floor_reader.messages), "the stranger injected"
        finally:
            await stranger.close()
    assert not [s for s, d in got if d != marker], "the stranger read the floor's traffic"
    refused = floor.cluster.log(0)[log_before:]
    assert "authentication error" in refused.lower() or "authorization violation" in refused.lower(), refused[-2000:]


def test_every_node_config_carries_the_route_credentials_with_only_a_hash_to_check_them(floor: Floor) -> None:
    import tomllib

    creds = tomllib.loads((floor.cluster.dir / "credentials.toml").read_text())
    route_password = creds["users"]["floor-route"]["password"]
    for node in floor.cluster.nodes:
        conf = (floor.cluster.dir / node.name / "nats.conf").read_text()
        cluster_line = next(line for line in conf.splitlines() if line.startswith("cluster {"))
        auth = cluster_line.split("authorization", 1)[1]
        assert '"$2' in auth.split("}", 1)[0]  # the node checks a route against a bcrypt hash
        # the routes it dials present the password itself (a route URL cannot carry a hash): mode 0600 file
        assert cluster_line.count(f"floor-route:{route_password}@") == len(floor.cluster.nodes) - 1


if __name__ == "__main__":  # pragma: no cover
    pytest.main([__file__])
