"""``tablectl soak``: a seeded chaos soak of a whole simulated pit (DESIGN.md, "Command line").

In the spirit of FoundationDB's simulation testing and Jepsen: one seed drives K tables for N
rounds at full speed on a real Mosquitto through a schedule of

* commands sent over MQTT as a pit would, each on its sender's topic (``cmd/<role>/soak/<verb>``: the pit's
  verbs as ``pit``, an integrity alarm acknowledged as ``surveillance``): limits inside and outside what
  the table allows, close then open, new decks, alarms acknowledged, malformed commands;
* device faults inside the pit (:mod:`controller.sim.chaos`): each device's cable pulled and
  restored at random points of a round, corrupted, dropped and doubled bytes, a shuffler jam;
* the broker stopped and restarted; the pit's process killed with ``kill -9`` and restarted on
  its journals.

The pit is ``tablectl demo --speed max --chaos-seed S`` in its own process. A subscriber with a
persistent session checks every message as it arrives (:class:`controller.sim.soak_check.PitChecker`:
every ``seq`` once in order, money and cards conserved, the hole card never published early,
progress), and after every step the soak checks the rest: commands answered as expected, no
traceback in any log, and, whenever the pit is down, each journal replayed from its first input
gives the totals the table recovers (and, at the end, the totals it published). A broken
invariant stops the soak with the seed, the step and the invariant, and the one command that
replays the same schedule.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import random
import shutil
import signal
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import aiomqtt
from paho.mqtt.reasoncodes import ReasonCode

from controller.cancelling import cancel_and_wait
from controller.contract.alarms import DECK_CHANGE_OVERDUE, alarm_kind, lost_device
from controller.contract.phases import Phase
from controller.contract.roles import COMMAND_ROLES, ROLES, command_topic
from controller.contract.topics import topic_root
from controller.game import events as ev
from controller.game.errors import GameError
from controller.game.money import format_money
from controller.game.rules import Rules, limits_refusal
from controller.game.table import Table
from controller.journal import Journal, JournalError, Synchronous
from controller.mqtt.addresses import parse_broker_url
from controller.service.core import engine_input
from controller.service.ratings import is_engine_input
from controller.sim.soak_check import InvariantBroken, PitChecker
from controller.sim.soak_floor import SOAK_PEOPLE, SoakFloor, soak_user
from controller.sim.soak_recorder import INVARIANT as RECORDER_INVARIANT
from controller.sim.soak_recorder import SoakRecorder

__all__ = ["SoakFailed", "SoakOptions", "run_soak"]

#: the pit-level steps and their weights in the schedule
STEPS: dict[str, int] = {
    "set_limits": 3,
    "set_limits_refused": 2,
    "close_open": 2,
    "decks_changed": 1,
    "malformed": 2,
    "broker_outage": 1,
    "kill": 1,
    "node_loss": 1,
    "quorum_loss": 1,
}
#: the steps only a cluster's schedule holds (one node lost, two nodes lost); ``broker_outage`` only a broker of
#: the soak's own that keeps sessions across a restart; the rest are every schedule's, drawn alike
CLUSTER_STEPS = frozenset({"node_loss", "quorum_loss"})
#: how long a command may wait for its result while the soak's connection is up (sent again every 2 s; the time the
#: broker or a cluster refuses the soak's connection is not counted: no table can answer it then)
RESULT_TIMEOUT_S = 20.0
#: the soak's own MQTT client: a broker stopped on purpose is no news (the pit's logs are checked)
_MQTT_LOG = logging.getLogger("controller.sim.soak.mqtt")
_MQTT_LOG.addHandler(logging.NullHandler())
_MQTT_LOG.propagate = False


class SoakFailed(Exception):
    """An invariant broke: the seed, the step and what broke."""


@dataclass
class SoakOptions:
    rules: Rules
    profile: str
    tables: int = 3
    rounds: int = 50
    seed: int = 1
    broker: str | None = None
    state_dir: Path | None = None
    prefix: str = "soak"
    step_s: float = 2.0  # mean pause between two pit-level steps
    bound_s: float = 60.0  # a table that can play settles a round within this
    journal_sync: Synchronous = "FULL"  # the pit's journals (NORMAL survives kill -9, not a power cut)
    cluster: int = 0  # a NATS cluster of this many nodes in <state-dir>/cluster, its nodes lost by the schedule
    recorder: bool = False  # tablectl recorder into <state-dir>/recorder.db, killed now and then, checked
    out: TextIO = field(default_factory=lambda: sys.stdout)


@dataclass
class _Counts:
    steps: int = 0
    commands: int = 0
    refused_as_expected: int = 0
    faults: int = 0
    kills: int = 0
    outages: int = 0
    node_losses: int = 0  # one node killed, then restarted
    quorum_losses: int = 0  # two nodes killed, then restarted
    acks: int = 0


@dataclass
class _Replay:
    """A table's journal replayed by a fresh engine, up to ``last_input``; the cards of its shoe."""

    engine: Table
    last_input: int = 0
    shoe: Counter[str] = field(default_factory=Counter)

    def advance(self, table_id: str, journal: Journal, decks: int) -> None:
        engine, shoe = self.engine, self.shoe
        for row in journal.inputs_since(self.last_input):
            if not is_engine_input(row.event):  # a card reader's input or an ended rating
                self.last_input = row.id
                continue
            event = engine_input(row.event)
            try:
                engine.handle(event)
            except GameError as e:
                raise InvariantBroken("totals equal a replay of the journal",
                                      f"{table_id}: input {row.id} refused on replay: {e}") from None
            self.last_input = row.id
            if isinstance(event, ev.ShuffleDone) and engine.cards_dealt == 0:
                shoe.clear()  # a new shoe (not the discards reshuffled mid-round)
            card = event.card if isinstance(event, ev.CardDrawn | ev.DealerReveal) else None
            if card:
                shoe[card] += 1
                if shoe[card] > decks:
                    raise InvariantBroken("cards conserved", f"{table_id}: journal input {row.id}: {card} "
                                          f"dealt {shoe[card]} times in one shoe")


class _Broker:
    """The soak's broker: its own Mosquitto (persistent sessions) or a given URL. Not the demo's embedded broker:
    it admits each table with its own password, which the soak's demos given ``--broker URL`` do not have."""

    def __init__(self, opts: SoakOptions, workdir: Path) -> None:
        self.own: Any = None
        self.restartable = False
        self.kind = "given"
        if opts.broker is not None:
            addr = parse_broker_url(opts.broker)
            self.host, self.port, self.url = addr.host, addr.port, opts.broker
            return
        from controller.mqtt.mosquitto import Mosquitto
        from controller.mqtt.ports import stable_port

        # no per-client queue limit: a subscriber that falls behind (a loaded machine) must not
        # lose events to Mosquitto's default of 1000 queued messages ("Outgoing messages are being dropped")
        # ports below the ephemeral range: nothing else on the machine is handed them during an outage
        port = stable_port()
        ws_port = stable_port()
        while ws_port == port:
            ws_port = stable_port()
        self.own = Mosquitto(workdir / "broker", port=port, ws_port=ws_port, persistence=True,
                             extra_config="max_queued_messages 0")
        self.kind, self.restartable = "mosquitto", True
        self.host, self.port, self.url = "127.0.0.1", self.own.port, self.own.url

    @property
    def addresses(self) -> list[tuple[str, int]]:
        return [(self.host, self.port)]

    def login(self, role: str) -> tuple[str, str] | None:
        """No login: the soak's own broker and a given one enforce no ACL here (the tables check roles)."""
        return None

    async def start(self) -> None:
        if self.kind == "mosquitto":
            await asyncio.to_thread(self.own.start)

    async def stop(self) -> None:
        if self.kind == "mosquitto":
            await asyncio.to_thread(self.own.stop)

    def log_tail(self) -> str:
        return self.own.log()[-1500:] if self.kind == "mosquitto" else ""


class _Soak:
    def __init__(self, opts: SoakOptions) -> None:
        self.opts = opts
        self.rng = random.Random(f"{opts.seed}:soak")
        self.table_ids = [f"t{i:02d}" for i in range(1, opts.tables + 1)]
        self.state_dir = opts.state_dir or Path(tempfile.mkdtemp(prefix="tablectl-soak-"))
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.broker: _Broker | SoakFloor = (SoakFloor(self.state_dir, self.table_ids, prefix=opts.prefix,
                                                      nodes=opts.cluster)
                                            if opts.cluster else _Broker(opts, self.state_dir))
        self.recorder = self._recorder() if opts.recorder else None
        # on a cluster a seq may come after later ones (a publish not taken as the quorum went, resent): within
        # the bound, counted (docs/soak.md); on one broker never
        self.checker = PitChecker(opts.prefix, decks=opts.rules.decks, rounds=opts.rounds, bound_s=opts.bound_s,
                                  now=time.monotonic(), reorder_s=opts.bound_s if opts.cluster else None)
        self.counts = _Counts()
        self.step = "start"
        self.pit: asyncio.subprocess.Process | None = None
        self.pit_runs = 0
        self.pit_logs: list[Path] = []
        self._log_checked: dict[Path, int] = {}
        self.client: aiomqtt.Client | None = None
        #: a connection per other role that sends commands (a cluster's user has one role): role -> client
        self.senders: dict[str, aiomqtt.Client | None] = {}
        self.connected = asyncio.Event()
        self.results: dict[str, dict[str, Any]] = {}
        self.result_arrived = asyncio.Event()
        self.alarms: dict[str, list[dict[str, Any]]] = {}
        self.acked: dict[tuple[str, int], float] = {}
        self.broken: InvariantBroken | None = None
        self._replays: dict[str, _Replay] = {}
        self.blocked = 0  # > 0 while the soak itself keeps tables from playing (outage, restart)
        self.closed: set[str] = set()
        self._next_id = 0
        self._tasks: list[asyncio.Task[None]] = []
        self._pit_reader: asyncio.Task[None] | None = None

    def _recorder(self) -> SoakRecorder:
        floor = self.broker if isinstance(self.broker, SoakFloor) else None
        stream = None
        if floor is not None:
            cluster = floor.cluster
            stream = ([f"nats://{cluster.bind}:{n.client}" for n in cluster.nodes], *cluster.admin_login())
        return SoakRecorder(self.state_dir, brokers=floor.cluster.mqtt_urls if floor else [self.broker.url],
                            prefix=self.opts.prefix, password=floor.passwords.get("recorder") if floor else None,
                            seed=self.opts.seed, stream=stream)

    # -- the pit process ------------------------------------------------------------------------

    def _pit_args(self) -> list[str]:
        o = self.opts
        return [sys.executable, "-m", "controller.cli", "demo", "--profile", o.profile, "--tables", str(o.tables),
                "--rounds", str(o.rounds), "--seed", str(o.seed), "--speed", "max", *self._pit_broker(),
                "--state-dir", str(self.state_dir / "journals"), "--prefix", o.prefix, "--no-dashboard", "--quiet",
                "--chaos-seed", str(o.seed), "--tick-every", "5", "--log-level", "WARNING",
                "--journal-sync", o.journal_sync]

    def _pit_broker(self) -> list[str]:
        if isinstance(self.broker, SoakFloor):  # the soak's cluster: the demo connects, the soak owns the nodes
            return ["--cluster", str(self.opts.cluster), "--cluster-dir", str(self.broker.dir)]
        return ["--broker", self.broker.url]

    async def _start_pit(self) -> None:
        self.pit_runs += 1
        log_path = self.state_dir / f"pit-{self.pit_runs}.log"
        self.pit_logs.append(log_path)
        with log_path.open("wb") as err:
            self.pit = await asyncio.create_subprocess_exec(
                *self._pit_args(), stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=err,
                env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self._pit_reader = asyncio.create_task(self._read_pit(self.pit))

    async def _read_pit(self, pit: asyncio.subprocess.Process) -> None:
        assert pit.stdout is not None
        with (self.state_dir / f"pit-{self.pit_runs}.out").open("ab") as out:
            async for raw in pit.stdout:
                out.write(raw)
                if raw.startswith(b"chaos "):
                    self.counts.faults += 1

    async def _kill_pit(self) -> None:
        pit = self.pit
        if pit is None:
            return
        with contextlib.suppress(ProcessLookupError):
            pit.send_signal(signal.SIGKILL)
        await pit.wait()
        if self._pit_reader is not None:
            with contextlib.suppress(Exception):
                await self._pit_reader
        self.pit = None

    # -- MQTT: one persistent session, the pit's subscriber and its supervisor --------------------

    async def _subscriber(self) -> None:
        ident = f"tablectl-soak-{self.opts.seed}-{os.getpid()}"
        user, password = self.broker.login("pit") or (None, None)
        node = 0
        kept: list[asyncio.Queue[aiomqtt.Message]] = []

        class KeptQueue(asyncio.Queue[aiomqtt.Message]):
            """The client's incoming queue (aiomqtt's ``queue_type``), kept for :meth:`_drain_received`."""

            def __init__(self, maxsize: int = 0) -> None:
                super().__init__(maxsize)
                kept.append(self)

        while True:
            host, port = self.broker.addresses[node % len(self.broker.addresses)]
            kept.clear()
            try:
                async with aiomqtt.Client(host, port, identifier=ident, username=user, password=password,
                                          clean_session=False, keepalive=10, logger=_MQTT_LOG,
                                          queue_type=KeptQueue) as client:
                    granted = await client.subscribe(f"{self.opts.prefix}/#", qos=1)
                    # a cluster electing leaders after a node loss refuses a subscription for a while
                    if any(g.is_failure if isinstance(g, ReasonCode) else g >= 0x80 for g in granted):
                        raise aiomqtt.MqttError(f"subscription refused: {granted}")
                    self.client = client
                    self.connected.set()
                    async for message in client.messages:
                        self._on_message(message)
            except aiomqtt.MqttError:
                node += 1  # the next node of a cluster (the same broker otherwise)
            finally:
                self._drain_received(kept)
                self.client = None
                self.connected.clear()
            await asyncio.sleep(0.2)

    async def _sender(self, role: str) -> None:
        """A connection of its own for the commands of ``role`` (a cluster's user has one role), moving
        from node to node as the subscriber does; a clean session: a command lost with it is sent again."""
        user, password = self.broker.login(role) or (None, None)
        node = 0
        while True:
            host, port = self.broker.addresses[node % len(self.broker.addresses)]
            try:
                async with aiomqtt.Client(host, port, identifier=f"tablectl-soak-{self.opts.seed}-{os.getpid()}-"
                                          f"{role}", username=user, password=password, keepalive=10,
                                          logger=_MQTT_LOG) as client:
                    self.senders[role] = client
                    async for _ in client.messages:  # subscribed to nothing: returns when the connection drops
                        pass
            except aiomqtt.MqttError:
                node += 1
            finally:
                self.senders[role] = None
            await asyncio.sleep(0.2)

    def _client_for(self, role: str) -> aiomqtt.Client | None:
        return self.senders.get(role) if role in self.senders else self.client

    def _drain_received(self, queues: list[asyncio.Queue[aiomqtt.Message]]) -> None:
        """Messages the client acknowledged before its connection dropped: the broker will not send them
        again (persistent session), so they are checked now, not lost (they wait in the client's queue)."""
        for queue in queues:
            while not queue.empty():
                self._on_message(queue.get_nowait())

    def _on_message(self, message: aiomqtt.Message) -> None:
        topic = message.topic.value
        payload = message.payload if isinstance(message.payload, bytes | bytearray) else b""
        now = time.monotonic()
        rest = topic[len(self.opts.prefix) + 1:]
        table, _, kind = rest.partition("/")
        if table == "recorder":  # the recorder's positions and alarms, no table's: a conflict is never right
            if kind == "alarms" and b"recorder_conflict" in payload and self.broken is None:
                self.broken = InvariantBroken(RECORDER_INVARIANT, f"the recorder raised a conflict: "
                                              f"{bytes(payload[:300]).decode(errors='replace')}")
            return
        try:
            self.checker.on_message(topic, bytes(payload), now)
        except InvariantBroken as e:
            if self.broken is None:
                self.broken = e
        if kind == "alarms":
            with contextlib.suppress(ValueError):
                self.alarms[table] = json.loads(payload)
        elif kind.startswith("cmd/") and kind.endswith("/result"):
            with contextlib.suppress(ValueError):
                result = json.loads(payload)
                if isinstance(result, dict) and isinstance(result.get("id"), str):
                    self.results[result["id"]] = result
                    self.result_arrived.set()

    async def _command(self, table: str, verb: str, payload: dict[str, Any] | bytes) -> dict[str, Any]:
        """Send a command and wait for its result (the command is sent again if the pit restarts)."""
        self._next_id += 1
        rid = f"soak-{self.opts.seed}-{self._next_id}"
        body = payload if isinstance(payload, bytes) else json.dumps({**payload, "id": rid}).encode()
        self.counts.commands += 1
        waited = 0.0  # while the soak's own connection was up: a cluster refusing it meanwhile is no table's delay
        while rid not in self.results:
            await asyncio.wait_for(self.connected.wait(), 60)
            client = self.client
            if client is not None:
                with contextlib.suppress(aiomqtt.MqttError):
                    topic = command_topic(topic_root(self.opts.prefix, table), "pit", soak_user("pit"), verb)
                    await client.publish(topic, body, qos=1)
            sent = time.monotonic()
            try:
                async with asyncio.timeout(2.0):
                    while rid not in self.results:
                        self.result_arrived.clear()
                        await self.result_arrived.wait()
            except TimeoutError:
                if isinstance(payload, bytes):
                    return {}  # no id to answer to (a payload that is not JSON): checked by the pit staying up
                if self.connected.is_set():
                    waited += time.monotonic() - sent
                if waited > RESULT_TIMEOUT_S:
                    raise InvariantBroken("commands answered", f"{table} cmd/{verb}: no result in "
                                          f"{RESULT_TIMEOUT_S:g} s of the soak's connection") from None
        return self.results.pop(rid)

    # -- the supervisor's duty: alarms acknowledged -----------------------------------------------

    async def _acknowledger(self) -> None:
        while True:
            await asyncio.sleep(0.5)
            now = time.monotonic()
            for table, alarms in list(self.alarms.items()):
                for alarm in alarms if isinstance(alarms, list) else []:
                    code, aid = str(alarm.get("code", "")), alarm.get("id")
                    if not isinstance(aid, int) or lost_device(code) is not None or code == DECK_CHANGE_OVERDUE:
                        continue
                    # each alarm to the role that clears it (controller/contract/roles.py)
                    kind = alarm_kind(code, bool(alarm.get("halts")))
                    role = next(r for r in COMMAND_ROLES if kind in ROLES[r].alarm_kinds)
                    client = self._client_for(role)
                    if now - self.acked.get((table, aid), -1e9) < 5.0 or client is None:
                        continue
                    self.acked[(table, aid)] = now
                    self.counts.acks += 1
                    self._next_id += 1
                    body = json.dumps({"alarm_id": aid, "id": f"ack-{self._next_id}",
                                       "reason": "soak: the supervisor's duty"}).encode()
                    with contextlib.suppress(aiomqtt.MqttError):
                        topic = command_topic(topic_root(self.opts.prefix, table), role, soak_user(role), "ack_alarm")
                        await client.publish(topic, body, qos=1)

    async def _progress_watch(self) -> None:
        while True:
            await asyncio.sleep(1.0)
            now = time.monotonic()
            if self.blocked or self.pit is None:
                self.checker.pause(now)
                continue
            done = self._done_tables()
            for table in self.closed:
                self.checker.pause(now, table)
            try:
                self.checker.check_progress(now, done=done)
            except InvariantBroken as e:
                if self.broken is None:
                    self.broken = e

    def _done_tables(self) -> frozenset[str]:
        """Tables that have played their rounds (the round number counts across opens and restarts)."""
        return frozenset(t for t, v in self.checker.tables.items()
                         if int(v.state.get("round", 0)) >= self.opts.rounds
                         and (v.state.get("phase") in (Phase.SETTLED, Phase.SHUFFLING, Phase.CLOSED)
                              or (v.state.get("phase") == Phase.BETTING and not v.state.get("spots"))))

    # -- the schedule -----------------------------------------------------------------------------

    def _check(self) -> None:
        if self.broken is not None:
            raise self.broken
        self._check_logs()

    def _check_logs(self) -> None:
        for path in [*self.pit_logs, *(self.recorder.logs if self.recorder is not None else ())]:
            if not path.exists():
                continue
            size = path.stat().st_size
            if size == self._log_checked.get(path, 0):
                continue
            with path.open("rb") as f:
                f.seek(self._log_checked.get(path, 0))
                text = f.read().decode(errors="replace")
            self._log_checked[path] = size
            if "Traceback" in text:
                at = text.index("Traceback")
                raise InvariantBroken("no traceback in any log", f"{path.name}: {text[at:at + 1200]}")

    async def _run_step(self, n: int) -> None:
        floor = self.broker if isinstance(self.broker, SoakFloor) else None
        kinds = [k for k in STEPS if (k not in CLUSTER_STEPS or floor is not None)
                 and (k != "broker_outage" or self.broker.restartable)]
        kind = self.rng.choices(kinds, [STEPS[k] for k in kinds])[0]
        table = self.rng.choice(self.table_ids)
        pause = self.rng.uniform(0.2, 2 * self.opts.step_s)
        if kind not in ("broker_outage", "kill", *CLUSTER_STEPS) and table in self._done_tables():
            kind = "idle"  # a table that has played its rounds is off line: nobody to command
        self.step = f"step {n} ({kind} {table})"
        self.counts.steps += 1
        rules = self.opts.rules
        if kind == "set_limits":
            low = self.rng.choice([rules.min_bet, rules.min_bet * 2])
            high = self.rng.choice([rules.max_bet, max(low, rules.max_bet // 2)])
            if limits_refusal(rules, low, high) is not None:  # e.g. house-h17's $500 maximum "may be increased"
                high = rules.max_bet
            result = await self._command(table, "set_limits", {"min_bet": format_money(low),
                                                               "max_bet": format_money(high)})
            self._expect(result, True, table, kind)
        elif kind == "set_limits_refused":
            refusable: list[dict[str, Any]] = [{"min_bet": "10", "max_bet": "5"}, {"min_bet": "0", "max_bet": "5"},
                                               {"min_bet": 5.5, "max_bet": "10"}, {"min_bet": "-5", "max_bet": "10"}]
            bad = self.rng.choice(refusable)
            self._expect(await self._command(table, "set_limits", bad), False, table, kind)
        elif kind == "close_open":
            closing = await self._until_accepted(table, "close", {})
            self.closed.add(table)
            await asyncio.sleep(self.rng.uniform(0.5, 3.0))
            if closing.get("pending"):  # asked mid-round: the table closes when that round settles, then opens
                await self._until_accepted(table, "open", {})
            else:
                self._expect(await self._command(table, "open", {}), True, table, "open")
            self.closed.discard(table)
            self.checker.pause(time.monotonic(), table)
        elif kind == "decks_changed":
            await self._until_accepted(table, "decks_changed", {"deck_set": self.rng.choice("AB")})
        elif kind == "malformed":
            malformed: list[tuple[str, dict[str, Any] | bytes]] = [
                ("set_limits", b"\xff\xfe not json"), ("open", b"[1, 2]"), ("explode", {}),
                ("ack_alarm", {"alarm_id": "seven"}), ("decks_changed", {"deck_set": "../../etc"}),
                ("close", {"unknown_field": 1}),
            ]
            verb, payload = self.rng.choice(malformed)
            result = await self._command(table, verb, payload)
            if result:
                self._expect(result, False, table, f"malformed {verb}")
        elif kind == "broker_outage":
            self.blocked += 1
            self.counts.outages += 1
            try:
                await self.broker.stop()
                await asyncio.sleep(self.rng.uniform(1.0, 6.0))
                await self.broker.start()
            finally:
                self.blocked -= 1
                self.checker.pause(time.monotonic())
        elif kind in CLUSTER_STEPS and floor is not None:
            # one node lost (its tables move to another), or two (no quorum: the tables play on their journals)
            lost = self.rng.sample(range(len(floor.addresses)), 1 if kind == "node_loss" else 2)
            down_s = self.rng.uniform(1.0, 6.0)
            self.step += f" n{'+n'.join(str(k + 1) for k in sorted(lost))} for {down_s:.1f} s"
            self.blocked += 1
            if kind == "node_loss":
                self.counts.node_losses += 1
            else:
                self.counts.quorum_losses += 1
            try:
                await floor.kill(lost)
                await asyncio.sleep(down_s)
                await floor.revive()
            finally:
                self.blocked -= 1
                self.checker.pause(time.monotonic())
        elif kind == "kill":
            await asyncio.sleep(self.rng.uniform(0.0, 1.5))  # at a random point of the tables' rounds
            self.blocked += 1
            self.counts.kills += 1
            try:
                await self._kill_pit()
                self._check_journals(final=False)
                await self._start_pit()
            finally:
                self.blocked -= 1
                self.checker.pause(time.monotonic())
        await asyncio.sleep(pause)

    def _check_recorder(self) -> None:
        """After a step: the recorder still runs (it is killed on its own schedule, beside the steps) and holds
        each journal's prefix exactly."""
        recorder = self.recorder
        if recorder is None:
            return
        code = recorder.exited()
        if code is not None:
            raise InvariantBroken(RECORDER_INVARIANT, f"the recorder exited {code} on its own (see "
                                  f"{recorder.logs[-1]})")
        if (self.state_dir / "journals" / "journal.key").exists():  # else the pit has written nothing yet
            recorder.check(self.state_dir / "journals", self.table_ids, self._journal_key())

    def _journal_key(self) -> bytes:
        from controller.journal.anchor import load_key

        return load_key(self.state_dir / "journals" / "journal.key")

    def _expect(self, result: dict[str, Any], ok: bool, table: str, what: str) -> None:
        if bool(result.get("ok")) != ok:
            raise InvariantBroken("commands answered", f"{table} {what}: expected ok={ok}, got {result}")
        if not ok:
            if not result.get("error"):
                raise InvariantBroken("commands answered", f"{table} {what}: refused without a reason: {result}")
            self.counts.refused_as_expected += 1

    async def _until_accepted(self, table: str, verb: str, payload: dict[str, Any]) -> dict[str, Any]:
        """A supervisor retries a command refused mid-round until the round is over (bounded); its result."""
        deadline = time.monotonic() + self.opts.bound_s
        while True:
            result = await self._command(table, verb, payload)
            if result.get("ok"):
                return result
            if time.monotonic() > deadline:
                raise InvariantBroken("commands answered", f"{table} {verb} still refused after "
                                      f"{self.opts.bound_s:g} s: {result.get('error')}")
            await asyncio.sleep(0.1)

    # -- journals -----------------------------------------------------------------------------------

    def _check_journals(self, *, final: bool) -> None:
        """With the pit down: every journal replayed from its first input gives what the table recovers.

        The replay goes on from where the last check stopped (a journal only grows), so a long
        soak pays for each input once, not at every kill.
        """
        from controller.journal.anchor import load_key
        from controller.service.core import TableCore

        rules = self.opts.rules
        for table_id in self.table_ids:
            path = self.state_dir / "journals" / f"{table_id}.journal"
            if not path.exists():
                continue
            try:  # read as a lab would: beside no writer, under the table's key, the whole chain checked
                journal = Journal.open_readonly(path, key=load_key(path.parent / "journal.key"))
                journal.verify()
            except JournalError as e:
                raise InvariantBroken("journal verifies", f"{table_id}: {e}") from None
            try:
                replay = self._replays.setdefault(table_id, _Replay(Table(rules, narrate=False)))
                replay.advance(table_id, journal, rules.decks)
                replayed = replay.engine.snapshot()["totals"]
                core = TableCore(table_id, rules, journal, None)
                core.recover()
                recovered = core.table.snapshot()["totals"]
                if replayed != recovered:
                    raise InvariantBroken("totals equal a replay of the journal",
                                          f"{table_id}: replayed {replayed}, recovered {recovered}")
                if final:
                    published = self.checker.tables.get(table_id)
                    seen = published.state.get("totals") if published is not None else None
                    if seen != replayed:
                        raise InvariantBroken("totals equal a replay of the journal",
                                              f"{table_id}: published {seen}, replayed {replayed}")
            finally:
                journal.close()

    # -- the whole run ------------------------------------------------------------------------------

    async def run(self) -> str:
        started = time.monotonic()
        await self.broker.start()
        self._tasks = [asyncio.create_task(self._subscriber()), asyncio.create_task(self._acknowledger()),
                       asyncio.create_task(self._progress_watch())]
        if isinstance(self.broker, SoakFloor):
            for role in SOAK_PEOPLE:  # the subscriber is the pit's user; each other role its own connection
                if role != "pit":
                    self.senders[role] = None
                    self._tasks.append(asyncio.create_task(self._sender(role)))
        try:
            await asyncio.wait_for(self.connected.wait(), 30)
            recorder_faults: asyncio.Task[None] | None = None
            if self.recorder is not None:
                await self.recorder.start()
                recorder_faults = asyncio.create_task(self.recorder.faults(self.opts.step_s))
                self._tasks.append(recorder_faults)
            await self._start_pit()
            n = 0
            while True:
                pit = self.pit
                if pit is not None and pit.returncode is not None:
                    break
                n += 1
                step = asyncio.create_task(self._run_step(n))
                while not step.done():
                    await asyncio.wait({step}, timeout=0.5)
                    if self.broken is not None or (self.pit is not None and self.pit.returncode is not None
                                                   and not self.blocked):
                        break
                if not step.done():
                    step.cancel()
                    with contextlib.suppress(BaseException):
                        await step
                else:
                    step.result()
                self._check()
                self._check_recorder()
            self.step = "end"
            pit = self.pit
            assert pit is not None
            code = await pit.wait()
            if code != 0:
                tail = self.pit_logs[-1].read_text(errors="replace")[-1500:]
                raise InvariantBroken("the pit plays its rounds", f"the pit exited {code}: {tail}")
            for _ in range(3):  # the broker was away as the pit ended: a restarted pit delivers what is left
                if not self._undelivered():
                    break
                await self._start_pit()
                assert self.pit is not None
                await self.pit.wait()
            await self._drain()
            self._check()
            self._check_journals(final=True)
            if self.recorder is not None:
                self.step = "end (the recorder catching up)"
                if recorder_faults is not None:
                    recorder_faults.cancel()
                    await asyncio.gather(recorder_faults, return_exceptions=True)
                if self.recorder.proc is None:  # its fault schedule was stopped while it was down
                    await self.recorder.start()
                await self.recorder.check_final(self.state_dir / "journals", self.table_ids, self._journal_key())
                self._check()
            rounds = sum(v.rounds_settled for v in self.checker.tables.values())
            c = self.counts
            opts_cluster = bool(self.opts.cluster)
            nodes = (f"{c.node_losses} node losses, {c.quorum_losses} quorum losses"
                     if isinstance(self.broker, SoakFloor) else f"{c.outages} broker outages")
            if self.recorder is not None:
                nodes += f", {self.recorder.kills} recorder kills"
            reordered = (f", {self.checker.reordered} out of order, {self.checker.stale_states} stale states"
                         if opts_cluster else "")
            return (f"soak: seed {self.opts.seed}: {self.opts.tables} tables x {self.opts.rounds} rounds on "
                    f"{self.broker.kind}: {rounds} rounds settled, {self.checker.events} events "
                    f"({self.checker.repeats} repeats{reordered}), {c.faults} device faults, {c.kills} kills, {nodes}, "
                    f"{c.commands} commands ({c.refused_as_expected} refused as expected), "
                    f"{c.acks} alarms acknowledged, {c.steps} steps: every invariant held "
                    f"({time.monotonic() - started:.0f} s)")
        finally:
            await self._kill_pit()
            await cancel_and_wait(self._tasks)  # the recorder's fault schedule among them: it restarts it no more
            if self.recorder is not None:
                await self.recorder.stop()
            with contextlib.suppress(Exception):
                await self.broker.stop()

    def _undelivered(self) -> bool:
        """Whether a journal holds records its table never got the broker to take (read beside no writer)."""
        for table_id in self.table_ids:
            path = self.state_dir / "journals" / f"{table_id}.journal"
            if path.exists():
                with Journal.open_readonly(path) as journal:
                    if journal.delivered_upto < journal.last_seq:
                        return True
        return False

    async def _drain(self) -> None:
        """After the pit's clean exit: every table's last journaled seq reaches the subscriber."""
        last: dict[str, int] = {}
        for table_id in self.table_ids:
            path = self.state_dir / "journals" / f"{table_id}.journal"
            with Journal.open_readonly(path) as journal:
                last[table_id] = journal.last_seq
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            views = self.checker.tables
            if all(t in views and views[t].top >= seq for t, seq in last.items()):
                return
            await asyncio.sleep(0.1)
        behind = {t: (self.checker.tables[t].top if t in self.checker.tables else 0, s) for t, s in last.items()}
        raise InvariantBroken("every seq once, in order", f"the subscriber never got the last events: {behind}")


async def run_soak(opts: SoakOptions) -> int:
    """Run the soak; 0 when every invariant held after every step, 1 naming the seed, step and invariant."""
    soak = _Soak(opts)
    try:
        summary = await soak.run()
    except InvariantBroken as e:
        print(f"soak: FAILED at seed {opts.seed}, {soak.step}: {e}", file=opts.out, flush=True)
        print(f"soak: reproduce with: tablectl soak --tables {opts.tables} --rounds {opts.rounds} "
              f"--seed {opts.seed} --profile {opts.profile}"
              + ("" if opts.journal_sync == "FULL" else f" --journal-sync {opts.journal_sync}")
              + (f" --cluster {opts.cluster}" if opts.cluster else "") + (" --recorder" if opts.recorder else ""),
              file=opts.out, flush=True)
        print(f"soak: journals and logs kept in {soak.state_dir}", file=opts.out, flush=True)
        return 1
    except Exception as e:  # the soak's own machinery (a broker that cannot restart, ...): say where, keep the logs
        print(f"soak: ERROR at seed {opts.seed}, {soak.step}: {type(e).__name__}: {str(e).strip()[:2000]}",
              file=opts.out, flush=True)
        print(f"soak: journals and logs kept in {soak.state_dir}", file=opts.out, flush=True)
        return 1
    print(summary, file=opts.out, flush=True)
    if opts.state_dir is None:
        shutil.rmtree(soak.state_dir, ignore_errors=True)
    return 0
