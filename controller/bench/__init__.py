"""The bench runner: many rounds on the real engine, in one process or spread over workers.

Each worker owns a :class:`controller.strategy.player.BenchTable` seeded with its own stream
(``random.Random("tablectl-bench:<seed>:<worker>")``, Python's SHA-512 string seeding), plays
in chunks and sends each chunk's :class:`BenchStats` back on a queue, so the parent always
holds everything finished so far. Ctrl-C (SIGINT reaches the whole process group) is ignored by
the workers; the parent sets a stop flag, the workers finish their current chunk and the parent
reports what it has. With one worker everything runs in-process and stops within the round.
"""

from __future__ import annotations

import multiprocessing as mp
import random
import signal
import time
from collections.abc import Callable
from queue import Empty
from typing import Any

from controller.game.rules import Rules
from controller.strategy.player import BenchStats, BenchTable, bench_wager

#: rounds a worker plays between reports (and between looks at the stop flag)
CHUNK = 5000

Progress = Callable[[int], None]


def stream(seed: int, worker: int) -> random.Random:
    """The independent random stream of ``worker`` in a run seeded with ``seed``."""
    return random.Random(f"tablectl-bench:{seed}:{worker}")


def split_rounds(rounds: int, workers: int) -> list[int]:
    """``rounds`` shared out as evenly as possible over ``workers``."""
    base, extra = divmod(rounds, workers)
    return [base + (1 if w < extra else 0) for w in range(workers)]


def run_inline(
    rules: Rules, rounds: int, seed: int, spots: int, progress: Progress | None = None
) -> tuple[BenchStats, bool]:
    """Play in this process; returns the stats and whether the run was interrupted (Ctrl-C)."""
    table = BenchTable(rules, stream(seed, 0), spots=spots)
    stats = BenchStats(unit=table.unit, spots=spots)
    left = rounds
    start = time.perf_counter()
    interrupted = False
    try:
        while left > 0:
            n = min(CHUNK, left)
            before = stats.rounds
            table.play(n, stats)
            left -= n
            if progress is not None:
                progress(stats.rounds - before)
    except KeyboardInterrupt:
        interrupted = True
    stats.elapsed = time.perf_counter() - start
    return stats, interrupted


def _worker(rules: Rules, rounds: int, seed: int, worker: int, spots: int, queue: Any, stop: Any) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    table = BenchTable(rules, stream(seed, worker), spots=spots)
    left = rounds
    try:
        while left > 0 and not stop.is_set():
            n = min(CHUNK, left)
            chunk = BenchStats(unit=table.unit, spots=spots)
            table.play(n, chunk)
            left -= n
            queue.put(("chunk", worker, chunk))
    finally:
        queue.put(("done", worker, None))


def run_parallel(
    rules: Rules, rounds: int, seed: int, spots: int, workers: int, progress: Progress | None = None
) -> tuple[BenchStats, bool]:
    """Play on ``workers`` processes; returns the merged stats and whether Ctrl-C stopped the run."""
    ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context()
    queue = ctx.Queue()
    stop = ctx.Event()
    procs = [
        ctx.Process(target=_worker, args=(rules, n, seed, w, spots, queue, stop), daemon=True)
        for w, n in enumerate(split_rounds(rounds, workers))
        if n > 0
    ]
    stats = BenchStats(unit=bench_wager(rules), spots=spots)
    start = time.perf_counter()
    for p in procs:
        p.start()
    running = len(procs)
    interrupted = False
    while running:
        try:
            kind, _worker_no, chunk = queue.get(timeout=0.5)
        except Empty:
            if not any(p.is_alive() for p in procs):
                break
            continue
        except KeyboardInterrupt:
            interrupted = True
            stop.set()
            continue
        if kind == "done":
            running -= 1
        else:
            stats.merge(chunk)
            if progress is not None:
                progress(chunk.rounds)
    for p in procs:
        p.join(timeout=5)
    stats.elapsed = time.perf_counter() - start
    return stats, interrupted


def run(
    rules: Rules, rounds: int, *, seed: int = 1, spots: int = 1, workers: int = 1, progress: Progress | None = None
) -> tuple[BenchStats, bool]:
    """Play ``rounds`` rounds of ``rules`` with basic strategy on the real engine."""
    if workers <= 1:
        return run_inline(rules, rounds, seed, spots, progress)
    return run_parallel(rules, rounds, seed, spots, workers, progress)
