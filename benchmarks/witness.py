"""What the journal's witnesses cost a table's start (docs/journal.md, "Witnesses").

    .venv/bin/python benchmarks/witness.py [--inputs N]

Prints the broker witness's time against a local Mosquitto holding a retained ``state`` (one table, and a
pit of 200 tables in one connection), against a port where nothing listens, and against a host that accepts
and never answers (bounded by ``WITNESS_TIMEOUT_S``); then :func:`controller.journal.admission.admit` (anchor
read, every witness judged, anchor written) on a journal of N inputs. Needs ``mosquitto`` on the PATH.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import aiomqtt

from controller.journal.admission import admit, open_verified
from controller.mqtt.ports import free_port
from controller.mqtt.witness import retained_states


async def _broker() -> None:
    port = free_port()
    conf = Path(tempfile.mkdtemp()) / "mosquitto.conf"
    conf.write_text(f"listener {port} 127.0.0.1\nallow_anonymous true\n")
    proc = subprocess.Popen(["mosquitto", "-c", str(conf)], stderr=subprocess.DEVNULL)
    try:
        await asyncio.sleep(0.5)
        async with aiomqtt.Client("127.0.0.1", port) as client:
            await client.publish("tables/t01/state", b'{"seq": 42, "journal_id": "j"}', qos=1, retain=True)
        for label, tables in (("1 table", ["t01"]), ("200 tables", [f"t{i:03d}" for i in range(200)])):
            times = []
            for _ in range(20):
                started = time.perf_counter()
                await retained_states(f"mqtt://127.0.0.1:{port}", prefix="tables", table_ids=tables)
                times.append(time.perf_counter() - started)
            print(f"broker witness, Mosquitto answering, {label}: median {statistics.median(times) * 1000:.1f} ms, "
                  f"max {max(times) * 1000:.1f} ms")
    finally:
        proc.terminate()
        proc.wait()
    started = time.perf_counter()
    await retained_states(f"mqtt://127.0.0.1:{free_port()}", prefix="tables", table_ids=["t01"])
    print(f"broker witness, nothing listening: {(time.perf_counter() - started) * 1000:.1f} ms")
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(5)
        started = time.perf_counter()
        await retained_states(f"mqtt://127.0.0.1:{silent.getsockname()[1]}", prefix="tables", table_ids=["t01"])
        print(f"broker witness, a host that never answers: {time.perf_counter() - started:.2f} s")


def _admit(inputs: int) -> None:
    work = Path(tempfile.mkdtemp())
    path, key, anchors = work / "state" / "t01.journal", work / "journal.key", work / "anchors"
    journal, anchor = open_verified(path, table_id="t01", key_file=key, anchor_dir=anchors, new=True)
    admit(journal, anchor, new=True)
    for i in range(inputs):
        journal.commit_event({"type": "tick", "now": float(i)}, [{"type": "tick", "i": i}])
    journal.close()
    times = []
    for _ in range(10):
        journal, anchor = open_verified(path, table_id="t01", key_file=key, anchor_dir=anchors)
        started = time.perf_counter()
        admit(journal, anchor)
        times.append(time.perf_counter() - started)
        journal.close()
    print(f"admit() on a journal of {inputs} inputs: median {statistics.median(times) * 1000:.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=int, default=20_000)
    args = parser.parse_args()
    asyncio.run(_broker())
    _admit(args.inputs)


if __name__ == "__main__":
    main()
