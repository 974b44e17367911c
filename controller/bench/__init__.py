"""The bench runner: many rounds on the real engine, in one process or spread over workers.

A run of N rounds is cut into blocks of :data:`BLOCK` rounds (the last one shorter). Block ``i``
is played on a fresh :class:`controller.strategy.player.BenchTable` seeded with its own stream
(``random.Random("tablectl-bench:<seed>:<i>")``, Python's SHA-512 string seeding) and its totals
are added up in block order, so the figures depend only on the seed and the number of rounds: the
same numbers whatever the number of workers and whichever worker played which block.

Workers take the next block from a shared counter as soon as they are free and send each block's
:class:`BenchStats` back on a queue, so the parent always holds everything finished so far. A
static share of the rounds would end the run only when the slowest worker ends, and the cores of
this kind of machine do not run at the same speed for long (other jobs, a busy host): the other
core would sit idle through the difference. The basic strategy is computed once, before the clock
starts, and handed to the workers (forked, they share it; spawned, it is pickled once each).

Ctrl-C (SIGINT reaches the whole process group) is ignored by the workers; the parent moves the
counter past the last block, the workers finish the block they are playing and the parent reports
every finished block. With one worker everything runs in-process and stops within the round.
"""

from __future__ import annotations

import multiprocessing as mp
import random
import signal
import threading
import time
from collections.abc import Callable
from queue import Empty
from types import FrameType
from typing import Any

from controller.game.rules import Rules
from controller.strategy.chart import BasicStrategy, basic_strategy
from controller.strategy.player import BenchStats, BenchTable, bench_wager

#: rounds of one block: one stream, one table, one report to the parent (and a look at the stop)
BLOCK = 5000

Progress = Callable[[int], None]


def stream(seed: int, block: int) -> random.Random:
    """The independent random stream of ``block`` in a run seeded with ``seed``."""
    return random.Random(f"tablectl-bench:{seed}:{block}")


def blocks(rounds: int) -> list[int]:
    """The rounds of each block of a run of ``rounds`` rounds."""
    full, rest = divmod(rounds, BLOCK)
    return [BLOCK] * full + ([rest] if rest else [])


def useful_workers(rounds: int, workers: int) -> int:
    """The workers a run starts: no more than it has blocks, at least one."""
    return max(1, min(workers, len(blocks(rounds))))


def play_block(
    rules: Rules, strategy: BasicStrategy, seed: int, spots: int, block: int, rounds: int, stats: BenchStats
) -> None:
    """Play block ``block`` (``rounds`` rounds) into ``stats``; a Ctrl-C keeps the rounds completed."""
    BenchTable(rules, stream(seed, block), spots=spots, strategy=strategy).play(rounds, stats)


def run_inline(
    rules: Rules,
    rounds: int,
    seed: int,
    spots: int,
    progress: Progress | None = None,
    strategy: BasicStrategy | None = None,
) -> tuple[BenchStats, bool]:
    """Play in this process; returns the stats and whether the run was interrupted (Ctrl-C)."""
    strategy = strategy or basic_strategy(rules)
    unit = bench_wager(rules)
    stats = BenchStats(unit=unit, spots=spots)
    start = time.perf_counter()
    interrupted = False
    try:
        for i, n in enumerate(blocks(rounds)):
            block = BenchStats(unit=unit, spots=spots)
            try:
                play_block(rules, strategy, seed, spots, i, n, block)
            finally:
                stats.merge(block)  # in block order, as the parallel run merges
            if progress is not None:
                progress(block.rounds)
    except KeyboardInterrupt:
        interrupted = True
    stats.elapsed = time.perf_counter() - start
    return stats, interrupted


def _take(counter: Any, total: int) -> int | None:
    """The next block nobody has taken yet, or None when all are taken (or the run is stopped)."""
    with counter.get_lock():
        i = int(counter.value)
        if i >= total:
            return None
        counter.value = i + 1
        return i


def _stop(counter: Any, total: int) -> None:
    with counter.get_lock():
        counter.value = total


def _worker(
    rules: Rules, strategy: BasicStrategy, seed: int, spots: int, sizes: list[int], counter: Any, queue: Any
) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    unit = bench_wager(rules)
    try:
        while (i := _take(counter, len(sizes))) is not None:
            block = BenchStats(unit=unit, spots=spots)
            play_block(rules, strategy, seed, spots, i, sizes[i], block)
            queue.put((i, block))
    finally:
        queue.put((-1, None))


def run_parallel(
    rules: Rules,
    rounds: int,
    seed: int,
    spots: int,
    workers: int,
    progress: Progress | None = None,
    strategy: BasicStrategy | None = None,
) -> tuple[BenchStats, bool]:
    """Play on ``workers`` processes; returns the merged stats and whether Ctrl-C stopped the run."""
    strategy = strategy or basic_strategy(rules)
    sizes = blocks(rounds)
    # fork: the workers inherit the engine this process chose (compiled or pure) and the strategy
    ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context()
    queue = ctx.Queue()
    counter = ctx.Value("q", 0)
    procs = [
        ctx.Process(target=_worker, args=(rules, strategy, seed, spots, sizes, counter, queue), daemon=True)
        for _ in range(useful_workers(rounds, workers))
    ]
    done: dict[int, BenchStats] = {}
    interrupted = False

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        # no exception: a KeyboardInterrupt could land in the middle of reading a message
        nonlocal interrupted
        interrupted = True
        _stop(counter, len(sizes))

    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, on_sigint) if main else None
    start = time.perf_counter()
    try:
        for p in procs:
            p.start()
        running = len(procs)
        while running:
            try:
                i, block = queue.get(timeout=0.5)
            except Empty:
                if not any(p.is_alive() for p in procs):
                    break
                continue
            except KeyboardInterrupt:  # only when the handler could not be installed
                interrupted = True
                _stop(counter, len(sizes))
                continue
            if block is None:
                running -= 1
                continue
            done[i] = block
            if progress is not None:
                progress(block.rounds)
        for p in procs:
            p.join(timeout=5)
        elapsed = time.perf_counter() - start
    finally:
        if main:
            signal.signal(signal.SIGINT, signal.default_int_handler if previous is None else previous)
    stats = BenchStats(unit=bench_wager(rules), spots=spots)
    for i in sorted(done):
        stats.merge(done[i])
    stats.elapsed = elapsed
    if not interrupted and stats.rounds != rounds:
        raise RuntimeError(f"a bench worker failed (its traceback is above): {stats.rounds} of {rounds} rounds played")
    return stats, interrupted


def run(
    rules: Rules, rounds: int, *, seed: int = 1, spots: int = 1, workers: int = 1, progress: Progress | None = None
) -> tuple[BenchStats, bool]:
    """Play ``rounds`` rounds of ``rules`` with basic strategy on the real engine.

    The figures depend on ``seed`` and ``rounds`` only, never on ``workers``."""
    strategy = basic_strategy(rules)  # before any clock starts, once for all the workers
    if useful_workers(rounds, workers) <= 1:
        return run_inline(rules, rounds, seed, spots, progress, strategy)
    return run_parallel(rules, rounds, seed, spots, workers, progress, strategy)
