"""The simulated dealer and players of a demo table, acting on the simulated devices.

:class:`controller.sim.dealer.SimulatedDealer` decides what the people at the table do next,
from the seed and the engine's state; :class:`SimCrew` does it the way people do, on the
hardware: players put chips on the spots and on the insurance line (the chip sensors), the
dealer presses the console's buttons and pulls cards out of the shoe, face down for the hole
card. The table service sees only what the real drivers report, exactly as at a real table.

After each act the crew waits until the engine has taken the input it caused (the service
numbers its inputs), so its next choice is made on the engine's state, as the simulated
dealer requires. That state lives in the journal, and :meth:`SimCrew.restore` puts the
simulators back where the journal says the table is (shoe order and position, the face-down
hole card, the chips on the layout): a demo killed at any moment and restarted carries on
with the same cards and the same choices.
"""

from __future__ import annotations

import asyncio
import logging

from controller.contract.alarms import DECK_CHANGE_DUE, DECK_CHANGE_OVERDUE
from controller.contract.phases import ROUND_PHASES, Phase
from controller.game import events as ev
from controller.game.view import TableView
from controller.service.table_service import TableService
from controller.sim.dealer import SimulatedDealer
from controller.sim.duty import DealerDuty
from drivers.chips import ChipsDriver
from drivers.chips import address as chips_address
from drivers.events import Button
from simulators.hardware import SimTable

log = logging.getLogger("controller.sim.crew")

#: how long the crew waits for the table to take an act before it calls the demo stuck
STUCK_AFTER_S = 30.0
#: what :meth:`SimCrew._wait` answers when the decks must be changed before its act can be taken
DECKS_FIRST = "decks first"
#: a button press or chips the table did not take within this are done again (a person presses again)
AGAIN_AFTER_S = 2.0

_BUTTONS: dict[str, Button] = {
    "stand": Button.STAND_NEXT,
    "double": Button.DOUBLE,
    "split": Button.SPLIT,
    "surrender": Button.SURRENDER,
}


class DemoStuck(RuntimeError):
    """The table did not take an act of the simulated crew (a bug, or a device that never came back)."""


def next_card_face_down(table: TableView) -> bool:
    """Whether the card the engine wants next is the dealer's hole card (dealt face down)."""
    return table.awaiting().face_down


class SimCrew:
    """Dealer and players of one simulated table (see the module docstring)."""

    def __init__(
        self,
        service: TableService,
        sim: SimTable,
        dealer: SimulatedDealer,
        *,
        pace: dict[str, float],
        rounds: int | None = None,
        duty: DealerDuty | None = None,
    ) -> None:
        self.service = service
        self.sim = sim
        self.dealer = dealer
        self.pace = pace
        self.rounds = rounds
        #: who deals (the roster's relief schedule): their badges, pace and slips (controller/sim/duty.py)
        self.duty = duty
        self._loaded_shuffle = -1
        self._cleared_round = -1
        self._refused = 0  # the same act refused in a row
        self._pressed_unplugged = False  # the console's cable was out at the last act
        self._unplugs_at_press = 0
        #: what the crew waits for right now ("" while it acts): a stalled demo or test names it
        self.waiting_for = ""
        self._said = ""  # the last wait for people said on the log (once per wait, not once per look)

    @property
    def table(self) -> TableView:
        return self.service.table

    @property
    def rounds_left(self) -> int | None:
        if self.rounds is None:
            return None
        # rounds settled since the table first opened: the round number, less a round still open
        # (the totals' count starts again at every open, and a close and an open are not a new budget)
        table = self.table
        return max(0, self.rounds - (table.round - (1 if table.round_open else 0)))

    # -- putting the simulators where the journal says the table is --------------------------

    def restore(self) -> None:
        """Load the shoe, the hole card and the chips of the table's current state (before the devices open)."""
        table = self.table
        self.dealer.prepare()  # before the devices run: it would stall their links
        if table.shuffles > 0:
            self._load_shoe()
        self.sim.shoe.enabled = not table.shuffle_due
        chips = self.sim.chips
        chips.clear()
        if table.phase == Phase.BETTING:
            for spot, (amount, _player) in table.bets.items():
                chips.set_wager(spot, amount)
        elif table.phase in ROUND_PHASES:
            for s in table.order:
                chips.set_wager(s.number, s.wager)
                if s.insurance:
                    chips.set_wager(s.number, s.insurance, line="insurance")

    def _load_shoe(self) -> None:
        table, shoe = self.table, self.sim.shoe
        cards = self.dealer.shoe(table.shuffles)
        shoe.stack(cards, cut_at=table.rules.cut_card_index)
        shoe.position = table.cards_dealt
        shoe.cut_card_out = table.cut_card_reached
        hole = table.hole_position
        shoe.hole = cards[hole] if hole is not None else None
        last_read = self.service.core.last_shoe_read
        if last_read is not None:  # a shoe that survived the table's crash numbers on
            shoe.restore_numbering(*last_read, loaded_since=table.cards_dealt == 0 and not table.cut_card_reached)
        self._loaded_shuffle = table.shuffles

    # -- playing --------------------------------------------------------------------------------

    async def play(self) -> None:
        """Play until the round budget is spent (forever without one)."""
        service = self.service
        while self.rounds_left != 0:
            table = self.table
            if self._layout_to_clear():
                await self._clear_layout()
                self._cleared_round = table.round
                await asyncio.sleep(self.pace["settled"])
                continue
            if self.duty is not None and await self.duty.relieve():
                continue  # a dealer signed in (a relief, or the first of the day): look again
            mark = service.applied
            if self._decks_to_change():  # before the halt: decks overdue halt play until they are changed
                self.sim.console.tap(Button.NEW_DECKS)
                await self._wait(mark, {"decks_changed", "irregularity"}, "new decks to reach the table")
                continue
            waiting_for = self._waiting_for_the_pit()
            if waiting_for is not None:
                self._say(waiting_for)
                await self._wait(mark, None, waiting_for)
                continue
            self._said = ""
            intent = self.dealer.next_with_devices(table)
            if intent is None:  # the devices are answering the engine (shuffle, peek, reveal)
                await self._wait(mark, None, f"the devices ({table.snapshot()['awaiting']})")
                continue
            if isinstance(intent, ev.NoMoreBets) and self.duty is not None:
                await self.duty.slip_before_no_more_bets()  # now and then a procedure error first
                mark = service.applied
            expected = await self._act(intent)
            if not await self._taken(mark, expected, intent):
                continue  # a device dropped between the look and the act: the table holds; act again later
            await asyncio.sleep(self.pace[_pace_kind(intent)] * (self.duty.pace() if self.duty else 1.0))

    def _layout_to_clear(self) -> bool:
        """A round settled (or the table closed) since the dealer last cleared the layout.

        Looked at by the round, not the phase: a shuffle asked at the settlement can move the
        table on to ``shuffling`` before the dealer looks up, and the settled round's chips must
        still go before the next round's bets (a bet equal to chips left lying changes no reading).
        """
        table = self.table
        if table.phase == Phase.CLOSED:
            return any(cents for cents, _ in self.sim.chips.readings.values())
        return not table.round_open and table.phase not in ROUND_PHASES and table.round != self._cleared_round

    def _waiting_for_the_pit(self) -> str | None:
        """What the crew waits for, for as long as it takes, before it may go on; None: play on.

        A closed table waits for ``open``, a halted one for its alarm to be acknowledged (or its
        device back, its decks changed), a lost device for its cable: people do not call that stuck.
        """
        table = self.table
        if table.phase == Phase.CLOSED:
            return "the table to open"
        if self._devices_lost():
            return "a lost device to come back"
        if table.halted is not None and not table.round_open and table.phase != Phase.SHUFFLING:
            return f"the halt to end ({table.halted})"
        return None

    def _say(self, waiting_for: str) -> None:
        """Say once on stderr what the table waits for: a halted table or a lost device stops a demo's rounds
        until a person acts, and a demo that only stood still looked hung (issue #35). A close is a person's own
        act: said at INFO."""
        if waiting_for == self._said:
            return
        self._said = waiting_for
        table_id = self.service.core.table_id
        if waiting_for == "the table to open":
            log.info("%s is closed: the demo waits for the table to open", table_id)
            return
        act = ("the alarm acknowledged (ack_alarm: surveillance for an integrity alarm, the pit otherwise)"
               if waiting_for.startswith("the halt") else "the device back")
        log.warning("%s halted, its rounds stopped: the demo waits for %s (%s), or Ctrl-C to stop it",
                    table_id, waiting_for, act)

    def _decks_to_change(self) -> bool:
        """Before the deal, the dealer opens new decks once the pit is told they are due.

        Wagers already on the layout do not wait: decks overdue halt play, so the table takes no
        more bets and no "no more bets" until the decks are changed (the players' chips stay put).
        """
        table = self.table
        if table.phase not in (Phase.SETTLED, Phase.BETTING) or table.shuffle_due or self._devices_lost():
            return False
        return any(a.code in (DECK_CHANGE_DUE, DECK_CHANGE_OVERDUE) for a in table.alarms.values())

    async def _taken(self, mark: int, expected: set[str], intent: ev.Event) -> bool:
        """Whether the table took the act; False when it refused it for a reason that may pass.

        The table may change between the crew's look and its act: a cable pulled, an alarm that
        halts, the table closed, new limits from the pit. The crew then looks again; the same act
        refused three times in a row is a bug (:class:`DemoStuck`).
        """
        while True:
            again = None if isinstance(intent, ev.CardDrawn) else intent
            number, got = await self._wait(mark, expected | {"irregularity", "table_closed"},
                                           f"{intent.TYPE} to reach the table", again)
            if got == DECKS_FIRST:
                return False
            if got == "table_closed" and self.table.phase != Phase.CLOSED:
                mark = number  # a close asked mid-round (it takes effect at the settlement): keep waiting for ours
                continue
            if got == "table_closed":  # the pit closed the table under the act: the players take their chips
                await self._clear_layout()  # read off by the sensors before any goes down again (a level)
                return False
            if got in expected:
                self._refused = 0
                return True
            if self.service.refused_input(number) in expected | {intent.TYPE}:
                self._refused += 1
                if self._waiting_for_the_pit() is not None or self._refused < 3:
                    if isinstance(intent, ev.BetPlaced):
                        self.sim.chips.set_wager(intent.spot, 0)  # the player takes the refused chips back
                        await self._sensors_read(f"spot {intent.spot} emptied")
                    return False
                raise DemoStuck(f"the table refused the crew's {intent.TYPE}: {self.service.last_refusal}")
            mark = number  # an irregularity of someone else's making: keep waiting for ours

    def _devices_lost(self) -> bool:
        return self.table.round_held() is not None  # the engine's rule: a lost device holds the round

    async def _wait(self, mark: int, types: set[str] | None, what: str,
                    again: ev.Event | None = None) -> tuple[int, str]:
        """The first input after ``mark`` (of ``types``); the act ``again`` is done again while not taken.

        A press on a console whose USB cable is out for a moment is lost, as it is at a real
        table, and the dealer presses again; a card is never dealt twice (it is on the layout).
        """
        waited = 0.0
        self.waiting_for = what
        while True:
            step = AGAIN_AFTER_S if again is not None else STUCK_AFTER_S
            try:
                got = await self.service.wait_input(mark, types, timeout=step)
                self.waiting_for = ""
                return got
            except TimeoutError:
                if again is not None and self._decks_to_change():
                    # decks overdue halt play under the act: the table keeps a bet put down now and
                    # places it once betting opens again, so the dealer changes the decks first
                    self.waiting_for = ""
                    return mark, DECKS_FIRST
                if self._waiting_for_the_pit() is not None:
                    waited = 0.0
                    continue  # closed, halted or a pulled cable: the table waits for people, not for us
                waited += step
                if waited >= STUCK_AFTER_S:
                    raise DemoStuck(f"waited {STUCK_AFTER_S:g} s for {what} (phase {self.table.phase}; "
                                    f"{self._what_the_table_saw(again)})") from None
                if (again is not None and self._press_may_be_lost(again)
                        and self.dealer.next_with_devices(self.table) == again):
                    await self._act(again)

    def _what_the_table_saw(self, intent: ev.Event | None) -> str:
        """For a stuck demo's message: the devices' health and, for chips put down, the spot as each layer saw it
        (the chips lying there, the sensor's last reading, the service's, the bet the table holds)."""
        table = self.table
        said = f"devices {self.service.devices.health}, halted {table.halted}, shuffle due {table.shuffle_due}"
        if not isinstance(intent, ev.BetPlaced):
            return said
        spot = intent.spot
        lying = self.sim.chips.readings.get(chips_address(spot), (0, 0))[0]
        chips = self.service.devices.devices.get("chips")
        sensor = (f"{chips.wager(spot)} after {chips.cycles} poll cycles" if isinstance(chips, ChipsDriver)
                  else "no chips driver")
        inputs = self.service.inputs
        return (f"{said}; spot {spot}: chips lying {lying}, sensor read {sensor}, service read "
                f"{inputs.readings.get((spot, 'bet'))} (kept for betting: {spot in inputs.deferred}), "
                f"the table's bet {table.bets.get(spot)}")

    def _press_may_be_lost(self, intent: ev.Event) -> bool:
        """Whether doing ``intent`` again is safe and may be needed. Chips are a level (putting the same
        chips down again changes nothing); a console press is pressed again only if the console's cable
        was out when it was made or since: a press that is merely slow (a loaded machine) would be taken
        twice, and a second "stand" would stand the next hand."""
        if isinstance(intent, ev.BetPlaced) or (isinstance(intent, ev.Decision) and intent.action == "insurance"):
            return True
        console = self.sim.console
        return self._pressed_unplugged or console.unplugs != self._unplugs_at_press

    async def _act(self, intent: ev.Event) -> set[str]:
        """Do ``intent`` on the devices; the input types that show the table took it."""
        sim = self.sim
        self._pressed_unplugged, self._unplugs_at_press = not sim.console.plugged, sim.console.unplugs
        if isinstance(intent, ev.BetPlaced):
            sim.chips.set_wager(intent.spot, intent.amount)
            return {"bet"}
        if isinstance(intent, ev.NoMoreBets):
            sim.console.tap(Button.NO_MORE_BETS)
            return {"no_more_bets"}
        if isinstance(intent, ev.CardDrawn):
            await self._deal(intent.card)
            return {"card", "hole_card_dealt"}
        if isinstance(intent, ev.InsuranceClosed):
            sim.console.tap(Button.INSURANCE_CLOSED)
            return {"insurance_closed"}
        if isinstance(intent, ev.Decision):
            if intent.action == "insurance":
                sim.chips.set_wager(intent.spot, intent.amount or 0, line="insurance")
            elif intent.action == "even_money":
                sim.console.tap(intent.spot)
            else:
                sim.console.tap(_BUTTONS[intent.action])
            return {"decision"}
        raise DemoStuck(f"the simulated crew has no way to do {intent!r}")

    async def _deal(self, expected: str) -> None:
        table, shoe = self.table, self.sim.shoe
        if self._loaded_shuffle != table.shuffles:
            self._load_shoe()
        self.waiting_for = f"the shoe to take {expected}"
        async with asyncio.timeout(STUCK_AFTER_S):
            while not shoe.enabled:  # the engine's "open the gate" is on its way to the shoe
                await asyncio.sleep(0.002)
            await shoe.wait_space()
        self.waiting_for = ""
        card = shoe.deal(face_down=next_card_face_down(table))
        if card != expected:
            raise DemoStuck(f"the simulated shoe dealt {card}, the seed says {expected}")

    async def _clear_layout(self) -> None:
        """The layout emptied: the dealer collects after a round, the players take their chips at a close."""
        self.sim.chips.clear()
        await self._sensors_read("the cleared layout")

    async def _sensors_read(self, what: str) -> None:
        """Wait until the chip sensors read what lies on the layout now (two whole poll cycles after it changed:
        right after a restart the driver may not have read the spots at all yet).

        Chips are a level: chips taken off and put down again before a poll read the spot empty change no
        reading, and the table never sees that bet (it takes them at no more bets, which the crew presses only
        once its bets are taken)."""
        chips = self.service.devices.devices.get("chips")
        if not isinstance(chips, ChipsDriver):
            return
        lying = self.sim.chips.readings

        def behind() -> bool:
            return any(cents != lying.get(chips_address(spot, line), (0, 0))[0]
                       for (spot, line), (cents, _) in chips.wagers.items())

        cycles = chips.cycles
        waited = 0.0
        self.waiting_for = f"the chip sensors to read {what}"
        while chips.cycles < cycles + 2 or behind():
            await asyncio.sleep(0.002)
            waited += 0.002
            if waited > STUCK_AFTER_S and not self._devices_lost():
                raise DemoStuck(f"the chip sensors never read {what}")
        self.waiting_for = ""


def _pace_kind(intent: ev.Event) -> str:
    if isinstance(intent, ev.CardDrawn):
        return "card"
    if isinstance(intent, ev.BetPlaced):
        return "bet"
    if isinstance(intent, ev.Decision):
        return "decision"
    return "other"

