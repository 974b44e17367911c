"""How long a table takes to be back in play after a start: ``tablectl run`` on a long journal, every row verified.

    .venv/bin/python benchmarks/start.py [--rounds 100000] [--session-rounds 300] [--day-rounds 500] [--repeat 3]
                                         [--dir /tmp] [--build-only] [--profile DIR]

Builds once (cached in ``--dir`` by its parameters: ``tablectl-start-r<rounds>-s<session>-d<day>-v<n>``) a keyed
journal of ``--rounds`` rounds of a rated table through :class:`controller.service.core.TableCore` (house-h17, the
demo's crowd and its five carded players, whose cards go out and back in every ``--session-rounds`` rounds, as
``benchmarks/ratings_restart.py`` builds it; the table closed and opened again every ``--day-rounds`` rounds, a
day's play; ``synchronous=NORMAL`` to build it quickly), stopped with betting open, every event marked delivered
(a table publishes as it plays) and anchored. Each run copies it to a working directory of its own once (beside
the cache, removed after; its ended ratings marked sent there, as a table whose broker acknowledged them as it
played has them, the build having had no broker to say so), then times,
``--repeat`` times, a real ``tablectl run --config FILE`` (the simulated shoe, shuffler and chip sensors with card
readers on ptys, a local Mosquitto) from the moment the process is spawned to the moment a subscriber receives
the table's first live ``state`` with ``phase`` ``betting``: what a player feels, the layout taking wagers
again. Every start verifies every row of the journal (SQLite's ``quick_check``, the chain, the snapshot it
restores), the witnesses (the anchor, the broker's retained ``state``), then recovers and goes online. Besides
the wall time it prints the CPU time the process used by then (``/proc``: all its threads and the check's worker
processes), which the load of a shared machine does not inflate.

The floor, timed in the same run before each start: reading every row of the journal once with SQLite and
nothing else (:func:`floor`: the inputs' and records' texts and hashes in large ranges, no hashing, no Python
object per row), in a fresh process; printed with the ratio of the start to it. The target (issue 40): under
5 s on 100,000 rounds. ``--profile DIR`` runs each start under cProfile (``DIR/start-N.prof``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiomqtt

from controller.game import events as ev
from controller.journal import Journal
from controller.journal.anchor import Anchor, create_key, load_key
from controller.mqtt.mosquitto import Mosquitto
from controller.profiles import load_rules
from controller.service.core import RATINGS_SENT_META, TableCore
from controller.service.ratings import enable_ratings
from controller.sim.carded import carded_players
from controller.sim.dealer import SimulatedDealer

PROFILE = "house-h17"
TABLE = "t01"
SEED = 1
TABLECTL = [sys.executable, "-m", "controller.cli"]
#: bumped when what :func:`build` makes changes (a cached journal of an older build is not reused)
BUILD_VERSION = 1


def build(work: Path, rounds: int, session_rounds: int, day_rounds: int) -> dict[str, Any]:
    """A keyed journal of ``rounds`` rounds stopped with betting open, its key and its anchor, in ``work``; the
    table closed and opened again every ``day_rounds`` rounds (0: never)."""
    journal_path, key_path, anchors = work / f"{TABLE}.journal", work / "journal.key", work / "anchors"
    key = create_key(key_path)
    rules = load_rules(PROFILE)
    carded = carded_players(SEED, TABLE, rules.spots)
    started = time.perf_counter()
    with Journal(journal_path, key=key, synchronous="NORMAL") as journal:
        core = TableCore(TABLE, rules, journal, snapshot_every=500)
        enable_ratings(core)
        core.recover()
        dealer = SimulatedDealer(rules, seed=SEED, table_id=TABLE, regulars=carded)
        core.apply(ev.TableOpened(now=1_800_000_000.0))
        for player in carded:
            core.apply_card("card_in", player.spot, player.number)
        away: int | None = None
        earlier = 0  # the rounds of the days before (the table's own count starts again at each opening)
        while earlier + core.table.rounds_settled < rounds or core.table.phase != "betting":
            today = core.table.rounds_settled
            settled = earlier + today
            if core.table.phase == "betting" and day_rounds and today >= day_rounds and settled < rounds:
                earlier = settled  # a day's end: the pit closes the table, and opens it the next day
                now = 1_800_000_000.0 + settled / day_rounds * 86_400.0
                core.apply(ev.TableClosed(now=now))
                core.apply(ev.TableOpened(now=now + 36_000.0))
            if core.table.phase == "settled" and session_rounds and settled and away != settled:
                if settled % session_rounds == 0:
                    away = settled
                    for player in carded:
                        core.apply_card("card_out", player.spot, player.number)
                elif away is not None and settled == away + 1:
                    for player in carded:
                        core.apply_card("card_in", player.spot, player.number)
            event = dealer.next_event(core.table)  # type: ignore[arg-type]
            if event is None:
                raise RuntimeError(f"the simulated table is stuck: {core.table.snapshot()}")
            core.apply(event)
            if settled % 5_000 == 0 and core.table.rounds_settled == today + 1:
                print(f"  {settled + 1:,} rounds, {time.perf_counter() - started:.0f} s", flush=True)
        journal.mark_delivered(journal.last_seq)  # a table publishes as it plays: the broker had every event
        Anchor(anchors, TABLE, key).write(journal.anchor_point())
        figures = {"rounds": earlier + core.table.rounds_settled, "inputs": journal.last_input_id,
                   "records": journal.last_seq, "build_s": round(time.perf_counter() - started, 1)}
    figures["bytes"] = journal_path.stat().st_size
    return figures


def cached(root: Path, rounds: int, session_rounds: int, day_rounds: int) -> tuple[Path, dict[str, Any]]:
    """The journal built for these parameters (built now when there is none yet)."""
    work = root / f"tablectl-start-r{rounds}-s{session_rounds}-d{day_rounds}-v{BUILD_VERSION}"
    done = work / "built.json"
    if done.is_file():
        return work, json.loads(done.read_text())
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True, mode=0o700)
    print(f"building {rounds:,} rounds in {work} (once: cached by its parameters)", flush=True)
    figures = build(work, rounds, session_rounds, day_rounds)
    done.write_text(json.dumps(figures))
    return work, figures


def floor(journal: Path) -> tuple[float, float]:
    """Seconds to read every row's content and hash once with SQLite, nothing else (the floor of a check that
    reads every row): a fresh connection, each table by large ranges of its key, the values only counted; and its
    CPU seconds."""
    started, cpu = time.perf_counter(), time.process_time()
    conn = sqlite3.connect(f"file:{journal}?mode=ro", uri=True)
    total = 0
    for query in ("SELECT sum(length(event)) + sum(length(hash)) + sum(ts) FROM inputs WHERE id BETWEEN ? AND ?",
                  "SELECT sum(length(body)) + sum(length(hash)) + sum(input_id) FROM outbox WHERE seq BETWEEN ? AND ?"):
        table = "inputs" if "inputs" in query else "outbox"
        last = conn.execute(f"SELECT max(rowid) FROM {table}").fetchone()[0] or 0
        for first in range(0, last + 1, 1 << 20):
            total += int(conn.execute(query, (first, first + (1 << 20) - 1)).fetchone()[0] or 0)
    conn.close()
    assert total > 0
    return time.perf_counter() - started, time.process_time() - cpu


def _config(run: Path, broker: str, links: Path) -> Path:
    body = f"""
table_id = "{TABLE}"
profile = "{PROFILE}"
state_dir = "{run / 'state'}"
journal_key = "{run / 'journal.key'}"
anchor_dir = "{run / 'anchors'}"
log_level = "INFO"
tick_every_s = 1

[devices.shoe]
port = "{links / 'shoe'}"

[devices.shuffler]
port = "{links / 'shuffler'}"
decks = 6

[devices.chips]
port = "{links / 'chips'}"
card_readers = true

[devices.console]
backend = "sim"

[mqtt]
url = "{broker}"
prefix = "tables"
"""
    path = run / f"{TABLE}.toml"
    path.write_text(body)
    path.chmod(0o600)
    return path


async def one_start(config: Path, broker: Mosquitto, log: Path, profile: Path | None = None) -> tuple[float, float]:
    """Seconds from spawning ``tablectl run`` to a live ``state`` with betting open, and the CPU seconds the process
    used by then; then the table is stopped.
    ``profile``: run it under cProfile, its statistics written there at the stop."""
    topic = f"tables/{TABLE}/state"
    async with aiomqtt.Client(broker.host, broker.port) as client:
        await client.subscribe(topic, qos=1)
        with log.open("ab") as err:
            started = time.perf_counter()
            command = TABLECTL if profile is None else [sys.executable, "-m", "cProfile", "-o", str(profile), "-m",
                                                         "controller.cli"]
            # its modules' bytecode cached, as an installed package has it (pip compiles it): the first start
            # writes what a development shell's PYTHONDONTWRITEBYTECODE would have every start compile again
            env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
            proc = await asyncio.create_subprocess_exec(*command, "run", "--config", str(config), stderr=err, env=env)
            try:
                async with asyncio.timeout(600):
                    async for message in client.messages:
                        if message.retain:  # the previous start's state, kept by the broker
                            continue
                        state = json.loads(bytes(message.payload))
                        if state.get("phase") == "betting":
                            seconds = time.perf_counter() - started
                            cpu = cpu_seconds(proc.pid)
                            break
            finally:
                if proc.returncode is None:
                    proc.send_signal(signal.SIGTERM)
                    await asyncio.wait_for(proc.wait(), 60)
    if proc.returncode != 0:
        raise SystemExit(f"tablectl run exited {proc.returncode}: see {log}")
    return seconds, cpu


def cpu_seconds(pid: int) -> float:
    """The CPU time (user and system, all its threads, and its children ended by now: the check's worker
    processes) process ``pid`` has used so far (Linux ``/proc``): what a start costs whatever else the machine is
    doing."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def floor_in_child(journal: Path) -> tuple[float, float]:
    out = subprocess.run([sys.executable, __file__, "--floor", str(journal)], check=True, capture_output=True,
                         text=True).stdout
    wall, cpu = out.split()
    return float(wall), float(cpu)


async def measure(work: Path, repeat: int, profile: Path | None) -> tuple[list[float], ...]:
    # a working copy of its own beside the cached journal (two runs at once never share one; the cache is only read)
    with tempfile.TemporaryDirectory(prefix=f"{work.name}-run-", dir=work.parent) as scratch:
        return await _measure(work, Path(scratch), repeat, profile)


async def _measure(work: Path, run: Path, repeat: int, profile: Path | None) -> tuple[list[float], ...]:
    (run / "state").mkdir(parents=True, mode=0o700)
    shutil.copy2(work / "journal.key", run / "journal.key")
    shutil.copytree(work / "anchors", run / "anchors")
    journal = run / "state" / f"{TABLE}.journal"
    shutil.copyfile(work / f"{TABLE}.journal", journal)
    journal.chmod(0o600)
    key = load_key(run / "journal.key")
    with Journal(journal, key=key) as copy:  # its ratings went out as it played (the build had no broker to say so)
        copy.set_meta(RATINGS_SENT_META, copy.signed_mark(RATINGS_SENT_META, copy.last_input_id))
    links = run / "links"
    links.mkdir()
    sims = [subprocess.Popen([*TABLECTL, "simulate", kind, "--link", str(links / kind), "--seed", "5"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            for kind in ("shoe", "shuffler", "chips")]
    starts: list[float] = []
    cpus: list[float] = []
    floors: list[float] = []
    floor_cpus: list[float] = []
    try:
        for proc in sims:
            assert proc.stdout is not None
            proc.stdout.readline()  # the pty is there
        with Mosquitto(run / "mosquitto") as broker:
            config = _config(run, broker.url, links)
            for k in range(repeat):
                wall, cpu = floor_in_child(journal)
                floors.append(wall)
                floor_cpus.append(cpu)
                prof = None if profile is None else profile / f"start-{k + 1}.prof"
                seconds, cpu = await one_start(config, broker, run / "tablectl.log", prof)
                starts.append(seconds)
                cpus.append(cpu)
                print(f"  start {k + 1}: {seconds:.2f} s, {cpu:.2f} s of CPU (floor {floors[-1]:.2f} s)", flush=True)
    finally:
        for proc in sims:
            proc.terminate()
        for proc in sims:
            proc.wait(10)
    return starts, cpus, floors, floor_cpus


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=100_000)
    ap.add_argument("--session-rounds", type=int, default=300, help="rounds between a player's card out and in")
    ap.add_argument("--day-rounds", type=int, default=500,
                    help="rounds between the table's closing and opening again (a day's play; 0: never closed)")
    ap.add_argument("--repeat", type=int, default=3, help="starts timed")
    ap.add_argument("--dir", type=Path, default=Path("/tmp"), help="where the journal is built and cached")
    ap.add_argument("--build-only", action="store_true", help="build (or find) the journal and stop")
    ap.add_argument("--profile", type=Path, help="run each start under cProfile, writing DIR/start-N.prof")
    ap.add_argument("--floor", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.floor:
        print(*floor(args.floor))
        return 0
    if args.rounds < 1 or args.session_rounds < 0 or args.day_rounds < 0 or args.repeat < 1:
        ap.error("--rounds and --repeat must be 1 or more, --session-rounds and --day-rounds 0 or more")
    if args.profile is not None:
        args.profile.mkdir(parents=True, exist_ok=True)
    work, figures = cached(args.dir, args.rounds, args.session_rounds, args.day_rounds)
    print(f"journal: {figures['rounds']:,} rounds, {figures['inputs']:,} inputs, {figures['records']:,} records, "
          f"{figures['bytes'] / 1e6:,.0f} MB (built in {figures['build_s']:.0f} s), {work}")
    if args.build_only:
        return 0
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} before the starts")
    starts, cpus, floors, floor_cpus = asyncio.run(measure(work, args.repeat, args.profile))
    best, median, low = min(starts), statistics.median(starts), statistics.median(floors)
    print(f"load average {os.getloadavg()[0]:.2f} after the starts")
    print(f"start to betting open: median {median:.2f} s, best {best:.2f} s, of {', '.join(f'{s:.2f}' for s in starts)}"
          f"; target < 5 s: {'ok' if median < 5 else 'MISSED'}")
    cpu, low_cpu = statistics.median(cpus), statistics.median(floor_cpus)
    print(f"floor (every row read once by SQLite, no hashing): median {low:.2f} s, {low_cpu:.2f} s of CPU")
    print(f"start / floor: {median / low:.1f} x; CPU of the start (the process, its threads and workers, spawn to "
          f"betting open): median {cpu:.2f} s, {cpu / low_cpu:.1f} x the floor's")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
