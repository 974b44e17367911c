"""The cost of the floor's three-node NATS cluster against one Mosquitto on the same work, in one run.

    .venv/bin/python benchmarks/floor_cluster.py [--messages 1000] [--size 1500]

Both brokers run on this machine on loopback: a Mosquitto (``controller.mqtt.mosquitto``, no ACL,
``max_queued_messages 100000`` as ``tablectl broker-config`` writes) and the
floor's cluster (``controller.floor``: three nats-servers, JetStream, the roles as permissions, the
``TABLES`` stream capturing the events). One process, one event loop, aiomqtt clients, QoS 1, payloads of
``--size`` bytes (a ``state`` is about that):

``--messages`` events published one at a time on ``tables/t01/events``, each waited for at a subscriber
before the next; p50 and p99 of publish -> receive (``time.perf_counter``). (A pipelined burst through
aiomqtt measured the client here, about 1,100 a second on either broker, not the brokers: left out.)

For the cluster the publisher is on node 1 (as table ``t01``) and the subscriber on node 1 and on node 3
(as ``sam``, surveillance). Figures are printed, never asserted; the machine's load shows in them.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

import aiomqtt

from controller.floor.cluster import NatsCluster, loopback_ports
from controller.floor.nats_config import write_nats_cluster
from controller.mqtt.mosquitto import Mosquitto

Login = tuple[str | None, str | None]


def _client(port: int, login: Login, ident: str) -> aiomqtt.Client:
    return aiomqtt.Client("127.0.0.1", port, username=login[0], password=login[1], identifier=ident, timeout=30,
                          max_inflight_messages=0)


async def _case(pub_port: int, pub_login: Login, sub_port: int, sub_login: Login, *, messages: int,
                size: int) -> tuple[float, float]:
    """(p50 ms, p99 ms) for one publisher/subscriber pair."""
    topic = "tables/t01/events"
    got: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()
    pad = b"x" * max(0, size - 24)
    async with _client(sub_port, sub_login, f"bench-sub-{os.getpid()}") as sub, \
            _client(pub_port, pub_login, f"bench-pub-{os.getpid()}") as pub:
        await sub.subscribe(topic, qos=1)

        async def pump() -> None:
            async for m in sub.messages:
                got.put_nowait((time.perf_counter(), bytes(m.payload) if isinstance(m.payload, bytes) else b""))

        task = asyncio.create_task(pump())
        try:
            await pub.publish(topic, b"warm" + pad, qos=1)
            await asyncio.wait_for(got.get(), 30)
            lat: list[float] = []
            for i in range(messages):
                body = f"{i:020d}".encode() + pad
                t0 = time.perf_counter()
                await pub.publish(topic, body, qos=1)
                while True:
                    t1, p = await asyncio.wait_for(got.get(), 30)
                    if p == body:
                        break
                lat.append((t1 - t0) * 1000)
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
    lat.sort()
    return statistics.median(lat), lat[int(0.99 * (len(lat) - 1))]


def _line(name: str, fig: tuple[float, float]) -> str:
    return f"{name:<34} p50 {fig[0]:7.3f} ms   p99 {fig[1]:7.3f} ms"


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="floor-bench-") as tmp:
        d = Path(tmp)
        mosq = Mosquitto(d / "mosquitto", extra_config="max_queued_messages 100000")  # as broker-config writes
        mosq.start()
        files = write_nats_cluster(d / "floor", ["t01"], people={"surveillance": ["sam"]}, ports=loopback_ports(3))
        cluster = NatsCluster(d / "floor")
        await asyncio.to_thread(cluster.start)
        try:
            await cluster.ensure_stream()
            pw = files.passwords
            t01: Login = ("t01", pw["t01"])
            sam: Login = ("sam", pw["sam"])
            kw = {"messages": args.messages, "size": args.size}
            m = await _case(mosq.port, (None, None), mosq.port, (None, None), **kw)
            same = await _case(cluster.node(0).mqtt, t01, cluster.node(0).mqtt, sam, **kw)
            cross = await _case(cluster.node(0).mqtt, t01, cluster.node(2).mqtt, sam, **kw)
        finally:
            await asyncio.to_thread(cluster.stop)
            mosq.close()
    print(f"QoS 1, {args.size}-byte payloads, {args.messages} one at a time; load {os.getloadavg()[0]:.2f}")
    print(_line("Mosquitto (one broker)", m))
    print(_line("NATS cluster, same node", same))
    print(_line("NATS cluster, node 1 -> node 3", cross))
    print(f"cluster / Mosquitto: p50 x{same[0] / m[0]:.1f} (same node), x{cross[0] / m[0]:.1f} (across nodes); "
          f"p99 x{same[1] / m[1]:.1f}, x{cross[1] / m[1]:.1f}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=1000)
    ap.add_argument("--size", type=int, default=1500)
    asyncio.run(main(ap.parse_args()))
