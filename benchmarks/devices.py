"""Device-layer speed: frame-to-event latency and cards per second through a real pty.

Latency: from the moment the simulated shoe writes a card frame to the pty
until the typed ``CardRead`` event comes out of ``ShoeDriver.events()`` (one card
at a time, both ends in one asyncio loop, as in the demo). Throughput: cards
per second one link sustains with stop-and-wait ACKs, clean and with 0.1 %
corrupted bytes; ``--cli`` also times ``tablectl simulate shoe --auto N``
read by ``tablectl monitor shoe --json`` as two processes.

    .venv/bin/python benchmarks/devices.py [--samples 5000] [--cards 20000] [--cli]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from drivers import CardRead, ShoeConfig, ShoeDriver
from simulators import SimShoe


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def latency(samples: int, link: str) -> list[float]:
    out: list[float] = []
    async with SimShoe(seed=1, link=link) as sim, ShoeDriver(ShoeConfig(port=sim.port)) as shoe:
        await shoe.wait_ready(2)
        events = shoe.events()
        for i in range(samples + 200):
            if sim.cut_card_out or sim.remaining == 0:
                sim.reshuffle()
            await sim.wait_space()
            t0 = time.perf_counter()
            sim.deal()  # encodes and writes the frame to the pty
            while not isinstance(await anext(events), CardRead):
                pass
            if i >= 200:  # warm-up
                out.append(time.perf_counter() - t0)
    return out


async def throughput(cards: int, link: str, corrupt: float) -> float:
    async with SimShoe(seed=2, link=link, corrupt=corrupt, fault_seed=9) as sim, \
            ShoeDriver(ShoeConfig(port=sim.port)) as shoe:
        await shoe.wait_ready(2)
        t0 = time.perf_counter()
        dealer = asyncio.create_task(sim.auto(cards))
        n = 0
        async for event in shoe.events():
            if isinstance(event, CardRead):
                n += 1
                if n == cards:
                    break
        elapsed = time.perf_counter() - t0
        await dealer
    return cards / elapsed


def cli_throughput(cards: int, link: str, corrupt: float) -> float:
    base = [sys.executable, "-c", "import sys; from controller.cli import main; sys.exit(main())"]
    sim = subprocess.Popen(
        [*base, "simulate", "shoe", "--auto", str(cards), "--seed", "3", "--link", link, "--corrupt", str(corrupt)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    try:
        assert sim.stdout is not None
        sim.stdout.readline()
        t0 = time.perf_counter()
        mon = subprocess.Popen([*base, "monitor", "shoe", "--port", link, "--json"], stdout=subprocess.PIPE, text=True)
        assert mon.stdout is not None
        n = 0
        for line in mon.stdout:
            if json.loads(line)["type"] == "card":
                n += 1
                if n == cards:
                    break
        elapsed = time.perf_counter() - t0
        mon.terminate()
        mon.wait()
    finally:
        sim.terminate()
        sim.wait()
    return cards / elapsed


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=5000)
    parser.add_argument("--cards", type=int, default=20000)
    parser.add_argument("--cli", action="store_true", help="also time the tablectl simulate | monitor pair")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as d:
        lat = await latency(args.samples, os.path.join(d, "lat"))
        ms = [x * 1000 for x in lat]
        print(f"frame -> event latency over a pty ({len(ms)} cards): p50 {pct(ms, 0.5):.3f} ms, "
              f"p99 {pct(ms, 0.99):.3f} ms, mean {statistics.fmean(ms):.3f} ms, max {max(ms):.3f} ms")
        clean = await throughput(args.cards, os.path.join(d, "clean"), 0.0)
        print(f"one link, clean: {clean:,.0f} cards/s ({args.cards} cards)")
        noisy = await throughput(args.cards, os.path.join(d, "noisy"), 0.001)
        print(f"one link, 0.1% bytes corrupted: {noisy:,.0f} cards/s ({args.cards} cards)")
        if args.cli:
            rate = cli_throughput(args.cards, os.path.join(d, "cli"), 0.0)
            print(f"tablectl simulate --auto | tablectl monitor --json: {rate:,.0f} cards/s ({args.cards} cards)")


if __name__ == "__main__":
    asyncio.run(main())
