"""A real three-node NATS cluster for the floor's tests, shared by the whole session (it takes seconds to form).

``nats_floor`` is a :class:`Floor`: the :class:`controller.floor.cluster.NatsCluster` on free loopback ports,
its configuration written by :func:`controller.floor.nats_config.write_nats_cluster` for tables ``t01`` to
``t04``, pit users ``jane.doe`` and ``bob``, surveillance ``sam`` and technician ``tom``, and each user's
password. A test that kills a node brings it back before it ends (``floor.revive()``), so the next test
finds three nodes serving.
"""

from __future__ import annotations

import asyncio
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from controller.floor.cluster import NatsCluster, NatsNotInstalled, find_nats_server, loopback_ports
from controller.floor.nats_config import write_nats_cluster

TABLES = ("t01", "t02", "t03", "t04")
PEOPLE = {"pit": ["jane.doe", "bob"], "surveillance": ["sam"], "technician": ["tom"]}


@dataclass
class Floor:
    cluster: NatsCluster
    passwords: dict[str, str]

    def mqtt(self, node: int) -> tuple[str, int]:
        return self.cluster.bind, self.cluster.node(node).mqtt

    def ws(self, node: int) -> tuple[str, int]:
        return self.cluster.bind, self.cluster.node(node).ws

    def url(self, node: int, user: str) -> str:
        host, port = self.mqtt(node)
        return f"mqtt://{user}:{self.passwords[user]}@{host}:{port}"

    def revive(self) -> None:
        """Start every node that is down; return once all serve MQTT."""
        self.cluster.start()


@pytest.fixture(scope="session")
def nats_floor(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Floor]:
    try:
        find_nats_server()
    except NatsNotInstalled as exc:
        pytest.skip(str(exc))
    d = tmp_path_factory.mktemp("floor")
    files = write_nats_cluster(d, TABLES, people=PEOPLE, ports=loopback_ports(3))
    cluster = NatsCluster(d)
    cluster.start()
    try:
        asyncio.run(cluster.ensure_stream())
        yield Floor(cluster, dict(files.passwords))
    finally:
        cluster.stop()


@pytest.fixture
def floor(nats_floor: Floor) -> Iterator[Floor]:
    """The session's cluster, every node serving again after the test."""
    yield nats_floor
    nats_floor.revive()


def credentials(floor: Floor) -> dict[str, object]:
    return tomllib.loads((floor.cluster.dir / "credentials.toml").read_text())


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which reads the groups into the node ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test on the shared cluster runs in one xdist worker (``--dist loadgroup``): a session fixture is
    per worker, and one three-node cluster per worker would crowd a 2-core machine with nats-servers."""
    for item in items:
        if "nats_floor" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("nats-floor"))
