"""A whole simulated pit on one machine: K tables, each with its devices, service and people.

Each table is the real table service (:class:`controller.service.table_service.TableService`:
engine + SQLite journal + MQTT publisher) on the real drivers, talking to the four simulated
devices of :class:`simulators.SimTable` (shoe, shuffler and chip sensors on ptys, the console
on the pyusb backend). Its people are a :class:`controller.sim.crew.SimCrew`: players put chips
on the sensors, the dealer pulls cards from the simulated shoe and presses console buttons,
each choice made by :class:`controller.sim.dealer.SimulatedDealer` from the seed and the
engine's state. The journal is the table's memory: a demo restarted on the same
``state_dir`` replays it, puts the simulators back where the table was and carries on, so a
demo killed with ``kill -9`` at any moment and restarted any number of times settles
exactly the rounds an uninterrupted run of the same seed settles.

Without a broker URL the embedded broker (one NATS node, users and passwords generated:
:mod:`controller.floor.embedded_broker`) is started on 127.0.0.1 (MQTT and WebSockets), and the pit
dashboard is served beside it when its files are installed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO

from controller.analytics.live import theory_for
from controller.cancelling import cancel_and_wait
from controller.contract.results import CommandResult
from controller.contract.topics import CommandTopic
from controller.game.effects import Record
from controller.game.rules import Rules
from controller.journal import Journal, Synchronous
from controller.journal.admission import Adoption, admit, open_verified
from controller.journal.anchor import Anchor, default_anchor_dir, load_key
from controller.journal.witnesses import Witness
from controller.mqtt.addresses import redact_url
from controller.mqtt.late_witness import LateWitness, late_witness
from controller.mqtt.options import BrokerOptions
from controller.mqtt.publisher import MqttPublisher
from controller.mqtt.witness import broker_witnesses, read_retained
from controller.selfcheck.gate import program_watch
from controller.service.clock import TableClock
from controller.service.core import TableCore
from controller.service.ratings import enable_ratings
from controller.service.table_service import TableService
from controller.sim.carded import carded_players
from controller.sim.crew import SimCrew
from controller.sim.dealer import SimulatedDealer
from controller.sim.demo_resume import check_resume
from controller.sim.duty import DealerDuty
from controller.sim.roster import ReliefSchedule, table_roster
from controller.stop_signals import on_stop_signals
from drivers.events import Health

if TYPE_CHECKING:
    from controller.floor.cluster import NatsCluster
from simulators.hardware import SimTable

log = logging.getLogger("controller.sim.demo")

Speed = Literal["realtime", "fast", "max"]

#: pause after each kind of act, in seconds, per speed
PACE: dict[str, dict[str, float]] = {
    "realtime": {"card": 0.6, "bet": 0.4, "decision": 1.2, "other": 0.8, "settled": 3.0},
    "fast": {"card": 0.02, "bet": 0.01, "decision": 0.03, "other": 0.02, "settled": 0.1},
    "max": {"card": 0.0, "bet": 0.0, "decision": 0.0, "other": 0.0, "settled": 0.0},
}
#: how long the simulated shuffler takes, per speed
SHUFFLE_TIME: dict[str, float] = {"realtime": 3.0, "fast": 0.2, "max": 0.0}
#: pause between two polls of the chip-sensor bus, per speed
CHIPS_POLL: dict[str, float] = {"realtime": 0.05, "fast": 0.01, "max": 0.001}


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
    tick_every: float = 30.0
    broker_port: int | None = None  # the embedded broker's MQTT port (None: a free one)
    broker_ws_port: int | None = None  # its WebSockets port (None: a free one)
    chaos_seed: int | None = None  # device faults drawn from this seed (tablectl soak): controller/sim/chaos.py
    journal_sync: Synchronous = "FULL"  # NORMAL: survives kill -9, not a power cut (soaks and benches)
    shuffler: str = "good"  # the simulated shuffler: good, weak (broken one-pass), clumpy (simulators/shuffler.py)
    counter_spot: int | None = None  # a Hi-Lo counter keeps this spot at every table (controller/strategy/counter.py)
    carded: int = 0  # carded players at every table, their cards in the readers: rated (controller/sim/carded.py)
    adopt: Adoption | None = None  # take journals no witness vouches for (--adopt-journal; journaled)
    cluster: int = 0  # a NATS cluster of this many nodes in <state-dir>/cluster instead of the embedded broker
    cluster_dir: Path | None = None  # the cluster's directory when someone else runs it (tablectl soak): not started
    first_table: int = 1  # the tables are t<first> onwards (several demos on one floor: benchmarks/floor_200.py)
    temporary: bool = False  # the state dir is run_demo's own temporary one, removed at exit (no --state-dir)


#: how a person takes a demo's journals that no witness vouches for
DEMO_ADOPT_HINT = "tablectl demo --state-dir DIR ... --adopt-journal --operator NAME --reason TEXT"
#: where a demo's new journals come from
DEMO_NEW_HINT = "a demo on a fresh --state-dir"


def _open_verified(state_dir: Path, table_id: str, synchronous: Synchronous, fresh: bool) -> tuple[Journal, Anchor]:
    """The table's journal, keyed by ``<state-dir>/journal.key`` and anchored in the user's state folder
    (``$XDG_STATE_HOME/tablectl/anchors``; ``docs/journal.md``), every row verified, not yet admitted.
    ``fresh``: the state directory's demo never journaled anything (:func:`_nothing_journaled`), so its journals
    are new on purpose; otherwise each must be there (and then be vouched for, or adopted:
    :func:`controller.journal.admission.admit`)."""
    return open_verified(state_dir / f"{table_id}.journal", table_id=table_id, key_file=state_dir / "journal.key",
                         new=fresh, new_hint=DEMO_NEW_HINT, synchronous=synchronous)


def _open_journal(state_dir: Path, table_id: str, opts: DemoOptions, fresh: bool | None,
                  witnesses: Sequence[Witness] = ()) -> Journal:
    """The table's journal verified and admitted (``fresh`` None: fresh when the state dir has no key yet)."""
    if fresh is None:
        fresh = not (state_dir / "journal.key").exists()
    journal, anchor = _open_verified(state_dir, table_id, opts.journal_sync, fresh)
    try:
        admit(journal, anchor, new=fresh, witnesses=witnesses, adopt=opts.adopt, adopt_hint=DEMO_ADOPT_HINT)
    except BaseException:
        journal.close()
        raise
    return journal


#: the demo's tables stand in pits of this many: t01-t08 in ``pit-1``, t09-t16 in ``pit-2``, ...
DEMO_PIT_TABLES = 8


def demo_pit(table_id: str) -> str:
    """The pit of a demo table (``t09`` -> ``pit-2``), so the floor page and the reports have pits to group."""
    return f"pit-{(int(table_id.lstrip('t')) - 1) // DEMO_PIT_TABLES + 1}"


async def pit_witnesses(broker_url: str, prefix: str, table_ids: Sequence[str], *,
                        login: tuple[str, str] | None = None) -> dict[str, list[Witness]]:
    """The broker's retained ``state`` of each table and the central recorder's position of it as its witnesses,
    read in one connection for the whole pit (``<prefix>/+/state``, ``<prefix>/recorder/+``): at most about 2 s
    when the broker does not answer, not 2 s a table. ``login``: a user that reads every table's state (a
    floor's cluster refuses anonymous clients)."""
    user, password = login if login is not None else (None, None)
    found = await read_retained(broker_url, prefix=prefix, table_ids=table_ids, username=user, password=password)
    return {t: broker_witnesses(t, broker_url, found[t]) for t in table_ids}


class DemoTable:
    """One simulated table: its devices on ptys and the pyusb backend, its service, its crew."""

    #: up to this many tables the serial devices sit behind ptys; above, on the in-memory ``sim:``
    #: backend (same drivers and bytes, no kernel): a table on ptys holds ~25 descriptors, on ``sim:``
    #: ~5, so a big pit stays under a 1024 descriptor limit; CPU per round is within ~10 % (benchmarks/pit.py)
    pty_tables_max: int = 20

    def __init__(self, table_id: str, opts: DemoOptions, state_dir: Path, broker_url: str, out: TextIO, *,
                 journal: Journal | None = None, fresh: bool | None = None, brokers: Sequence[str] = (),
                 password: str | None = None, late: LateWitness | None = None) -> None:
        """``journal``: the table's journal, already admitted (:func:`run_demo`); else it is opened here, new when
        ``fresh`` (None: when the state dir has no key yet), otherwise vouched for by its anchor. ``brokers`` and
        ``password``: a floor's cluster (``--cluster``), every node and the table's own password. ``late``: the
        broker's witnesses to ask at the first connection (they could not be asked at start)."""
        self.table_id = table_id
        self.opts = opts
        self.out = out
        #: the engine's totals at the last round settled here (the closing line's, a round in play left out)
        self.settled_totals: dict[str, Any] | None = None
        self.journal = journal if journal is not None else _open_journal(state_dir, table_id, opts, fresh)
        broker = BrokerOptions(brokers or [broker_url], username=table_id if password is not None else None,
                               password=password)
        self.publisher = MqttPublisher(
            self.journal, table_id=table_id, broker=broker, prefix=opts.prefix, on_command=self._command,
            first_contact=late.ask if late is not None else None, on_halt=lambda exc: self.service.halt_on_witness(exc),
        )
        clock = TableClock()  # the table's monotonic time, the wall clock watched (as tablectl run)
        self.core = TableCore(table_id, opts.rules, self.journal, self.publisher, clock=clock, pit=demo_pit(table_id))
        #: the carded players (rated play): a reader at each spot, the book in the core
        self.carded = tuple(p for p in carded_players(opts.seed, table_id, opts.rules.spots, opts.carded)
                            if p.spot != opts.counter_spot) if opts.carded else ()
        if self.carded:
            enable_ratings(self.core)
        self.links = Path(tempfile.mkdtemp(prefix=f"tablectl-{table_id}-devices-"))
        self.sim = SimTable(self.links, decks=opts.rules.decks, shuffle_time=SHUFFLE_TIME[opts.speed],
                            backend="pty" if opts.tables <= self.pty_tables_max else "sim",
                            card_readers=bool(self.carded))
        self.service = TableService(
            self.core, self.sim.device_group(chips_poll_s=CHIPS_POLL[opts.speed]), open_if_new=True,
            on_record=self._record, tick_every=opts.tick_every, clock=clock,
            program=program_watch(),  # tablectl demo's check
        )
        self.crew = SimCrew(self.service, self.sim, SimulatedDealer(opts.rules, seed=opts.seed, table_id=table_id,
                                                                       shuffler=opts.shuffler,
                                                                       counter_spot=opts.counter_spot,
                                                                       regulars=self.carded),
                            pace=PACE[opts.speed], rounds=opts.rounds,
                            duty=DealerDuty(self.service, self.sim, ReliefSchedule(
                                table_roster(state_dir, table_id), seed=opts.seed, table_id=table_id)))

    @property
    def rounds_left(self) -> int | None:
        return self.crew.rounds_left

    async def _command(self, command: CommandTopic, payload: bytes) -> CommandResult:
        return await self.service.on_command(command, payload)

    def _record(self, record: Record) -> None:
        if record.type == "round_settled":
            self.settled_totals = record.data.get("totals")
            if not self.opts.quiet:
                print(summary_line(self.table_id, record.data), file=self.out, flush=True)

    def totals_line(self) -> str:
        """The closing line: the totals of the settled rounds, as ``tablectl report`` counts them (a round cut
        short by Ctrl-C is in the engine's totals with its wagers, not settled: said, not counted)."""
        engine = self.core.table
        totals = engine.snapshot()["totals"]
        note = ""
        if engine.round_open:
            if self.settled_totals is not None:
                totals = self.settled_totals
                note = f" (round {engine.round} in play: not counted)"
            else:
                note = f" (with round {engine.round} in play)"
        return (f"{self.table_id}: rounds {totals['rounds']} handle {totals['handle']} "
                f"house_net {totals['house_net']}{note}")

    async def run(self) -> None:
        """Play until the round budget is spent (or forever); the caller cancels to stop."""
        self.service.recover()
        if self.rounds_left == 0:
            await self._deliver_leftovers()
            return
        self.crew.restore()
        if self.sim.cards is not None:  # the carded players' cards in their readers (read again after a restart)
            for player in self.carded:
                self.sim.cards.insert(player.spot, player.number)
        await self.sim.start()
        await self.service.start()
        play = asyncio.ensure_future(self.crew.play())
        chaos: asyncio.Future[None] | None = None
        if self.opts.chaos_seed is not None:
            from controller.sim.chaos import DeviceChaos

            chaos = asyncio.ensure_future(DeviceChaos(self.service, self.sim, seed=self.opts.chaos_seed,
                                                      out=self.out).run())
        try:
            await asyncio.wait({play, self.service.failed, *([chaos] if chaos else [])},
                               return_when=asyncio.FIRST_COMPLETED)
        finally:
            running = [task for task in (play, chaos) if task is not None and not task.done()]
            await cancel_and_wait(running)
            for task in running:  # one that failed as it was stopped: its error, as before
                if not task.cancelled() and task.exception() is not None:
                    task.result()
        if self.service.failed.done():
            self.service.failed.result()  # the service broke down: this table ends with its error
        if chaos is not None and chaos.done() and not chaos.cancelled():
            chaos.result()  # the fault injector itself broke: a soak must not pass without its faults
        play.result()

    async def _deliver_leftovers(self) -> None:
        """Nothing left to play, but records the pit never got (the broker was away when the last run
        ended) go out first: the journal is the outbox, and a run that ends at once must not keep them."""
        journal = self.journal
        if journal.delivered_upto >= journal.last_seq:
            return
        await self.publisher.start()
        self.core.publish_all()
        with contextlib.suppress(TimeoutError):
            await self.publisher.wait_drained(timeout=DELIVER_TIMEOUT_S)

    async def close(self) -> None:
        """Stop the service (publish what is left, go offline), then the simulated devices, then the journal.

        Each step is bounded (:data:`CLOSE_STEP_S`) and one that runs over is named in the log: a Ctrl-C on a
        pit must end even when one table's devices or broker do not answer (the 200-table acceptance run once
        waited over 120 s for a process of 50 tables to close)."""
        try:
            await asyncio.wait_for(self.service.stop(), CLOSE_STEP_S)
        except TimeoutError:
            log.warning("%s: stopping its service took over %g s: closed without it", self.table_id, CLOSE_STEP_S)
        try:
            await asyncio.wait_for(self.sim.stop(), CLOSE_STEP_S)
        except TimeoutError:
            log.warning("%s: stopping its simulated devices took over %g s: closed without them", self.table_id,
                        CLOSE_STEP_S)
        except Exception as exc:
            log.info("%s: stopping its simulated devices: %r", self.table_id, exc)
        self.journal.close()
        shutil.rmtree(self.links, ignore_errors=True)


def demo_table_ids(opts: DemoOptions) -> list[str]:
    """The ids of the demo's tables: ``t01`` (or ``t<first_table>``) onwards, two digits at least."""
    return [f"t{i:02d}" for i in range(opts.first_table, opts.first_table + opts.tables)]


async def run_demo(opts: DemoOptions, out: TextIO | None = None) -> int:
    """:func:`play_demo` on ``opts.state_dir``; without one, on a fresh temporary directory removed at exit with
    the anchors its journals left in the user's state folder (nobody can resume it: its key goes with it).
    ``out``: where the demo prints (default: ``sys.stdout`` as it is when the demo runs, not at import)."""
    if opts.state_dir is not None:
        return await play_demo(opts, out)
    state_dir = Path(tempfile.mkdtemp(prefix="tablectl-demo-"))
    try:
        return await play_demo(replace(opts, state_dir=state_dir, temporary=True), out)
    finally:
        # the theoretical figures are kept in the state dir by a worker: not written after the directory is gone
        theory = theory_for(opts.rules, state_dir / ".theory")
        if not theory.cancel():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.wrap_future(theory), THEORY_WAIT_S)
        _remove_temporary(state_dir, demo_table_ids(opts))


#: how long a temporary demo at its end waits for its theoretical figures to be written before removing them
THEORY_WAIT_S = 60.0


def _remove_temporary(state_dir: Path, table_ids: Sequence[str]) -> None:
    """A temporary demo's journals, key and anchors, gone: a fresh demo every time, nothing left in /tmp."""
    key_file = state_dir / "journal.key"
    if key_file.exists():
        with contextlib.suppress(Exception):  # an unreadable key leaves its anchors: nothing else to do
            key = load_key(key_file)
            for table_id in table_ids:
                Anchor(default_anchor_dir(), table_id, key).path.unlink(missing_ok=True)
    shutil.rmtree(state_dir, ignore_errors=True)


def _nothing_journaled(state_dir: Path, table_ids: Sequence[str]) -> bool:
    """Whether this state dir's demo never journaled anything: no key, or a key made by a first start that was cut
    (killed, a power cut) before any table's journal was made, so no journal and no anchor of any table. Then its
    journals are new on purpose; one table's journal or anchor there, and each missing journal is refused."""
    key_file = state_dir / "journal.key"
    if not key_file.exists():
        return True
    if any((state_dir / f"{table_id}.journal").exists() for table_id in table_ids):
        return False
    try:
        key = load_key(key_file)
    except Exception:  # an unreadable key: the journals' own opening says why
        return False
    return not any(Anchor(default_anchor_dir(), table_id, key).path.exists() for table_id in table_ids)


async def play_demo(opts: DemoOptions, out: TextIO | None = None) -> int:
    """Run the pit until every table has played its rounds (exit 0) or Ctrl-C (exit 0, tables closed).

    Exit 1, with one line on stderr naming the tables and why, when a table was not served: its service
    or crew failed, or its devices did not all answer within ``START_TIMEOUT_S`` of being opened (that
    table is stopped, the others play on). ``out``: as :func:`run_demo`'s.
    """
    out = sys.stdout if out is None else out  # the one of now: the one at import may have been closed since
    state_dir = opts.state_dir or Path(tempfile.mkdtemp(prefix="tablectl-demo-"))
    state_dir.mkdir(parents=True, exist_ok=True)
    fresh = _nothing_journaled(state_dir, demo_table_ids(opts))  # a fresh state dir: new journals, on purpose
    check_resume(state_dir, fresh=fresh, seed=opts.seed,
                 shuffler=opts.shuffler)  # DemoOptionsDiffer (exit 2, naming it) before anything starts
    broker = None
    broker_url = opts.broker
    ws_url: str | None = None
    floor: tuple[NatsCluster, dict[str, str]] | None = None  # --cluster N: the NATS nodes, every user's password
    if opts.cluster:
        from controller.floor.cluster import demo_cluster

        cluster, passwords = demo_cluster(opts.cluster_dir or state_dir / "cluster",
                                          demo_table_ids(opts),
                                          nodes=opts.cluster, prefix=opts.prefix)
        floor = cluster, passwords
        if opts.cluster_dir is None:  # the demo's own cluster (a soak runs its own, and kills its nodes)
            await asyncio.to_thread(cluster.start)
            try:
                await cluster.ensure_stream()  # the floor's durable log of every table's events
            except BaseException:
                await asyncio.to_thread(cluster.stop)
                raise
        broker_url, ws_url = cluster.mqtt_urls[0], ",".join(cluster.ws_urls)
    elif broker_url is None:
        from controller.floor.embedded_broker import EmbeddedBroker

        broker = EmbeddedBroker(state_dir / "broker", demo_table_ids(opts), prefix=opts.prefix,
                                port=opts.broker_port, ws_port=opts.broker_ws_port)
        await broker.start()
        broker_url, ws_url = broker.url, broker.ws_url
    tables: list[DemoTable] = []
    table_ids = demo_table_ids(opts)
    passwords = floor[1] if floor else broker.passwords if broker else {}  # each table's own, on our brokers
    opened: dict[str, tuple[Journal, Anchor]] = {}
    try:
        for table_id in table_ids:  # every journal checked here first, then the network asked
            opened[table_id] = _open_verified(state_dir, table_id, opts.journal_sync, fresh)
        witnesses: dict[str, list[Witness]] = {}
        if broker is None and not fresh:  # an outside broker (the embedded one, started just now, retains nothing)
            witnesses = await pit_witnesses(broker_url, opts.prefix, table_ids,
                                            login=("dashboard", floor[1]["dashboard"]) if floor else None)
        for table_id in table_ids:
            journal, anchor = opened.pop(table_id)
            try:
                admit(journal, anchor, new=fresh, witnesses=witnesses.get(table_id, ()), adopt=opts.adopt,
                      adopt_hint=DEMO_ADOPT_HINT)
                tables.append(DemoTable(table_id, opts, state_dir, broker_url, out, journal=journal,
                                        brokers=floor[0].mqtt_urls if floor else (),
                                        password=passwords.get(table_id),
                                        late=late_witness(journal, table_id, opts.prefix,
                                                          witnesses.get(table_id, ()))))
            except BaseException:
                journal.close()
                raise
    except BaseException:  # e.g. a journal another demo holds: leave nothing running behind
        for journal, _ in opened.values():
            journal.close()
        for t in tables:
            await t.close()
        if broker is not None:
            await broker.stop()
        if floor is not None and opts.cluster_dir is None:
            await asyncio.to_thread(floor[0].stop)
        raise
    dashboard = None
    recorder = None  # --cluster N: the central recorder into <state-dir>/recorder.db, subscribed before any table plays
    # (not on a cluster someone else runs, --cluster-dir: its runner runs the recorder, or none; two recorders
    # would take each other's session)
    if floor is not None and opts.cluster_dir is None:
        from controller.recorder.backfill import StreamSource
        from controller.recorder.service import RecorderOptions, start_recorder

        try:
            admin, admin_password = floor[0].admin_login()  # gaps are filled from the TABLES stream
            stream = StreamSource([f"nats://{floor[0].bind}:{n.client}" for n in floor[0].nodes], admin,
                                  admin_password, prefix=opts.prefix)
            recorder = await start_recorder(RecorderOptions(
                BrokerOptions(floor[0].mqtt_urls, password=floor[1]["recorder"]), db=str(state_dir / "recorder.db"),
                prefix=opts.prefix, stream=stream))
        except BaseException:
            for t in tables:
                await t.close()
            await asyncio.to_thread(floor[0].stop)
            raise
        print(f"Recorder: {state_dir / 'recorder.db'} (tablectl recall --db, report --db, ratings --db)", file=out)
        nodes = ",".join(floor[0].mqtt_urls)
        print(f"NATS cluster of {len(floor[0].nodes)} nodes in {floor[0].dir}: {nodes}", file=out)
        print(f"Dashboard login: user dashboard, password in {floor[0].dir / 'credentials.toml'}", file=out)
        from controller.floor.cluster import DEMO_PEOPLE

        people = ", ".join(f"{role} {names[0]}" for role, names in DEMO_PEOPLE.items() if names[0] in floor[1])
        if people:  # each with the password credentials.toml holds, as the dashboard's
            print(f"People (role user): {people}; passwords in {floor[0].dir / 'credentials.toml'}", file=out)
    print(f"MQTT broker: {redact_url(broker_url)}" + (" (embedded)" if broker else ""), file=out)
    if broker is not None:
        people = "; ".join(f"{role} {', '.join(names)}" for role, names in broker.people.items())
        print(f"Dashboard login: user dashboard, password in {broker.credentials} (theirs too: {people})", file=out)
    if ws_url:
        print(f"MQTT over WebSockets: {ws_url}", file=out)
        if opts.dashboard:
            try:
                from controller.dashboard.server import serve_dashboard

                dashboard = serve_dashboard(opts.dashboard_port, ws_url, opts.prefix)
                print(f"Pit dashboard: {dashboard.url}", file=out)
            except (FileNotFoundError, OSError) as e:
                print(f"Pit dashboard not served: {e}", file=out)
    logins = floor[0].dir / "credentials.toml" if floor else broker.credentials if broker else None
    if logins is not None:  # the cluster and the embedded broker refuse anonymous clients; passwords never printed
        node = broker_url.removeprefix("mqtt://")
        # one table's state, once: the whole tree (every event, the history) floods a terminal
        print(f"Subscribe: mosquitto_sub -L 'mqtt://dashboard:PASSWORD@{node}/{opts.prefix}/{table_ids[0]}/state' "
              f"-C 1 (PASSWORD: in {logins}; events: .../events -C 10)", file=out)
    else:
        print(f"Subscribe: mosquitto_sub -L '{redact_url(broker_url)}/{opts.prefix}/{table_ids[0]}/state' -C 1 "
              f"(events: .../{table_ids[0]}/events -C 10)", file=out)
    kept = " (removed at exit: --state-dir DIR keeps them)" if opts.temporary else ""
    print(f"Journals: {state_dir}{kept}  tables: {', '.join(t.table_id for t in tables)}  profile: {opts.rules.name}",
          file=out, flush=True)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    restore_signals = on_stop_signals(loop, stop.set)
    tasks = {t.table_id: asyncio.create_task(t.run(), name=t.table_id) for t in tables}
    stopper = asyncio.create_task(stop.wait())
    not_served: dict[str, str] = {}  # table id -> why: any entry makes the exit code 1
    starts = _StartWatch(tables)
    watchdog = asyncio.create_task(_watch_starts(starts, tasks, not_served))
    try:
        pending: set[asyncio.Task[Any]] = {*tasks.values()}
        while pending:
            done, pending = await asyncio.wait(pending | {stopper}, return_when=asyncio.FIRST_COMPLETED)
            pending.discard(stopper)
            if stopper in done:
                print("stopping: closing every table", file=out, flush=True)
                break
            for task in done:
                if not task.cancelled() and (exc := task.exception()) is not None:  # cancelled: the watchdog's
                    why = _why(starts.tables[task.get_name()], exc)
                    not_served.setdefault(task.get_name(), why)
                    log.warning("%s stopped, not served: %s", task.get_name(), why)
    finally:
        watchdog.cancel()
        # stopped early: a table whose devices were opened a while ago and never all answered was not served
        for table_id, why in starts.check(asyncio.get_running_loop().time(), STOP_GRACE_S).items():
            not_served.setdefault(table_id, why)
        await cancel_and_wait(tasks.values())
        stopper.cancel()
        lasts = {t.table_id: t.journal.last_seq for t in tables}
        # all at once: a pit of 50 tables closed one by one waited for each table's last figures in turn
        closing = await asyncio.gather(*(t.close() for t in tables), return_exceptions=True)
        for t, result in zip(tables, closing, strict=True):
            if isinstance(result, BaseException):
                log.warning("%s: closing: %r", t.table_id, result)
        if recorder is not None:  # after the tables: it records what they sent before closing
            await recorder[0].wait_recorded(lasts, timeout=DELIVER_TIMEOUT_S)
            recorder[0].stop()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(recorder[1], 30)
        if dashboard is not None:
            dashboard.stop()
        if broker is not None:
            await broker.stop()
        if floor is not None and opts.cluster_dir is None:
            await asyncio.to_thread(floor[0].stop)
        restore_signals()
    for t in tables:
        print(t.totals_line(), file=out, flush=True)
    if not_served:
        print(not_served_line(not_served, len(tables)), file=sys.stderr, flush=True)
        return 1
    return 0


#: how long a table with no rounds left waits for the broker to take the records it still holds
DELIVER_TIMEOUT_S = 30.0
#: the longest one step of a table's close may take (:meth:`DemoTable.close`): the service's stop waits at most
#: about 22 s itself (its last theoretical figures, its drain, its offline), the devices a few
CLOSE_STEP_S = 60.0
#: a table whose devices are not all answering this long after they were opened cannot start (exit 1)
START_TIMEOUT_S = 30.0
#: at Ctrl-C, a table whose devices were opened this long ago and never all answered was not served
STOP_GRACE_S = 3.0
_UP = (Health.OK, Health.DEGRADED)


class _StartWatch:
    """The tables whose devices have not all answered yet, and since when their devices are open."""

    def __init__(self, tables: list[DemoTable]) -> None:
        self.tables = {t.table_id: t for t in tables}
        self.waiting = dict(self.tables)
        self.opened: dict[str, float] = {}

    def check(self, now: float, timeout: float) -> dict[str, str]:
        """Forget the tables now up; return (and forget) those open ``timeout`` s and still not up, with why."""
        failed: dict[str, str] = {}
        for table_id, t in list(self.waiting.items()):
            devices = t.service.devices.devices
            if all(d.health in _UP for d in devices.values()):
                del self.waiting[table_id]
                continue
            if all(d.health == Health.CLOSED for d in devices.values()):
                continue  # not opened yet
            if now - self.opened.setdefault(table_id, now) >= timeout:
                del self.waiting[table_id]
                down = ", ".join(f"{name} {d.health.value}" + (f" ({d.health_reason})" if d.health_reason else "")
                                 for name, d in devices.items() if d.health not in _UP)
                failed[table_id] = _no_paths(t, f"cannot start: devices not answering {timeout:g} s after "
                                                f"opening: {down}")
        return failed


async def _watch_starts(starts: _StartWatch, tasks: dict[str, asyncio.Task[None]], not_served: dict[str, str]) -> None:
    """Cancel (and report) every table whose devices do not all answer within START_TIMEOUT_S of opening."""
    loop = asyncio.get_running_loop()
    while starts.waiting:
        await asyncio.sleep(0.25)
        for table_id in [i for i in starts.waiting if tasks[i].done()]:
            del starts.waiting[table_id]
        failed = starts.check(loop.time(), START_TIMEOUT_S)
        for table_id, why in failed.items():
            not_served.setdefault(table_id, why)
            tasks[table_id].cancel()
            log.warning("%s stopped, not served: %s", table_id, why)


def _no_paths(table: DemoTable, text: str) -> str:
    """``text`` without the table's own device directory and id, so equal causes read equal."""
    text = text.replace(str(table.links), "<devices>")
    return text.removeprefix(f"{table.table_id}: ")


def _why(table: DemoTable, exc: BaseException) -> str:
    return _no_paths(table, f"{type(exc).__name__}: {exc}" if str(exc) else repr(exc))


def not_served_line(not_served: dict[str, str], tables: int) -> str:
    """One line naming the tables that were not served, grouped by why."""
    by_why: dict[str, list[str]] = {}
    for table_id, why in sorted(not_served.items()):
        by_why.setdefault(why, []).append(table_id)
    causes = "; ".join(f"{', '.join(ids)}: {why}" for why, ids in by_why.items())
    return f"demo: {len(not_served)} of {tables} table{'s' if tables != 1 else ''} not served: {causes}"


def summary_line(table_id: str, data: dict[str, Any]) -> str:
    """One line per settled round, for a terminal: dealer result, each spot's net, running totals."""
    d = data["dealer"]
    dealer = "blackjack" if d["blackjack"] else ("bust" if d["total"] > 21 else str(d["total"]))
    nets = " ".join(f"s{spot}:{'+' if not net.startswith('-') else ''}{net}" for spot, net in data["nets"].items())
    t = data["totals"]
    return (f"{table_id} round {data['round']:>4}: dealer {dealer:>9} | {nets:<40} | "
            f"handle {t['handle']} house {t['house_net']}")
