"""The table service: the table's devices, through the round engine, to the journal and MQTT.

One asyncio loop runs everything of one table:

* a pump takes the merged device events as the drivers decode them (:meth:`drivers.DeviceGroup.deliver`: in the
  driver's read callback, once the frame's ACK is written), translates each
  (:mod:`controller.service.device_inputs`) and applies the inputs through :class:`TableCore`, which
  journals them durably before anything is published;
* an input the engine refuses never changes the round: when it came from a device it is
  journaled as an :class:`Irregularity`, an alarm the pit sees and acknowledges;
* the engine's device commands (peek, turn the hole card, shuffle, lock or open the shoe's
  gate) go to one worker per device, so a slow or unplugged device never blocks the engine;
  the console's lights follow the table (what the dealer may press, the active spot, alarms)
  (:mod:`controller.service.device_commands`);
* a ticker passes the clock in (deck-change warnings and halts); with a :class:`TableClock` (``tablectl run``, the
  demo) that is the table's monotonic time, carried on from the journal at start, and a wall clock that went back
  or jumped forward raises the journaled ``clock_jump`` alarm (controller/service/clock.py);
* people's commands from MQTT (``cmd/<role>/<user>/<verb>``) are checked against the sender's role,
  validated and applied like any other input; a refused one is journaled (who, verb, why)
  (:mod:`controller.service.command_desk`); the program checks' results halt the table on a mismatch
  (:mod:`controller.service.program_checks`);
* at each settlement and shoe end the retained ``analytics`` (hold against theoretical, pace, the
  shuffle scores and flagged spots) is brought up to the journal and handed to the publisher
  (:mod:`controller.service.analytics_feed`): off the card's path, latest wins, never in the events' way.

After a restart, or when a lost device is back, whatever the engine still waits for is asked
again (:func:`~controller.service.device_commands.pending_requests`): the journal says what the table was
doing, the devices are told again. Logs carry public records only, never a raw input, so no log line can hold the hole
card before it is turned.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from controller.analytics.live import PUBLISH_ON, FlagsProvider, LiveAnalytics, ShuffleProvider
from controller.analytics.live_signals import SignalWatch
from controller.analytics.shuffle_quality import ShuffleScore, shuffle_figures
from controller.cancelling import cancel_and_wait
from controller.contract.alarms import CLOCK_ALARM
from controller.contract.phases import BETWEEN_ROUNDS, Phase
from controller.contract.results import CommandResult
from controller.contract.topics import CommandTopic
from controller.game import events as ev
from controller.game.effects import AlarmCleared, AlarmRaised, Effect, Record
from controller.game.errors import GameError, IllegalAction
from controller.game.rules import rules_digest
from controller.game.view import TableView
from controller.ratings import masked
from controller.selfcheck.program import ProgramCheck
from controller.selfcheck.watch import ProgramWatch
from controller.service.analytics_feed import AnalyticsFeed
from controller.service.clock import ClockJump, TableClock
from controller.service.command_desk import CommandDesk
from controller.service.core import ShoeRead, TableCore
from controller.service.device_commands import DeviceCommands, device_of, pending_requests
from controller.service.device_inputs import DeviceInputs
from controller.service.program_checks import ProgramChecks
from controller.service.shuffle_watch import ALARM_CODE, ALARM_SOURCE, ShuffleWatch, alarm_detail
from drivers import events as dev
from drivers.group import DeviceGroup
from drivers.playercard import PlayerCardInserted, PlayerCardRemoved, ReaderLevels
from drivers.shoe import ShoeDriver

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
        self._changed = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        #: the engine's requests to the devices, one worker each, and the console's lights
        self._device_commands = DeviceCommands(devices, lambda: self.core.table, core.table_id)
        self._program_checks = ProgramChecks(core, self.apply, lambda: self.program)
        self._desk = CommandDesk(core, self.apply, clock, self._program_checks)
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
        self._feed = AnalyticsFeed(core, self.analytics, self.signals, shuffle=lambda: self.analytics_shuffle(),
                                   flags=lambda: self.analytics_flags())
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
        self._feed.warm()
        publisher = core.publisher
        if publisher is not None:
            await publisher.start()
        loop = asyncio.get_running_loop()
        self._tasks.extend(self._device_commands.workers(loop))
        self._rules_wanted = core.rules_binding()
        self._bind_rules()  # a new journal's first input: the rules it is played under
        self._bind_dealer_rule()
        self._clock_alarm(jump)  # once the publisher is up, like the shuffle's alarm below
        if self._shuffle_unalarmed is not None:  # the last shoe failed and its alarm never reached the journal
            self._shuffle_alarm(self._shuffle_unalarmed)
            self._shuffle_unalarmed = None
        # never opened: its decks never put in play (no open, no decks_changed in its journal). Not "a new
        # journal": a first start cut between binding its rules and opening would otherwise wait for cmd/open
        if self.open_if_new and self.table.phase == Phase.CLOSED and self.table.deck_opened_at is None:
            self.apply(ev.TableOpened(now=self.clock()))
        core.publish_all()
        self._feed.publish()
        self._device_commands.dispatch(pending_requests(self.table))
        self._essential(loop.create_task(self._pump(), name=f"{self.table_id}-pump"))
        self._tasks.append(loop.create_task(self._device_commands.lights_worker(), name=f"{self.table_id}-lights"))
        if self.tick_every > 0:
            self._essential(loop.create_task(self._ticker(), name=f"{self.table_id}-ticker"))
        if self.program is not None:
            self.program_checked(self.program.last)
            if self.program.every_s > 0:
                self._tasks.append(loop.create_task(self._program_checks.run(self.program),
                                                    name=f"{self.table_id}-selfcheck"))
        if self.core.ratings is not None and self.core.ratings.book.cards:
            self._tasks.append(loop.create_task(self._cards_pulled_while_down(), name=f"{self.table_id}-cards"))
        self._device_commands.update_lights()

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
        await cancel_and_wait(self._tasks)  # cancelled again where a cancellation was lost (Python 3.11)
        self._tasks.clear()
        if self._devices_open:
            self._devices_open = False
            with contextlib.suppress(Exception):
                await self.devices.__aexit__(None, None, None)
        publisher = self.core.publisher
        if publisher is not None:
            await self._feed.complete(timeout=max(drain_timeout, THEORY_WAIT_S))
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
            self._device_commands.dispatch(e for e in pending_requests(self.table) if device_of(e) == event.device)
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
        if table.close_asked and not table.round_open and table.phase in BETWEEN_ROUNDS:
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

    def _bind_dealer_rule(self) -> None:
        """Journal the setting ``require_dealer`` when the journal's differs (taken in any phase)."""
        wanted = self.core.dealer_binding()
        if wanted is not None:
            self.apply(wanted)
            log.info("require_dealer bound to the journal", extra={"table": self.table_id,
                                                                   "require_dealer": wanted.required})

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
        self._device_commands.dispatch(commands)
        self._device_commands.update_lights()
        if analytics_due:
            self._feed.publish()

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
        """A person's command from MQTT, checked against its sender's role, applied like any input, answered
        (:mod:`controller.service.command_desk`); a refusal is journaled too."""
        return await self._desk.on_command(command, payload)

    def program_checked(self, result: ProgramCheck) -> None:
        """Take a program check's result (:mod:`controller.service.program_checks`): ``state``'s ``software``, and
        on a mismatch an integrity alarm that halts the table."""
        self._program_checks.checked(result)

    # -- the analytics topic ------------------------------------------------------------------

    # -- tasks --------------------------------------------------------------------------------

    async def _pump(self) -> None:
        """Take every device event as its driver decodes it (:meth:`DeviceGroup.deliver`: a card's input is
        applied in the callback that read its frame, no loop turn later); ends, and the service with it, at the
        first event that could not be taken (a journal that cannot commit), as a task reading them would."""
        failed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def take(name: str, event: dev.DeviceEvent) -> None:
            try:
                self._take(name, event)
            except Exception as exc:  # never into the driver: the service ends with it
                self.devices.deliver(None)
                if not failed.done():
                    failed.set_exception(exc)

        self.devices.deliver(take)
        try:
            await failed
        finally:
            self.devices.deliver(None)

    def _take(self, name: str, event: dev.DeviceEvent) -> None:
        """One device event: a player's card in or out, else the engine inputs it stands for, applied."""
        if event.type == "health":
            log.info("device health", extra={"table": self.table_id, "device": name, **event.to_json()})
        if isinstance(event, PlayerCardInserted | PlayerCardRemoved):
            self._player_card(event)
            return
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


