"""How fast the recorder catches up after being down: events per second from its session into the database.

    .venv/bin/python benchmarks/recorder_catchup.py [--tables 20] [--events 10000] [--db sqlite|postgres|both]

One Mosquitto on loopback (``max_queued_messages`` as ``tablectl broker-config`` writes it). The recorder
connects once (its persistent session exists) and stops; ``--events`` events of about 600 bytes (a card
event's size), spread over ``--tables`` tables in round-robin, are published at QoS 1 while it is down; then
the recorder starts again and the time until the database holds every table's last ``seq`` is measured.
``--db postgres`` starts Debian's PostgreSQL in a temporary directory (tests/postgres.py), fsync off as in the
tests: the figure is the recorder's and the protocol's cost, not a disk's. Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import tempfile
import time
from pathlib import Path

import aiomqtt

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from controller.mqtt.broker_config import MAX_QUEUED_MESSAGES
from controller.mqtt.mosquitto import Mosquitto
from controller.mqtt.options import BrokerOptions
from controller.recorder.service import Recorder, RecorderOptions, start_recorder


def _body(seq: int, table: str) -> bytes:
    return json.dumps({"seq": seq, "ts": 1795334400.0 + seq, "type": "card", "table_id": table, "round": seq // 15,
                       "spot": 3, "card": "TD", "reader": {"counter": seq, "device": "shoe"},
                       "padding": "x" * 420}).encode()


async def _publish(broker: Mosquitto, tables: int, events: int) -> None:
    async with aiomqtt.Client(broker.host, broker.port, identifier="bench-tables", max_inflight_messages=0,
                              timeout=60) as c:
        per_table = events // tables
        for seq in range(1, per_table + 1):
            await asyncio.gather(*(c.publish(f"tables/t{t:03d}/events", _body(seq, f"t{t:03d}"), qos=1)
                                   for t in range(1, tables + 1)))


async def run_once(broker: Mosquitto, db: str, tables: int, events: int) -> tuple[float, int]:
    options = RecorderOptions(BrokerOptions([broker.url], username="bench-recorder"), db=db)
    recorder, task = await start_recorder(options)  # its session exists from now on
    recorder.stop()
    await task
    await _publish(broker, tables, events)
    per_table = events // tables
    lasts = {f"t{t:03d}": per_table for t in range(1, tables + 1)}
    t0 = time.perf_counter()
    recorder = Recorder(options)
    task = asyncio.create_task(recorder.run())
    while not await recorder.wait_recorded(lasts, timeout=0):  # False until the database is open and holds all
        if task.done():
            task.result()
        await asyncio.sleep(0.05)
    elapsed = time.perf_counter() - t0
    recorder.stop()
    await task
    return elapsed, recorder.tally.stored


async def main() -> None:
    logging.getLogger("mqtt").setLevel(logging.ERROR)  # aiomqtt's note of the publishes pipelined on purpose
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=20)
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--db", choices=("sqlite", "postgres", "both"), default="both")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="recorder-catchup-") as tmp:
        dbs: list[tuple[str, str]] = []
        server = None
        if args.db in ("sqlite", "both"):
            dbs.append(("SQLite (WAL, synchronous FULL)", str(Path(tmp) / "recorder.db")))
        if args.db in ("postgres", "both"):
            from tests.postgres import PostgresServer

            server = PostgresServer()
            dbs.append(("PostgreSQL 15 (loopback, fsync off)", server.fresh_database()))
        try:
            for name, db in dbs:
                broker = Mosquitto(Path(tmp) / f"mosquitto-{len(name)}",
                                   extra_config=f"max_queued_messages {MAX_QUEUED_MESSAGES}")
                broker.start()
                try:
                    elapsed, stored = await run_once(broker, db, args.tables, args.events)
                finally:
                    broker.close()
                print(f"{name}: {stored} events of {args.tables} tables caught up in {elapsed:.1f} s: "
                      f"{stored / elapsed:,.0f} events/s", flush=True)
        finally:
            if server is not None:
                server.close()


if __name__ == "__main__":
    asyncio.run(main())
