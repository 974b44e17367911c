"""The engine's device commands and the console's lights (the table service's hands on its devices).

Peek, turn the hole card, shuffle, lock or open the shoe's gate: each goes to one worker per device, so a slow
or unplugged device never blocks the engine; a command the device refused is asked again when it is back
(:func:`pending_requests`). The console's lights follow the table: what the dealer may press, the spots in play,
the alarm; only the newest wanted lights are sent.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import cast

from controller.contract.phases import Phase
from controller.game.effects import DealingLocked, Effect, RequestPeek, RevealHole, StartShuffle
from controller.game.view import TableView
from drivers.console import ALARM_BLINK, ALARM_OFF, ALARM_ON, ConsoleDriver
from drivers.errors import DeviceError
from drivers.events import Button
from drivers.group import DeviceGroup
from drivers.shoe import ShoeDriver
from drivers.shuffler import DECK_SETS, ShufflerDriver

log = logging.getLogger("controller.table")

DeviceCommand = Callable[[], Awaitable[None]]
Lights = tuple[frozenset[Button], frozenset[int], int]


def pending_requests(table: TableView) -> list[Effect]:
    """What the engine is waiting for from a device, as the effects that asked for it."""
    return list(table.awaiting().requests)


def device_of(effect: Effect) -> str | None:
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
    if phase in (Phase.BETTING, Phase.SETTLED) and table.bets and not table.shuffle_due:
        buttons.add(Button.NO_MORE_BETS)
        spots.update(table.bets)
    elif phase == Phase.INSURANCE:
        buttons.add(Button.INSURANCE_CLOSED)
        spots.update(table.spots)
    elif phase == Phase.PLAYERS and table.active is not None:
        spot = table.active[0]
        spots.add(spot)
        names = {d.action for d in table.legal_actions() if d.spot == spot}
        buttons.update(b for b, a in ((Button.STAND_NEXT, "stand"), (Button.DOUBLE, "double"),
                                      (Button.SPLIT, "split"), (Button.SURRENDER, "surrender")) if a in names)
    if table.alarms:
        buttons.add(Button.ALARM_ACK)
    alarm = ALARM_BLINK if table.halted is not None else ALARM_ON if table.alarms else ALARM_OFF
    return frozenset(buttons), frozenset(s for s in spots if 1 <= s <= 7), alarm


class DeviceCommands:
    """One queue and worker per device for the engine's requests, and the console's lights worker."""

    def __init__(self, devices: DeviceGroup, table: Callable[[], TableView], table_id: str) -> None:
        self.devices = devices
        self._table = table
        self.table_id = table_id
        self._queues: dict[str, asyncio.Queue[DeviceCommand]] = {}
        self._lights: Lights | None = None
        self._lights_wanted: Lights | None = None
        self._lights_changed = asyncio.Event()

    def workers(self, loop: asyncio.AbstractEventLoop) -> list[asyncio.Task[None]]:
        """Start one worker per device (the devices are open): the tasks, for the service to stop."""
        tasks = []
        for name in self.devices.devices:
            queue: asyncio.Queue[DeviceCommand] = asyncio.Queue()
            self._queues[name] = queue
            tasks.append(loop.create_task(self._device_worker(name, queue), name=f"{self.table_id}-{name}"))
        return tasks

    def dispatch(self, effects: Iterable[Effect]) -> None:
        """Send each device request among ``effects`` to its device's worker."""
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
        while self._table().awaiting().requested(RequestPeek) and self._table().dealer:
            try:
                await shoe.request_peek(self._table().dealer[0][0])
                return
            except DeviceError as e:
                log.warning("peek request failed, retrying", extra={"table": self.table_id, "reason": str(e)})
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)

    async def _shuffle(self) -> None:
        shuffler = cast(ShufflerDriver, self.devices["shuffler"])
        table = self._table()
        deck_set = table.deck_set if table.deck_set in DECK_SETS else DECK_SETS[0]
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

    def update_lights(self) -> None:
        """Want the lights the table calls for now (the worker sends them once it is free)."""
        wanted = console_lights(self._table())
        if wanted != self._lights_wanted:
            self._lights_wanted = wanted
            self._lights_changed.set()

    async def lights_worker(self) -> None:
        """Send the newest wanted lights to the console, if there is one (a failed send is retried at the next)."""
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
