"""The soak's casino floor: a three-node NATS cluster whose nodes the schedule kills (``tablectl soak --cluster 3``).

The cluster is written and run in ``<state-dir>/cluster`` as ``tablectl demo --cluster 3`` does
(:mod:`controller.floor.cluster`), with two people of the soak's own besides the tables: ``soak`` (role
``pit``: the supervisor's commands, and the subscriber that checks every message) and
``soak-surveillance`` (the integrity alarms only surveillance may clear). The pit runs on it with
``tablectl demo --cluster N --cluster-dir DIR``: the demo connects, the soak owns the nodes.

:meth:`SoakFloor.kill` is a machine lost (SIGKILL); one node lost leaves a quorum (tables move to another
node), two lost leave none (no MQTT client connects: tables play on their journals and publish everything
once a second node is back). :meth:`SoakFloor.revive` starts every node that is down and returns once each
serves MQTT again.
"""

from __future__ import annotations

import asyncio
import tomllib
from collections.abc import Sequence
from pathlib import Path

from controller.floor.cluster import NatsCluster, loopback_ports
from controller.floor.nats_config import write_nats_cluster

__all__ = ["SOAK_PEOPLE", "SoakFloor", "soak_user"]

#: the soak's people on the cluster, per role (a NATS user has one role: one name per role)
SOAK_PEOPLE: dict[str, list[str]] = {"pit": ["soak"], "surveillance": ["soak-surveillance"]}


def soak_user(role: str) -> str:
    """The name the soak's commands of ``role`` are sent as (``cmd/<role>/<user>/<verb>``)."""
    return "soak" if role == "pit" else f"soak-{role}"


class SoakFloor:
    """The soak's cluster: addresses of its nodes, a login per role, nodes killed and revived."""

    restartable = False  # never stopped whole (no sessions to keep across it): its nodes are lost instead

    def __init__(self, state_dir: Path, table_ids: Sequence[str], *, prefix: str, nodes: int = 3) -> None:
        self.dir = state_dir / "cluster"
        if not (self.dir / "cluster.toml").exists():
            write_nats_cluster(self.dir, table_ids, prefix=prefix, people=SOAK_PEOPLE, nodes=nodes,
                               ports=loopback_ports(nodes), force=True)
        self.cluster = NatsCluster(self.dir)
        creds = tomllib.loads((self.dir / "credentials.toml").read_text(encoding="utf-8"))
        self.passwords = {str(u): str(v["password"]) for u, v in creds["users"].items() if isinstance(v, dict)}
        self.kind = f"a {len(self.cluster.nodes)}-node nats cluster"
        self.addresses = [(self.cluster.bind, n.mqtt) for n in self.cluster.nodes]
        self.url = self.cluster.mqtt_urls[0]
        self.down: set[int] = set()

    def login(self, role: str) -> tuple[str, str]:
        user = soak_user(role)
        return user, self.passwords[user]

    async def start(self) -> None:
        await asyncio.to_thread(self.cluster.start)
        await self.cluster.ensure_stream()  # the floor's log of every table's events (TABLES)

    async def stop(self) -> None:
        await asyncio.to_thread(self.cluster.stop)

    async def kill(self, nodes: Sequence[int]) -> None:
        """SIGKILL these nodes (0 = ``n1``): machines lost mid-shift."""
        for k in nodes:
            await asyncio.to_thread(self.cluster.kill, k)
            self.down.add(k)

    async def revive(self, timeout: float = 120.0) -> None:
        """Start every node that is down; return once each serves MQTT (the quorum is back)."""
        await asyncio.to_thread(self.cluster.start, timeout)
        self.down.clear()

    def log_tail(self) -> str:
        return "\n".join(f"{n.name}: {self.cluster.log(n.name)[-500:]}" for n in self.cluster.nodes)
