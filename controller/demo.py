"""A whole simulated pit on one machine: K tables, each with its journal, publisher and people.

Each table is a :class:`controller.service.TableCore` (engine + SQLite journal + MQTT
publisher) driven by a :class:`controller.simdealer.SimulatedDealer`. The journal is
the table's memory: a demo restarted on the same ``state_dir`` replays it and carries on,
and because the simulated dealer's every choice is a function of the seed and the
engine's state, a demo killed with ``kill -9`` at any moment and restarted any number of
times settles exactly the rounds an uninterrupted run of the same seed settles.

Without a broker URL the embedded amqtt broker is started on 127.0.0.1 (MQTT and
WebSockets), and the pit dashboard is served beside it when its files are installed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TextIO

from controller.commands import CommandResult, accepted, parse_command, refused
from controller.game.effects import Record
from controller.game.rules import Rules
from controller.game.table import GameError
from controller.journal import Journal
from controller.publisher import MqttPublisher
from controller.service import TableCore
from controller.simdealer import SimulatedDealer

log = logging.getLogger("controller.demo")

Speed = Literal["realtime", "fast", "max"]

#: pause after each kind of input, in seconds, per speed
PACE: dict[str, dict[str, float]] = {
    "realtime": {"card": 0.6, "bet": 0.4, "decision": 1.2, "other": 0.8, "settled": 3.0},
    "fast": {"card": 0.02, "bet": 0.01, "decision": 0.03, "other": 0.02, "settled": 0.1},
    "max": {"card": 0.0, "bet": 0.0, "decision": 0.0, "other": 0.0, "settled": 0.0},
}


@dataclass(slots=True)
class DemoOptions:
    rules: Rules
    tables: int = 1
    rounds: int | None = None
    seed: int = 1
    speed: Speed = "fast"
    broker: str | None = None
    state_dir: Path | None = None
    prefix: str = "tables"
    dashboard: bool = True
    dashboard_port: int = 0
    quiet: bool = False


class DemoTable:
    """One simulated table: its core, its publisher and its simulated people."""

    def __init__(self, table_id: str, opts: DemoOptions, state_dir: Path, broker_url: str, out: TextIO) -> None:
        self.table_id = table_id
        self.opts = opts
        self.out = out
        self.journal = Journal(state_dir / f"{table_id}.journal")
        self.publisher = MqttPublisher(
            self.journal, table_id=table_id, broker_url=broker_url, prefix=opts.prefix, on_command=self.on_command
        )
        self.core = TableCore(table_id, opts.rules, self.journal, self.publisher)
        self.dealer = SimulatedDealer(opts.rules, seed=opts.seed, table_id=table_id)

    @property
    def rounds_left(self) -> int | None:
        if self.opts.rounds is None:
            return None
        return max(0, self.opts.rounds - self.core.table.rounds_settled)

    async def on_command(self, verb: str, payload: bytes) -> CommandResult:
        """MQTT commands from the pit, validated, then applied like any other input."""
        command = parse_command(verb, payload)
        if isinstance(command, CommandResult):
            return command
        try:
            self.core.apply(command.to_event(time.time()))
        except GameError as e:
            return refused(verb, str(e), command.id)
        return accepted(command, seq=self.core.seq)

    async def run(self) -> None:
        """Play until the round budget is spent (or forever); the caller cancels to stop."""
        from controller.game import events as ev

        core = self.core
        core.recover()
        await self.publisher.start()
        if core.replayed == 0:
            core.apply(ev.TableOpened(now=time.time()))
        core.publish_all()
        pace = PACE[self.opts.speed]
        while self.rounds_left != 0:
            event = self.dealer.next_event(core.table)
            if event is None:
                raise RuntimeError(f"{self.table_id}: the simulated table is stuck in {core.table.phase}")
            effects = core.apply(event)
            kind = event.TYPE if event.TYPE in ("card", "bet") else "decision" if event.TYPE == "decision" else "other"
            for effect in effects:
                if isinstance(effect, Record) and effect.type == "round_settled":
                    kind = "settled"
                    if not self.opts.quiet:
                        print(self._summary(effect.data), file=self.out, flush=True)
            delay = pace[kind]
            await asyncio.sleep(delay)

    def _summary(self, data: dict[str, Any]) -> str:
        d = data["dealer"]
        dealer = "blackjack" if d["blackjack"] else ("bust" if d["total"] > 21 else str(d["total"]))
        nets = " ".join(f"s{spot}:{'+' if not net.startswith('-') else ''}{net}" for spot, net in data["nets"].items())
        t = data["totals"]
        return (f"{self.table_id} round {data['round']:>4}: dealer {dealer:>9} | {nets:<40} | "
                f"handle {t['handle']} house {t['house_net']}")

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.publisher.close(timeout=3.0)
        self.journal.close()


async def run_demo(opts: DemoOptions, out: TextIO = sys.stdout) -> int:
    """Run the pit until every table has played its rounds (exit 0) or Ctrl-C (exit 0, tables closed)."""
    # The embedded broker's chatter is not the operator's business; its errors still show.
    for noisy in ("amqtt", "amqtt.broker", "transitions", "websockets"):
        logging.getLogger(noisy).setLevel(logging.ERROR)
    state_dir = opts.state_dir or Path(tempfile.mkdtemp(prefix="tablectl-demo-"))
    state_dir.mkdir(parents=True, exist_ok=True)
    broker = None
    broker_url = opts.broker
    ws_url: str | None = None
    if broker_url is None:
        from controller.broker import EmbeddedBroker

        broker = EmbeddedBroker()
        await broker.start()
        broker_url, ws_url = broker.url, broker.ws_url
    tables = [DemoTable(f"t{i:02d}", opts, state_dir, broker_url, out) for i in range(1, opts.tables + 1)]
    dashboard = None
    print(f"MQTT broker: {broker_url}" + (" (embedded)" if broker else ""), file=out)
    if ws_url:
        print(f"MQTT over WebSockets: {ws_url}", file=out)
        if opts.dashboard:
            try:
                from controller.cli.dashboard import serve_dashboard

                dashboard = serve_dashboard(opts.dashboard_port, ws_url, opts.prefix)
                print(f"Pit dashboard: {dashboard.url}", file=out)
            except (FileNotFoundError, OSError) as e:
                print(f"Pit dashboard not served: {e}", file=out)
    print(f"Subscribe: mosquitto_sub -L '{broker_url}/{opts.prefix}/#' -v", file=out)
    print(f"Journals: {state_dir}  tables: {', '.join(t.table_id for t in tables)}  profile: {opts.rules.name}",
          file=out, flush=True)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    tasks = [asyncio.create_task(t.run(), name=t.table_id) for t in tables]
    stopper = asyncio.create_task(stop.wait())
    code = 0
    try:
        pending: set[asyncio.Task[Any]] = {*tasks}
        while pending:
            done, pending = await asyncio.wait(pending | {stopper}, return_when=asyncio.FIRST_COMPLETED)
            pending.discard(stopper)
            if stopper in done:
                print("stopping: closing every table", file=out, flush=True)
                break
            for task in done:
                if task.exception() is not None:
                    print(f"{task.get_name()}: {task.exception()}", file=sys.stderr)
                    code = 1
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        stopper.cancel()
        for t in tables:
            with contextlib.suppress(Exception):
                await t.publisher.wait_drained(timeout=3.0)
            await t.close()
        if dashboard is not None:
            dashboard.stop()
        if broker is not None:
            await broker.stop()
    for t in tables:
        totals = t.core.table.snapshot()["totals"]
        print(f"{t.table_id}: rounds {totals['rounds']} handle {totals['handle']} house_net {totals['house_net']}",
              file=out, flush=True)
    return code
