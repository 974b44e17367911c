"""A long run of one whole table at full speed: its resident memory per 1,000 rounds after warm-up, and what grew.

    .venv/bin/python benchmarks/memory.py [--warm-rounds 1000] [--rounds 10000] [--every 1000] [--carded 5]
                                          [--in-memory] [--trace N] [--seed 1] [--dir DIR]

The table of ``benchmarks/latency.py`` (:class:`controller.sim.demo.DemoTable`: simulated devices, the real
drivers, :class:`controller.service.table_service.TableService` with its analytics and shuffle-quality monitor,
the engine, the SQLite journal, :class:`controller.mqtt.publisher.MqttPublisher` on a local Mosquitto) with
``--carded`` rated players, played by the simulated crew at speed "max", all in this process.

``--warm-rounds`` rounds first (caches fill: the engine's EVs, SQLite's page cache, the allocator's arenas), then
``--rounds`` rounds in windows of ``--every``: the RSS (``VmRSS`` after ``gc.collect()``) after each, its growth
per window and per 1,000 rounds, the least-squares slope over the windows (KiB per 1,000 rounds), and the rate.
``--in-memory``: the devices on the demo's in-memory backend (the same drivers and bytes, no pty), lighter
on a loaded machine. ``--trace N``: with :mod:`tracemalloc` on (slower), the ``N`` allocation sites that grew
most over each window (a structure keyed by round, seq or player shows here first).

Target (issue #40): under 2 MiB growth per 1,000 rounds, flat after warm-up. Figures are printed beside their
target, never asserted; the machine's load is printed with them.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import shutil
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from controller.profiles import load_rules
from controller.sim.demo import DemoOptions, DemoTable

ROOT = Path(__file__).resolve().parent.parent
#: the issue's target, MiB per 1,000 rounds
TARGET_MIB_PER_1000 = 2.0


class InMemoryTable(DemoTable):
    """The demo's table on its in-memory device backend (as a pit of more than 20 tables runs)."""

    pty_tables_max = 0


def rss_mib() -> float:
    """Resident memory of this process in MiB, after a full collection."""
    gc.collect()
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of ``ys`` over ``xs``."""
    if len(xs) < 2:
        return 0.0
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / den if den else 0.0


async def play(table: DemoTable, rounds: int) -> float:
    """Play ``rounds`` more rounds; rounds per second."""
    crew = table.crew
    crew.rounds = table.core.table.rounds_settled + rounds
    t0 = time.monotonic()
    playing = asyncio.ensure_future(crew.play())
    await asyncio.wait({playing, table.service.failed}, return_when=asyncio.FIRST_COMPLETED)
    if table.service.failed.done():
        playing.cancel()
        table.service.failed.result()
    await playing
    return rounds / (time.monotonic() - t0)


def top_growth(before: tracemalloc.Snapshot, after: tracemalloc.Snapshot, n: int) -> list[str]:
    """The ``n`` allocation sites (the innermost frames of ours) that grew most from ``before`` to ``after``."""
    lines = []
    for stat in after.compare_to(before, "traceback")[:n]:
        frames = [f for f in stat.traceback if str(ROOT) in f.filename] or list(stat.traceback)
        where = " <- ".join(f"{Path(f.filename).relative_to(ROOT) if str(ROOT) in f.filename else f.filename}:"
                            f"{f.lineno}" for f in reversed(frames[-3:]))
        lines.append(f"      {stat.size_diff / 1024:+9.1f} KiB {stat.count_diff:+7d} blocks  {where}")
    return lines


async def run(args: argparse.Namespace) -> None:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from tests.mqtt_broker import Mosquitto

    work = Path(tempfile.mkdtemp(prefix="memory-bench-", dir=args.dir))
    broker = Mosquitto(work / "mosquitto")
    broker.start()
    table: DemoTable | None = None
    try:
        opts = DemoOptions(rules=load_rules(args.profile), rounds=None, seed=args.seed, speed="max",
                           broker=broker.url, state_dir=work / "journals", prefix="tables", quiet=True,
                           dashboard=False, carded=args.carded)
        assert opts.state_dir is not None
        opts.state_dir.mkdir(parents=True)
        kind = InMemoryTable if args.in_memory else DemoTable
        table = kind("t01", opts, opts.state_dir, broker.url, sys.stdout)
        table.service.recover()
        table.crew.restore()
        if table.sim.cards is not None:
            for player in table.carded:
                table.sim.cards.insert(player.spot, player.number)
        await table.sim.start()
        await table.service.start()
        await table.publisher.wait_connected(10)
        print(f"table t01 {args.profile} seed {args.seed}: {len(table.carded)} carded players rated, analytics and "
              f"shuffle-quality monitor on, devices {'in memory' if args.in_memory else 'on ptys'}, journal "
              f"synchronous={table.journal.synchronous}, Mosquitto {broker.url}")
        print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at start", flush=True)
        rss0 = rss_mib()
        rate = await play(table, args.warm_rounds)
        base = rss_mib()
        print(f"warm-up: RSS {rss0:.1f} MiB at start, {base:.1f} MiB after {args.warm_rounds} rounds "
              f"({rate:.1f} rounds/s)", flush=True)
        if args.trace:
            tracemalloc.start(8)
            gc.collect()
        snap = tracemalloc.take_snapshot() if args.trace else None
        xs: list[float] = [0.0]
        ys: list[float] = [base]
        done = 0
        t0 = time.monotonic()
        while done < args.rounds:
            n = min(args.every, args.rounds - done)
            rate = await play(table, n)
            done += n
            rss = rss_mib()
            xs.append(done / 1000)
            ys.append(rss)
            print(f"  +{done:6d} rounds: RSS {rss:7.1f} MiB ({rss - ys[-2]:+6.2f} in {n} rounds, "
                  f"{rate:.1f} rounds/s, load {os.getloadavg()[0]:.1f})", flush=True)
            if snap is not None:
                gc.collect()
                after = tracemalloc.take_snapshot()
                print("\n".join(top_growth(snap, after, args.trace)), flush=True)
                snap = after
        rate = done / (time.monotonic() - t0)
        growth = ys[-1] - base
        per_1000 = growth * 1000 / done if done else 0.0
        fit = slope(xs, ys)
        print(f"\nRSS after warm-up {base:.1f} MiB, after {done} more rounds {ys[-1]:.1f} MiB: "
              f"growth {growth:+.2f} MiB ({per_1000:+.3f} MiB per 1,000 rounds; least-squares slope "
              f"{fit * 1024:+.0f} KiB per 1,000 rounds), "
              f"{rate:.1f} rounds/s")
        print(f"target under {TARGET_MIB_PER_1000:g} MiB per 1,000 rounds: "
              f"{'ok' if max(per_1000, fit) < TARGET_MIB_PER_1000 else 'MISSED'}; rounds settled "
              f"{table.core.table.rounds_settled}, load average {os.getloadavg()[0]:.2f} at end", flush=True)
    finally:
        if table is not None:
            await table.close()
        broker.close()
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--warm-rounds", type=int, default=1000, help="rounds before the first reading")
    ap.add_argument("--rounds", type=int, default=10000, help="rounds measured after the warm-up")
    ap.add_argument("--every", type=int, default=1000, help="rounds per reading")
    ap.add_argument("--carded", type=int, default=5, help="carded players, rated (0: none)")
    ap.add_argument("--profile", default="house-h17")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--in-memory", action="store_true", help="the devices on the in-memory backend, not ptys")
    ap.add_argument("--trace", type=int, default=0, metavar="N", help="tracemalloc: the N sites that grew most")
    ap.add_argument("--dir", type=Path, default=None, help="where the journal and broker live (default: a temp dir)")
    args = ap.parse_args()
    if args.warm_rounds < 0 or args.rounds < 1 or args.every < 1 or args.carded < 0 or args.trace < 0:
        ap.error("rounds, every and carded must be positive numbers")
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
