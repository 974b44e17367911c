"""The table service: the table's devices, through the round engine, to the journal and MQTT.

One asyncio loop runs everything of one table:

* a pump reads the merged device events (:class:`drivers.DeviceGroup`), translates each
  (:mod:`controller.service.device_inputs`) and applies the inputs through :class:`TableCore`, which
  journals them durably before anything is published;
* an input the engine refuses never changes the round: when it came from a device it is
  journaled as an :class:`Irregularity`, an alarm the pit sees and acknowledges;
* the engine's device commands (peek, turn the hole card, shuffle, lock or open the shoe's
  gate) go to one worker per device, so a slow or unplugged device never blocks the engine;
  the console's lights follow the table (what the dealer may press, the active spot, alarms);
* a ticker passes the clock in (deck-change warnings and halts); with a :class:`TableClock` (``tablectl run``, the
  demo) that is the table's monotonic time, carried on from the journal at start, and a wall clock that went back
  or jumped forward raises the journaled ``clock_jump`` alarm (controller/service/clock.py);
* people's commands from MQTT (``cmd/<role>/<user>/<verb>``) are checked against the sender's role,
  validated and applied like any other input; a refused one is journaled (who, verb, why);
* at each settlement and shoe end the retained ``analytics`` (hold against theoretical, pace, the
  shuffle scores and flagged spots) is brought up to the journal and handed to the publisher
  (:mod:`controller.analytics.live`): off the card's path, latest wins, never in the events' way.

After a restart, or when a lost device is back, whatever the engine still waits for is asked
again (:func:`pending_requests`): the journal says what the table was doing, the devices are
told again. Logs carry public records only, never a raw input, so no log line can hold the hole
card before it is turned.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import Any, cast

from controller.analytics.live import (
    PUBLISH_ON,
    FlagsProvider,
    LiveAnalytics,
    ShuffleProvider,
    Theory,
    theory_for,
)
from controller.analytics.live_signals import SignalWatch
from controller.analytics.shuffle_quality import ShuffleScore, shuffle_figures
from controller.contract.alarms import CLOCK_ALARM
from controller.game import events as ev
from controller.game.effects import (
    AlarmCleared,
    AlarmRaised,
    DealingLocked,
    Effect,
    Record,
    RequestPeek,
    RevealHole,
    StartShuffle,
)
from controller.game.errors import GameError, IllegalAction
from controller.game.rules import Rules, limits_refusal, rules_digest
from controller.game.view import TableView
from controller.mqtt.publisher import AnalyticsPublisher
from controller.mqtt.roles import check_user
from controller.mqtt.roles import refusal as role_refusal
from controller.mqtt.topics import CommandTopic
from controller.ratings import masked
from controller.selfcheck.program import ProgramCheck
from controller.selfcheck.watch import ALARM_CODE as PROGRAM_ALARM
from controller.selfcheck.watch import ALARM_SOURCE as PROGRAM_SOURCE
from controller.selfcheck.watch import ProgramWatch
from controller.selfcheck.watch import alarm_detail as program_alarm_detail
from controller.service.clock import ClockJump, TableClock
from controller.service.commands import (
    AckAlarm,
    CommandResult,
    SelfCheckCmd,
    SetLimits,
    accepted,
    check_sender,
    parse_command,
    refused,
)
from controller.service.core import ShoeRead, TableCore
from controller.service.device_inputs import DeviceInputs
from controller.service.refusals import RefusalBudget
from controller.service.shuffle_watch import ALARM_CODE, ALARM_SOURCE, ShuffleWatch, alarm_detail
from drivers import events as dev
from drivers.console import ALARM_BLINK, ALARM_OFF, ALARM_ON, ConsoleDriver
from drivers.errors import DeviceError
from drivers.events import Button
from drivers.group import DeviceGroup
from drivers.playercard import PlayerCardInserted, PlayerCardRemoved, ReaderLevels
from drivers.shoe import ShoeDriver
from drivers.shuffler import DECK_SETS, ShufflerDriver

log = logging.getLogger("controller.table")

#: the source of the integrity alarm of a journal a witness holds behind it at the first connection (docs/journal.md)
WITNESS_ALARM = "journal_witness"

#: seconds between two clock ticks given to the engine
TICK_EVERY = 30.0
#: at stop, how long to wait for the theoretical figures when the last analytics went out without them
THEORY_WAIT_S = 15.0
#: public records worth an INFO line (the rest are logged at DEBUG)
_LOGGED_AT_INFO = frozenset({"round_settled", "alarm", "alarm_cleared", "device_restored", "shuffle_done",
                             "table_opened", "table_closed", "decks_changed"})

DeviceCommand = Callable[[], Awaitable[None]]
Lights = tuple[frozenset[Button], frozenset[int], int]


def pending_requests(table: TableView) -> list[Effect]:
    """What the engine is waiting for from a device, as the effects that asked for it."""
    return list(table.awaiting().requests)


def _device_of(effect: Effect) -> str | None:
    """The device a request goes to."""
    if isinstance(effect, RequestPeek | RevealHole | DealingLocked):
        return "shoe"
    if isinstance(effect, StartShuffle):
        return "shuffler"
    return None


def console_lights(table: TableView) -> Lights:
    """The console's lights: the buttons the dealer may press now, the spots in play, the alarm."""
    buttons: set[Button] = set()
    spots: set[int] = set()
    phase = table.phase
    if phase in ("betting", "settled") and table.bets and not table.shuffle_due:
        buttons.add(Button.NO_MORE_BETS)
        spots.update(table.bets)
    elif phase == "insurance":
        buttons.add(Button.INSURANCE_CLOSED)
        spots.update(table.spots)
    elif phase == "players" and table.active is not None:
        spot = table.active[0]
        spots.add(spot)
        names = {d.action for d in table.legal_actions() if d.spot == spot}
        buttons.update(b for b, a in ((Button.STAND_NEXT, "stand"), (Button.DOUBLE, "double"),
                                      (Button.SPLIT, "split"), (Button.SURRENDER, "surrender")) if a in names)
    if table.alarms:
        buttons.add(Button.ALARM_ACK)
    alarm = ALARM_BLINK if table.halted is not None else ALARM_ON if table.alarms else ALARM_OFF
    return frozenset(buttons), frozenset(s for s in spots if 1 <= s <= 7), alarm


class TableService:
    """One table's service loop (see the module docstring). ``start()``, then ``stop()``.

    Build it inside the running loop; :attr:`failed` ends with the error of a task that must
    never end, which the caller turns into exit 1 (the journal brings the table back).
    """

    def __init__(
        self,
        core: TableCore,
        devices: DeviceGroup,
        *,
        clock: Callable[[], float] = time.time,
        tick_every: float = TICK_EVERY,
        open_if_new: bool = False,
        on_record: Callable[[Record], None] | None = None,
        program: ProgramWatch | None = None,
    ) -> None:
        self.core = core
        #: the program's re-checks (controller/selfcheck); None: the process made no check at its start
        self.program = program
        self.devices = devices
        self.inputs = DeviceInputs()
        #: the configured rules, while the journal plays others: journaled at the next point between shoes
        self._rules_wanted: ev.RulesChanged | None = None
        self._rules_wait_logged = False
        self.clock = clock
        self.tick_every = tick_every
        self.open_if_new = open_if_new
        self.on_record = on_record
        #: inputs applied since start, and the types of the latest ones (for waiters)
        self.applied = 0
        self.last_refusal = ""
        self._recent: deque[tuple[int, str]] = deque(maxlen=256)
        self._refusals: dict[int, str] = {}  # input number of an irregularity -> type refused
        #: how many refused commands the journal takes (a flood adds a bounded number of records)
        self._refusal_budget = RefusalBudget()
        self._changed = asyncio.Event()
        self._queues: dict[str, asyncio.Queue[DeviceCommand]] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._lights: Lights | None = None
        self._lights_wanted: Lights | None = None
        self._lights_changed = asyncio.Event()
        self._devices_open = False
        self._recovered = False
        #: the shuffle-quality monitor (controller/service/shuffle_watch.py), rebuilt from the journal at recovery
        self._shuffle_watch = ShuffleWatch(core.table.rules.decks)
        self._shuffle_unalarmed: ShuffleScore | None = None  # a failing shoe whose alarm a crash kept out
        #: the figures of the retained ``analytics`` since the table was last opened
        #: the advantage-play signals at each shoe end (controller/analytics/live_signals.py), fed the same records
        self.signals = SignalWatch(lambda: self.table.rules)
        self.analytics = LiveAnalytics(also=self.signals.take, also_reset=self.signals.reset)
        #: provider hooks of the ``analytics`` payload: the shuffle-quality figures of the last shoes and the
        #: spots flagged at shoe end (empty until their monitors are wired in)
        self.analytics_shuffle: ShuffleProvider = self._shuffle_figures
        self.analytics_flags: FlagsProvider = self.signals.flagged
        self._theory_awaited: Future[Theory] | None = None  # republish when it is known
        self._theory_rules: tuple[Rules, Future[Theory]] | None = None  # the rules in force and their theory
        self._theory_missing = False  # the last analytics went out without the theoretical figures
        #: where the theoretical figures are kept by the rules' digest: beside the journal (a restart has them)
        journal_path = self.core.journal.path
        self._theory_dir: Path | None = None if journal_path.name == ":memory:" else journal_path.parent / ".theory"
        #: set with the exception of a task that must never end (the pump, the ticker): the caller
        #: stops the process (exit 1) and the journal brings it back where it was
        self.failed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    @property
    def table(self) -> TableView:
        return self.core.table

    @property
    def table_id(self) -> str:
        return self.core.table_id

    # -- life cycle ---------------------------------------------------------------------------

    def recover(self) -> int:
        """Rebuild the engine from the journal (``start`` does it unless it was done); inputs replayed."""
        replayed = self.core.recover()
        self._recovered = True
        try:
            self._shuffle_unalarmed = self._shuffle_watch.rebuild(
                self.core.journal, shuffles=self.table.shuffles, decks=self.table.rules.decks)
        except Exception:  # the monitor is surveillance's aid: it never keeps a table offline
            log.exception("the shuffle-quality monitor could not be rebuilt: it starts empty",
                          extra={"table": self.table_id})
            self._shuffle_watch = ShuffleWatch(self.table.rules.decks)
        log.info("journal recovered", extra={"table": self.table_id, "inputs_replayed": replayed,
                                             "seq": self.core.seq})
        return replayed

    async def start(self) -> None:
        """Recover, open the devices (PortNotFound / PortBusy raise here), go online, serve."""
        core = self.core
        if not self._recovered:
            self.recover()
        jump = None  # the table's time goes on from the journal's, never back: before any input of this start
        if isinstance(self.clock, TableClock):
            jump = self.clock.resume(*core.journaled_clock())
        self._close_if_asked()  # a round that settled just before a stop, a close asked for it
        shoe = self.devices.devices.get("shoe")
        if isinstance(shoe, ShoeDriver):  # its replay starts after the last read the journal holds
            shoe.resume_after = core.last_shoe_read
        await self.devices.__aenter__()  # first: a table whose devices are not there never goes online
        self._devices_open = True
        # on its worker thread, only once the devices are there: a start they refuse leaves no work behind it
        # that would hold the process's exit (its five-second pause, then a child process)
        theory_for(self.table.rules, self._theory_dir)
        publisher = core.publisher
        if publisher is not None:
            await publisher.start()
        loop = asyncio.get_running_loop()
        for name in self.devices.devices:
            queue: asyncio.Queue[DeviceCommand] = asyncio.Queue()
            self._queues[name] = queue
            self._tasks.append(loop.create_task(self._device_worker(name, queue), name=f"{self.table_id}-{name}"))
        new_journal = core.replayed == 0 and core.journal.last_input_id == 0
        self._rules_wanted = core.rules_binding()
        self._bind_rules()  # a new journal's first input: the rules it is played under
        self._clock_alarm(jump)  # once the publisher is up, like the shuffle's alarm below
        if self._shuffle_unalarmed is not None:  # the last shoe failed and its alarm never reached the journal
            self._shuffle_alarm(self._shuffle_unalarmed)
            self._shuffle_unalarmed = None
        if self.open_if_new and self.table.phase == "closed" and new_journal:
            self.apply(ev.TableOpened(now=self.clock()))
        core.publish_all()
        self._publish_analytics()
        self._dispatch(pending_requests(self.table))
        self._essential(loop.create_task(self._pump(), name=f"{self.table_id}-pump"))
        self._tasks.append(loop.create_task(self._lights_worker(), name=f"{self.table_id}-lights"))
        if self.tick_every > 0:
            self._essential(loop.create_task(self._ticker(), name=f"{self.table_id}-ticker"))
        if self.program is not None:
            self.program_checked(self.program.last)
            if self.program.every_s > 0:
                self._tasks.append(loop.create_task(self._program_checks(), name=f"{self.table_id}-selfcheck"))
        if self.core.ratings is not None and self.core.ratings.book.cards:
            self._tasks.append(loop.create_task(self._cards_pulled_while_down(), name=f"{self.table_id}-cards"))
        self._update_lights()

    def halt_on_witness(self, exc: Exception) -> None:
        """A witness silent at start answered at the first connection and holds the journal behind it
        (:mod:`controller.mqtt.late_witness`; the publisher has stopped without publishing): the table halts with
        an integrity alarm, journaled (a restart replays it: still halted), and the service ends with the refusal."""
        log.critical("halted: a witness holds the journal behind it", extra={"table": self.table_id,
                                                                            "reason": str(exc)})
        try:
            # a halting irregularity: an integrity alarm (``irregularity:journal_witness``), cleared only by a
            # named operator with a reason
            self.apply(ev.Irregularity(WITNESS_ALARM, str(exc)[:500], halts=True))
        except Exception:  # the refusal stands whatever the engine said: the service ends with it
            log.exception("the witness's alarm could not be journaled", extra={"table": self.table_id})
        if not self.failed.done():
            self.failed.set_exception(exc)

    def _essential(self, task: asyncio.Task[None]) -> None:
        self._tasks.append(task)

        def done(t: asyncio.Task[None]) -> None:
            if t.cancelled() or self.failed.done():
                return
            exc = t.exception() or RuntimeError(f"{t.get_name()} ended")
            log.critical("table service task failed", extra={"table": self.table_id, "task": t.get_name(),
                                                             "error": repr(exc)})
            self.failed.set_exception(exc)

        task.add_done_callback(done)

    async def stop(self, *, drain_timeout: float = 3.0) -> None:
        """Stop serving, close the devices, publish what is left, go offline (the journal stays open)."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        if self._devices_open:
            self._devices_open = False
            with contextlib.suppress(Exception):
                await self.devices.__aexit__(None, None, None)
        publisher = self.core.publisher
        if publisher is not None:
            await self._complete_analytics(timeout=max(drain_timeout, THEORY_WAIT_S))
            wait_drained = getattr(publisher, "wait_drained", None)
            if wait_drained is not None:
                with contextlib.suppress(Exception):
                    await wait_drained(timeout=drain_timeout)
            if getattr(publisher, "ratings_pending", 0) == 0:  # every ended rating acknowledged: none to resend
                with contextlib.suppress(Exception):
                    self.core.ratings_confirmed()
            with contextlib.suppress(Exception):
                await publisher.close(timeout=drain_timeout)

    async def __aenter__(self) -> TableService:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- inputs -------------------------------------------------------------------------------

    def apply(self, event: ev.Event, *, source: str | None = None, shoe_read: ShoeRead | None = None,
              clock_offset: float | None = None) -> list[Effect] | None:
        """Apply one input; a refused device input becomes an irregularity. Returns the effects.

        ``source`` names the device the input came from (``None``: the pit or the service,
        whose refusals the caller answers itself, so they raise :class:`GameError`). ``shoe_read``
        is the shoe's number of the read it came from: journaled with the input, or with the
        irregularity that reports it refused (either way the read is in the journal, once).
        """
        try:
            effects = self.core.apply(event, shoe_read=shoe_read, clock_offset=clock_offset)
        except GameError as err:
            if source is None:
                raise
            detail = f"{source}: {event.TYPE} refused: {err}"
            if isinstance(err, IllegalAction) and err.clause:  # the rule's own words, from the profile
                detail += f" [{self.table.rules.name} {err.option}: {err.clause}]"
            self.last_refusal = detail
            log.warning("device input refused", extra={"table": self.table_id, "device": source,
                                                       "input": event.TYPE, "reason": str(err)})
            effects = self.core.apply(ev.Irregularity(source, detail), shoe_read=shoe_read)
            self._applied(ev.Irregularity.TYPE)
            self._refusals[self.applied] = event.TYPE
            if len(self._refusals) > 256:
                del self._refusals[min(self._refusals)]
            shuffle_score = None
        else:
            self._applied(event.TYPE)
            shuffle_score = self._watch_shuffle(event)  # before _after: the analytics at shoe end carry it
        self._after(effects)
        if shuffle_score is not None and not shuffle_score.passed:
            self._shuffle_alarm(shuffle_score)
        if isinstance(event, ev.DeviceRestored):  # ask the device again for what it may have missed
            self._dispatch(e for e in pending_requests(self.table) if _device_of(e) == event.device)
        for bet in self.inputs.pending_bets(self.table):
            self.apply(bet, source="chips")
        for insurance in self.inputs.pending_insurance(self.table):
            self.apply(insurance, source="chips")
        if self._rules_wanted is not None and not isinstance(event, ev.RulesChanged):
            self._bind_rules()
        self._close_if_asked()
        return effects

    def _close_if_asked(self) -> None:
        """A ``close`` asked during a round (the engine's ``close_asked``) takes effect once the round settled:
        the service closes the table with the asker's name, an input journaled like the pit's own."""
        table = self.table
        if table.close_asked and not table.round_open and table.phase in ("settled", "shuffling", "betting"):
            self.apply(ev.TableClosed(now=self.clock(), operator=table.close_by))

    def _watch_shuffle(self, event: ev.Event) -> ShuffleScore | None:
        """Feed the shuffle-quality monitor one input the engine took; the judged shoe's score at a shoe end."""
        try:
            return self._shuffle_watch.observe(event)
        except Exception:  # never in the way of the input that was journaled
            log.exception("the shuffle-quality monitor failed on an input", extra={"table": self.table_id,
                                                                                  "input": event.TYPE})
            return None

    def _shuffle_alarm(self, score: ShuffleScore) -> None:
        """A shoe failed: raise the non-halting ``shuffle_quality`` alarm (surveillance acknowledges it), journaled
        like every alarm; not a second one while one is still active (every score is in :meth:`shuffle_scores`)."""
        if any(alarm.code == ALARM_CODE for alarm in self.table.alarms.values()):
            log.info("shuffle-quality: another failing shoe while its alarm is active",
                     extra={"table": self.table_id, "shuffle": score.to_json()})
            return
        log.warning("shuffle-quality alarm", extra={"table": self.table_id, "shuffle": score.to_json()})
        try:
            self.apply(ev.Irregularity(ALARM_SOURCE, alarm_detail(score), halts=False, code=ALARM_CODE))
        except GameError as err:  # the engine takes an irregularity in every phase: a bug, not the input's fault
            log.error("the shuffle-quality alarm was refused", extra={"table": self.table_id, "reason": str(err)})

    def _clock_alarm(self, jump: ClockJump | None) -> None:
        """The wall clock moved against the table's time: raise the non-halting ``clock_jump`` alarm (surveillance
        clears it), journaled with the new offset between the clocks (a restart reads it back)."""
        if jump is None:
            return
        log.warning("clock jump", extra={"table": self.table_id, "moved_s": round(jump.moved_s, 3),
                                         "offset_s": round(jump.offset, 3), "at_start": jump.at_start})
        try:
            self.apply(ev.Irregularity("clock", jump.message(), halts=False, code=CLOCK_ALARM),
                       clock_offset=jump.offset)
        except GameError as err:  # the engine takes an irregularity in every phase: a bug, not the input's fault
            log.error("the clock alarm was refused", extra={"table": self.table_id, "reason": str(err)})

    def shuffle_scores(self, n: int = 10) -> list[ShuffleScore]:
        """The shuffle-quality scores of the last ``n`` judged shoes, oldest first (for the analytics)."""
        return self._shuffle_watch.recent(n)

    def _shuffle_figures(self) -> Mapping[str, Any]:
        """The analytics' ``shuffle``: the monitor's alarm threshold and the last shoes' scores."""
        return shuffle_figures(self.shuffle_scores())

    def _bind_rules(self) -> None:
        """Journal the configured rules when the engine takes them (between shoes); until then say, once, why not."""
        wanted = self._rules_wanted
        if wanted is None:
            return
        reason = "the table is dealing a shoe"
        if self.table.between_shoes():
            try:
                self.apply(wanted)
            except GameError as err:  # e.g. other decks, which wait for the table to close
                reason = str(err)
            else:
                self._rules_wanted = None
                log.info("rules bound to the journal", extra={"table": self.table_id, "profile": self.core.rules.name,
                                                              "digest": rules_digest(self.core.rules)})
                return
        if not self._rules_wait_logged:
            self._rules_wait_logged = True
            log.warning("the configured rules differ from the journal's: they take effect between shoes",
                        extra={"table": self.table_id, "journal_profile": self.table.rules.name,
                               "journal_digest": rules_digest(self.table.rules), "profile": self.core.rules.name,
                               "digest": rules_digest(self.core.rules), "reason": reason})

    def _applied(self, etype: str) -> None:
        self.applied += 1
        self._recent.append((self.applied, etype))
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    def _after(self, effects: Iterable[Effect]) -> None:
        commands: list[Effect] = []
        analytics_due = False
        for effect in effects:
            if isinstance(effect, Record):
                self._log_record(effect)
                analytics_due = analytics_due or effect.type in PUBLISH_ON
                if self.on_record is not None:
                    self.on_record(effect)
            elif not isinstance(effect, AlarmRaised | AlarmCleared):  # alarms reach the lights below
                commands.append(effect)
        self._dispatch(commands)
        self._update_lights()
        if analytics_due:
            self._publish_analytics()

    def _log_record(self, record: Record) -> None:
        # Records are public (the engine redacts the hole card), so they are what the log shows.
        level = logging.INFO if record.type in _LOGGED_AT_INFO else logging.DEBUG
        if log.isEnabledFor(level):
            log.log(level, record.type, extra={"table": self.table_id, "event": record.type, "details": record.data})

    async def wait_input(
        self, after: int, types: Iterable[str] | None = None, timeout: float | None = None
    ) -> tuple[int, str]:
        """Wait for the first input numbered above ``after`` (of one of ``types``): its number and type."""
        wanted = None if types is None else frozenset(types)

        def found() -> tuple[int, str] | None:
            hit = None
            for n, etype in reversed(self._recent):  # newest first: only the few inputs after ``after``
                if n <= after:
                    break
                if wanted is None or etype in wanted:
                    hit = (n, etype)
            return hit

        try:
            async with asyncio.timeout(timeout):
                while (hit := found()) is None:
                    await self._changed.wait()
        except TimeoutError:
            # the input may have come as the time ran out (the timeout cancels the wait before it resumes):
            # a loaded machine made the crew call itself stuck on an acknowledgement that had arrived
            late = found()
            if late is None:
                raise
            return late
        return hit

    def refused_input(self, number: int) -> str | None:
        """The type of the device input that input ``number`` (an irregularity) reports refused."""
        return self._refusals.get(number)

    async def on_command(self, command: CommandTopic, payload: bytes) -> CommandResult:
        """A person's command from MQTT: the sender (the topic's user and role) checked before anything
        else, then the payload; applied like any input and answered with a result. The role is checked
        again per alarm kind (:mod:`controller.mqtt.roles`), whatever the broker let through; a refusal
        is journaled too (:meth:`_refused`)."""
        verb = command.verb
        parsed = check_sender(command, payload) or parse_command(verb, payload, user=command.user)
        if isinstance(parsed, CommandResult):
            return self._refused(command, parsed)
        who = {"table": self.table_id, "verb": verb, "role": command.role, "operator": parsed.operator}
        if isinstance(parsed, AckAlarm) and (alarm := self.table.alarms.get(parsed.alarm_id)) is not None:
            why = role_refusal(command.role, verb, alarm=(alarm.code, alarm.halts), reason=parsed.reason)
            if why is not None:
                return self._refused(command, refused(verb, f"ack_alarm refused: {why}", parsed.id, parsed.operator))
        if isinstance(parsed, SelfCheckCmd):
            return await self._selfcheck_command(command, parsed)
        if isinstance(parsed, SetLimits):  # inside what the profile's rule text allows (DESIGN: roles)
            outside = limits_refusal(self.table.rules, parsed.min_bet, parsed.max_bet)
            if outside is not None:
                return self._refused(command, refused(verb, f"set_limits refused: {outside}", parsed.id,
                                                      parsed.operator))
        already = _already(verb, self.table)
        if already is not None:  # a close of a closed table, an open of an open one: said for a person
            return self._refused(command, refused(verb, already, parsed.id, parsed.operator))
        try:
            self.apply(parsed.to_event(self.clock()))
        except GameError as e:
            return self._refused(command, refused(verb, str(e), parsed.id, parsed.operator))
        log.info("command applied", extra=who)
        if verb == "close" and self.table.close_asked:
            return accepted(parsed, seq=self.core.seq, pending=f"closes when round {self.table.round} settles")
        return accepted(parsed, seq=self.core.seq)

    # -- program authentication (DESIGN.md; controller/selfcheck) ------------------------------

    def program_checked(self, result: ProgramCheck) -> None:
        """Take a program check's result: ``state``'s ``software``, and on a mismatch halt the table with an
        integrity alarm naming the file (one while it is active; surveillance clears it, with a reason)."""
        self.core.software = result.software()
        if result.unverified is not None and not result.problems():
            log.warning("program unverified", extra={"table": self.table_id, "reason": result.unverified})
        if not result.problems():
            return
        detail = program_alarm_detail(result)
        log.critical("program authentication failed", extra={"table": self.table_id, "problems": result.problems()})
        if any(alarm.code == PROGRAM_ALARM for alarm in self.table.alarms.values()):
            return
        try:
            self.apply(ev.Irregularity(PROGRAM_SOURCE, detail, halts=True))
        except GameError as err:  # the engine takes an irregularity in every phase: a bug, not the program's
            log.error("the program integrity alarm was refused", extra={"table": self.table_id, "reason": str(err)})

    async def _program_checks(self) -> None:
        assert self.program is not None
        while True:
            await asyncio.sleep(self.program.every_s)
            self.program_checked(await self.program.recheck())
            self.core.publish_all()

    async def _selfcheck_command(self, command: CommandTopic, parsed: SelfCheckCmd) -> CommandResult:
        """A supervisor's request: check now, journal who asked and what was found, answer with it."""
        if self.program is None:
            return self._refused(command, refused(command.verb, "selfcheck refused: this table process made no "
                                                  "program check at its start", parsed.id, parsed.operator))
        result = await self.program.recheck()
        found = "mismatch" if result.problems() else "unverified" if result.unverified else "match"
        seq = self.core.note({"type": "program_checked", "role": command.role, "operator": parsed.operator,
                              "result": found, "build": result.build, "problems": result.problems()[:20]})
        self.program_checked(result)
        log.info("command applied", extra={"table": self.table_id, "verb": command.verb, "role": command.role,
                                           "operator": parsed.operator, "result": found})
        return accepted(parsed, seq=seq, program=found, version=result.version, build=result.build,
                        problems=result.problems()[:20])

    def _refused(self, command: CommandTopic, result: CommandResult) -> CommandResult:
        """Journal a refused command (who, verb, why: a ``command_refused`` record, nothing played) while
        its sender's budget lasts (:class:`RefusalBudget`: a flood adds a bounded number of records); answer it."""
        valid = check_user(command.user) is None
        suppressed = self._refusal_budget.admit(command.user if valid else None, self.clock())
        # logged like it is journaled: a flood fills neither the journal nor the log
        log.log(logging.INFO if suppressed is not None else logging.DEBUG, "command refused",
                extra={"table": self.table_id, "verb": command.verb[:64], "role": command.role[:64],
                       "operator": result.operator, "reason": result.error})
        if suppressed is None:
            return result
        body: dict[str, Any] = {"type": "command_refused", "role": command.role[:64], "user": command.user[:64],
                                "verb": command.verb[:64], "error": result.error}
        if valid:
            body["operator"] = command.user
        if result.id is not None:
            body["id"] = result.id
        if suppressed:
            body["suppressed"] = suppressed
        try:
            self.core.note(body)
        except Exception:  # a journal that cannot write stops the table at its next input; the answer still goes out
            log.exception("a refused command could not be journaled", extra={"table": self.table_id})
        return result

    # -- the analytics topic ------------------------------------------------------------------

    def _publish_analytics(self) -> None:
        """Bring the figures up to the journal (only the records since the last call) and hand them to the
        publisher. A failure is logged: the round is journaled and published whatever becomes of them."""
        publisher = self.core.publisher
        if not isinstance(publisher, AnalyticsPublisher):
            return
        try:
            self.analytics.advance(self.core.journal)
            self.signals.align(self.table.shuffles)  # the shoes numbered as the table counts them
            theory = self._theory()
            self._theory_missing = theory is None
            publisher.publish_analytics(self.analytics.payload(
                theory, table_id=self.table_id, pit=self.core.pit, profile=self.table.rules.name,
                shuffle=self.analytics_shuffle(), flagged_spots=self.analytics_flags()))
        except Exception:
            log.exception("the analytics could not be published", extra={"table": self.table_id})

    def _theory(self) -> Theory | None:
        """The rules' edge and spread when known; else None, and the analytics go out again once they are."""
        rules = self.table.rules
        if self._theory_rules is None or self._theory_rules[0] is not rules:  # (theory_for hashes the rules)
            self._theory_rules = (rules, theory_for(rules, self._theory_dir))
        future = self._theory_rules[1]
        if future.done():
            if future.cancelled() or future.exception() is not None:
                if future is not self._theory_awaited:
                    self._theory_awaited = future
                    log.error("the theoretical figures could not be computed: published as null",
                              extra={"table": self.table_id,
                                     "error": "cancelled" if future.cancelled() else repr(future.exception())})
                return None
            return future.result()
        if future is not self._theory_awaited:
            self._theory_awaited = future
            loop = asyncio.get_running_loop()

            def known(_: Future[Theory]) -> None:  # on the worker thread
                with contextlib.suppress(RuntimeError):  # the loop is gone: nothing left to publish to
                    loop.call_soon_threadsafe(self._publish_analytics)

            future.add_done_callback(known)
        return None

    async def _complete_analytics(self, *, timeout: float) -> None:
        """At stop: the last analytics went out before the theory was known? Wait for it (bounded), publish."""
        if not self._theory_missing or not self.analytics.loaded:
            return
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(theory_for(self.table.rules, self._theory_dir))),
                                   timeout)
        self._publish_analytics()

    # -- tasks --------------------------------------------------------------------------------

    async def _pump(self) -> None:
        async for name, event in self.devices.events():
            if event.type == "health":
                log.info("device health", extra={"table": self.table_id, "device": name, **event.to_json()})
            if isinstance(event, PlayerCardInserted | PlayerCardRemoved):
                self._player_card(event)
                continue
            read = event.read if isinstance(event, dev.ShoeReadEvent) else None
            for engine_input in self.inputs.translate(name, event, self.table, self.clock()):
                self.apply(engine_input, source=name, shoe_read=read)
                read = None  # one read, one journaled input

    def _player_card(self, event: PlayerCardInserted | PlayerCardRemoved) -> None:
        """A card in or out of a spot's reader: journaled with its number, published masked (the log too). A card
        the journal already holds at that spot (read again after a restart) is not news: nothing is journaled."""
        ratings = self.core.ratings
        if ratings is not None and (ratings.book.cards.get(event.spot) == event.player) == (event.type == "card_in"):
            return
        self.core.apply_card(event.type, event.spot, event.player)
        self._applied(event.type)
        log.info(event.type, extra={"table": self.table_id, "event": event.type, "spot": event.spot,
                                    "player": masked(event.player)})

    async def _cards_pulled_while_down(self, timeout: float = 30.0) -> None:
        """A card pulled while the table was down: the journal holds it in, and the reader (a level) says nothing
        of a card that is not there. Once each reader the journal holds a card at has answered, a card it does not
        hold is taken out (``card_out``), so the next player at that spot is not rated as the last one."""
        ratings = self.core.ratings
        readers = getattr(self.devices.devices.get("chips"), "readers", None)
        if ratings is None or not isinstance(readers, ReaderLevels):
            return
        try:
            async with asyncio.timeout(timeout):
                while any(s not in readers.heard and s not in readers.lost for s in ratings.book.cards):
                    await asyncio.sleep(0.05)
        except TimeoutError:
            log.warning("card readers not heard from: the cards the journal holds in them are taken as still in",
                        extra={"table": self.table_id})
            return
        for spot, player in ratings.book.cards.items():
            if spot in readers.heard and spot not in readers.lost and spot not in readers.cards:
                self._player_card(PlayerCardRemoved(spot, player))

    async def _ticker(self) -> None:
        while True:
            await asyncio.sleep(self.tick_every)
            if isinstance(self.clock, TableClock):
                self._clock_alarm(self.clock.check())
            self.apply(ev.Tick(now=self.clock()))

    # -- device commands ----------------------------------------------------------------------

    def _dispatch(self, effects: Iterable[Effect]) -> None:
        for effect in effects:
            if isinstance(effect, RequestPeek):
                self._send("shoe", self._peek)
            elif isinstance(effect, RevealHole):
                self._send("shoe", self._shoe().reveal_hole)
            elif isinstance(effect, DealingLocked):
                shoe = self._shoe()
                self._send("shoe", shoe.lock_dealing if effect.locked else shoe.enable_dealing)
            elif isinstance(effect, StartShuffle):
                self._send("shuffler", self._shuffle)

    def _send(self, device: str, command: DeviceCommand) -> None:
        queue = self._queues.get(device)
        if queue is not None:
            queue.put_nowait(command)

    def _shoe(self) -> ShoeDriver:
        return cast(ShoeDriver, self.devices["shoe"])

    async def _peek(self) -> None:
        """Ask the peek reader until it answers (its answer arrives with the shoe's events)."""
        shoe = self._shoe()
        delay = 0.2
        while self.table.awaiting().requested(RequestPeek) and self.table.dealer:
            try:
                await shoe.request_peek(self.table.dealer[0][0])
                return
            except DeviceError as e:
                log.warning("peek request failed, retrying", extra={"table": self.table_id, "reason": str(e)})
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)

    async def _shuffle(self) -> None:
        shuffler = cast(ShufflerDriver, self.devices["shuffler"])
        deck_set = self.table.deck_set if self.table.deck_set in DECK_SETS else DECK_SETS[0]
        await shuffler.start_shuffle(deck_set)

    async def _device_worker(self, name: str, queue: asyncio.Queue[DeviceCommand]) -> None:
        while True:
            command = await queue.get()
            try:
                await command()
            except DeviceError as e:
                # The link layer re-sends what it accepted; a command refused because the device is
                # away is asked again by pending_requests() when the device is back.
                log.warning("device command failed", extra={"table": self.table_id, "device": name,
                                                            "reason": str(e)})
            except Exception:
                log.exception("device command crashed", extra={"table": self.table_id, "device": name})

    # -- console lights -----------------------------------------------------------------------

    def _update_lights(self) -> None:
        wanted = console_lights(self.table)
        if wanted != self._lights_wanted:
            self._lights_wanted = wanted
            self._lights_changed.set()

    async def _lights_worker(self) -> None:
        console = self.devices.devices.get("console")
        if not isinstance(console, ConsoleDriver):
            return
        while True:
            await self._lights_changed.wait()
            self._lights_changed.clear()
            wanted = self._lights_wanted
            if wanted is None or wanted == self._lights:
                continue
            try:
                await console.set_lights(*wanted)
                self._lights = wanted
            except DeviceError:
                self._lights = None  # sent again when the next change comes


def _already(verb: str, table: TableView) -> str | None:
    """The refusal of a ``close`` of a closed table or an ``open`` of an open one (the engine takes a close of a
    closed table, as journals written before this check hold such closes and must replay), else None."""
    if verb == "close" and table.phase == "closed":
        return "close refused: the table is already closed"
    if verb == "open" and table.phase != "closed":
        return "open refused: the table is already open"
    return None
