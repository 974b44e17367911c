"""What a device event means at the table: typed device events in, engine inputs out.

The drivers know bytes, the engine knows the rule book; this module is the dictionary
between them, and the only place that knows both. It is pure (no I/O, no clock: ``now``
is passed in) and reads the engine only to resolve what a device cannot know, such as
which hand a console button acts on. Each translation is documented where it is made:

========================  ==============================================================
device event              engine input
========================  ==============================================================
shoe ``card``             :class:`CardDrawn` (a hit is a card leaving the shoe)
shoe ``hole_dealt``       :class:`HoleCardDealt` (face down, value withheld by the shoe)
shoe ``hole_revealed``    :class:`DealerReveal` with the card, when the engine awaits it
shoe ``cut_card``         :class:`CutCardReached`
shoe ``peek``             :class:`PeekResult` while a peek is awaited; ``None`` (no hole card
                          held) is a halting irregularity
shoe ``misread``          halting irregularity: a card is out that nobody could read
shoe ``reads_unaccounted`` halting irregularity naming how many cards the shoe read while the
                          table was down and can no longer send (docs/protocols.md)
shoe ``shoe`` removed     :class:`DeviceFault` (dealing without the reader is not allowed)
shuffler ``shuffle_*``    :class:`ShuffleStarted` / :class:`ShuffleDone` while one is due
shuffler ``jam``          :class:`DeviceFault` until cleared
chips ``wager`` (bet)     :class:`BetPlaced` while bets are taken; later, added chips on a
                          spot that is not playing are an irregularity (past-posting)
chips ``wager`` (ins.)    ``Decision(insurance, amount)`` while insurance is open
chips ``sensor_fault``    irregularity naming the spot
console buttons           no more bets (after a bet for each circle whose chips differ from the
                          bets taken: the levels decide), stand, double, split, surrender (the active hand),
                          insurance closed, new decks, alarm acknowledge (oldest first)
console spot key          ``Decision(even_money)`` for that spot while insurance is open
console ``badge``         :class:`DealerAssigned` of the badge's dealer, ``by`` ``badge`` (held by the engine
                          until a round in play settles); ``badge_sign_out``: the same with no dealer;
                          ``badge_unreadable``: a non-halting device alarm (``irregularity:badge_reader``)
                          asking the dealer to swipe again
card reader ``reader_lost`` a non-halting irregularity naming the spot (the card in it is taken as still in:
                          the rating goes on); ``card_unreadable`` likewise; ``card_in`` / ``card_out`` are
                          not the engine's: the service journals them (:mod:`controller.service.ratings`)
health ``lost``/``fault`` :class:`DeviceFault`; back to ``ok``: :class:`DeviceRestored`
========================  ==============================================================

Chip readings are a level, not an event: the sensor reports what lies on a spot, and at no more
bets the levels decide (:meth:`DeviceInputs.bets_lying`: chips left lying since the last round are
in action). Readings
that arrive while the shoe is being shuffled or play is halted are kept and placed as bets
once betting opens
(:meth:`DeviceInputs.pending_bets`). A reading of zero between rounds is the dealer clearing
the layout, not a bet; nor is a sensor's first reading after a restart, while the round just settled, of
that round's wager on the spot (the chips still lying there): a change after it is.
"""

from __future__ import annotations

from controller.contract.alarms import BADGE_READER_SOURCE, CARD_READER_SOURCE, DECK_CHANGE_OVERDUE, lost_device
from controller.contract.phases import ROUND_PHASES, Phase
from controller.game import events as ev
from controller.game.cards import RANKS
from controller.game.dealer_duty import BADGE
from controller.game.effects import RequestPeek, StartShuffle
from controller.game.money import format_money
from controller.game.view import TableView
from drivers import events as dev
from drivers.chips import FAULT_CODES
from drivers.playercard import CardReaderLost, PlayerCardUnreadable

#: phases in which chips on the bet line are wagers for the next round
BETTING_PHASES = frozenset({Phase.BETTING.value, Phase.SETTLED.value})

_BUTTON_ACTIONS: dict[dev.Button, ev.Action] = {
    dev.Button.STAND_NEXT: "stand",
    dev.Button.DOUBLE: "double",
    dev.Button.SPLIT: "split",
    dev.Button.SURRENDER: "surrender",
}


def _unaccounted(event: dev.ReadsUnaccounted) -> str:
    after = "" if event.after is None else f" after read {event.after[1]} of shoe load {event.after[0]}"
    if event.count is None:
        return (f"the shoe cannot replay its reads{after} (reset or replaced since): an unknown number of "
                "cards are unaccounted for; count the cards on the layout against the round, then acknowledge")
    cards = "card is" if event.count == 1 else "cards are"
    return (f"{event.count} {cards} unaccounted for: the shoe no longer holds {event.count} of its reads{after} "
            "made while the table was down; count the cards on the layout against the round, then acknowledge")


class DeviceInputs:
    """Translates one table's device events; keeps the last chip reading of every sensor."""

    def __init__(self) -> None:
        #: (spot, line) -> cents, as last read by the chip sensors
        self.readings: dict[tuple[int, str], int] = {}
        #: spots whose bet-line reading changed while no bet could be taken
        self.deferred: set[int] = set()
        #: spots whose insurance chips went down while the round was held by a lost device
        self.insurance_deferred: set[int] = set()

    def translate(self, device: str, event: dev.DeviceEvent, table: TableView, now: float) -> list[ev.Event]:
        """The engine inputs ``event`` from ``device`` stands for, in order (often none)."""
        if isinstance(event, dev.HealthChanged):
            return self._health(event, table)
        if isinstance(event, dev.CardRead):
            return [ev.CardDrawn(event.card)]
        if isinstance(event, dev.HoleCardDealt):
            return [ev.HoleCardDealt()]
        if isinstance(event, dev.HoleCardRevealed):
            return [ev.DealerReveal(card=event.card)]
        if isinstance(event, dev.CutCard):
            return [ev.CutCardReached()]
        if isinstance(event, dev.PeekResult):
            return self._peek(event, table)
        if isinstance(event, dev.Misread):
            return [ev.Irregularity("shoe", f"a card left the shoe unread ({event.reason}): present it to the "
                                    "reader again, then acknowledge", halts=True)]
        if isinstance(event, dev.ReadsUnaccounted):
            return [ev.Irregularity("shoe", _unaccounted(event), halts=True)]
        if isinstance(event, dev.ShoePresence):
            if not event.inserted:
                return [ev.DeviceFault("shoe", "shoe body removed from its base")]
            return [ev.DeviceRestored("shoe")] if table.devices.get("shoe") == "lost" else []
        if isinstance(event, dev.ShuffleStarted):
            return [ev.ShuffleStarted()] if table.shuffle_due else []
        if isinstance(event, dev.ShuffleComplete):
            return self._shuffled(event, table)
        if isinstance(event, dev.Jam):
            if event.cleared:
                return [ev.DeviceRestored("shuffler")] if table.devices.get("shuffler") == "lost" else []
            return [ev.DeviceFault("shuffler", f"cards jammed in deck set {event.deck_set}")]
        if isinstance(event, dev.Wager):
            return self._wager(event, table)
        if isinstance(event, dev.SensorFault):
            what = FAULT_CODES.get(event.code, f"code {event.code}")
            return [ev.Irregularity("chips", f"spot {event.spot} {event.line} sensor: {what}")]
        if isinstance(event, dev.ButtonPressed):
            return self._button(event.button, table, now)
        if isinstance(event, dev.SpotSelected):
            return self._spot_key(event, table)
        if isinstance(event, dev.BadgeRead | dev.BadgeSignOut):
            return [ev.DealerAssigned(dealer=event.badge if isinstance(event, dev.BadgeRead) else None, by=BADGE)]
        if isinstance(event, dev.BadgeUnreadable):
            return [ev.Irregularity(BADGE_READER_SOURCE, f"{event.reason}: nobody signed in; swipe the badge again")]
        if isinstance(event, CardReaderLost):
            return [ev.Irregularity(CARD_READER_SOURCE, f"spot {event.spot} player-card reader lost ({event.reason}): "
                                    "the card in it is taken as still in; check the reader's cable")]
        if isinstance(event, PlayerCardUnreadable):
            return [ev.Irregularity(CARD_READER_SOURCE, f"spot {event.spot} player card unreadable ({event.reason}): "
                                    "play is unrated until a card is read")]
        # link_up, dealing, deck_set_ready, count_mismatch (the count travels with shuffle_complete),
        # door, button_released: nothing happens at the table
        return []

    # -- devices ------------------------------------------------------------------------------

    @staticmethod
    def _health(event: dev.HealthChanged, table: TableView) -> list[ev.Event]:
        if event.device not in table.devices:
            return []
        lost = table.devices[event.device] == "lost"
        if event.health in (dev.Health.LOST, dev.Health.FAULT) and not lost:
            return [ev.DeviceFault(event.device, event.reason or event.health.value)]
        if event.health in (dev.Health.OK, dev.Health.DEGRADED) and lost:
            return [ev.DeviceRestored(event.device)]
        return []

    # -- shoe and shuffler ----------------------------------------------------------------------

    @staticmethod
    def _peek(event: dev.PeekResult, table: TableView) -> list[ev.Event]:
        if not table.awaiting().requested(RequestPeek):
            return []  # an answer to a request repeated after a reconnect: already applied
        if event.blackjack is None:
            return [ev.Irregularity("shoe", "the peek reader holds no hole card: the hole card was not dealt "
                                    "through the shoe's reader", halts=True)]
        return [ev.PeekResult(blackjack=event.blackjack)]

    @staticmethod
    def _shuffled(event: dev.ShuffleComplete, table: TableView) -> list[ev.Event]:
        if not (table.shuffle_due or table.awaiting().requested(StartShuffle)):  # closed: no requests, a shuffle counts
            return []  # a shuffle asked for twice (after a reconnect): the first one counted
        composition = dict(zip(RANKS, event.composition, strict=True))
        return [ev.ShuffleDone(count=event.count, composition=composition, deck_set=event.deck_set)]

    # -- chips ------------------------------------------------------------------------------------

    def _wager(self, event: dev.Wager, table: TableView) -> list[ev.Event]:
        key = (event.spot, event.line)
        before = self.readings.get(key)
        self.readings[key] = event.cents
        phase = table.phase
        if event.line == "insurance":
            if phase == Phase.INSURANCE and event.cents > 0:
                spot = table.spots.get(event.spot)
                if spot is not None and spot.insurance == event.cents:
                    return []  # the reading after a restart of a wager the table already holds
                if table.round_held() is not None:  # a level: taken once the device is back (pending_insurance)
                    self.insurance_deferred.add(event.spot)
                    return []
                return [ev.Decision(event.spot, "insurance", amount=event.cents)]
            if phase in ROUND_PHASES and before is not None and event.cents > before:
                return [ev.Irregularity("chips", f"spot {event.spot}: insurance chips placed after insurance "
                                        "closed")]
            return []
        if phase == Phase.SETTLED and before is None:
            last = table.spots.get(event.spot)
            if last is not None and last.wager == event.cents:
                return []  # a first reading after a (re)start: the settled round's chips, not a new bet
        if phase in BETTING_PHASES and not table.shuffle_due and table.halted is None:
            placed = table.bets.get(event.spot)
            if event.cents == 0 and placed is None:
                return []  # the layout being cleared after the round
            if placed is not None and placed[0] == event.cents:
                return []
            return [ev.BetPlaced(event.spot, event.cents)]
        if phase not in ROUND_PHASES:
            self.deferred.add(event.spot)  # shuffling, closed or halted: a bet once betting opens
            return []
        if phase in ROUND_PHASES and before is not None and event.cents > before:
            active = table.active[0] if table.active is not None else None
            if event.spot != active:
                return [ev.Irregularity(
                    "chips", f"spot {event.spot}: chips added after no more bets "
                    f"({format_money(before)} to {format_money(event.cents)}): past-posting")]
        return []

    def pending_bets(self, table: TableView) -> list[ev.Event]:
        """Chips that changed while no bet could be taken (shuffling, closed) become bets once one can."""
        if not self.deferred or table.phase not in BETTING_PHASES or table.shuffle_due or table.halted is not None:
            return []
        out: list[ev.Event] = []
        for spot in sorted(self.deferred):
            cents = self.readings.get((spot, "bet"), 0)
            placed = table.bets.get(spot)
            if (cents > 0 and (placed is None or placed[0] != cents)) or (cents == 0 and placed is not None):
                out.append(ev.BetPlaced(spot, cents))
        self.deferred.clear()
        return out

    def pending_insurance(self, table: TableView) -> list[ev.Event]:
        """Insurance chips put down while the round was held (a device lost) are the spot's insurance once
        the round resumes, while insurance is still open: the sensor reports a level, so it will not
        report them again."""
        if not self.insurance_deferred or table.phase != Phase.INSURANCE or table.round_held() is not None:
            return []
        out: list[ev.Event] = []
        for number in sorted(self.insurance_deferred):
            cents = self.readings.get((number, "insurance"), 0)
            spot = table.spots.get(number)
            if cents > 0 and spot is not None and spot.insurance != cents:
                out.append(ev.Decision(number, "insurance", amount=cents))
        self.insurance_deferred.clear()
        return out

    def bets_lying(self, table: TableView) -> list[ev.Event]:
        """At no more bets, what lies in each betting circle is its wager (the sensors' levels decide).

        Bets are taken as they change; chips that never changed (a winner letting the original
        bet ride, the payout picked up beside it) or a change the table could not take are
        reconciled here, so no player in the circle is dealt out of the round.
        """
        if table.phase not in BETTING_PHASES or table.shuffle_due or table.halted is not None:
            return []
        out: list[ev.Event] = []
        spots = {spot for spot, line in self.readings if line == "bet"} | set(table.bets)
        for spot in sorted(spots):
            cents = self.readings.get((spot, "bet"))
            if cents is None:
                continue  # a sensor not read yet says nothing
            placed = table.bets.get(spot)
            if (placed[0] if placed is not None else 0) != cents:
                out.append(ev.BetPlaced(spot, cents))
        return out

    def chips_added_to_double(self, table: TableView) -> int | None:
        """Chips added on the active spot since the deal: a double for less when below the wager."""
        if table.active is None:
            return None
        spot_no, idx = table.active
        spot = table.spots[spot_no]
        reading = self.readings.get((spot_no, "bet"))
        if reading is None:
            return None
        on_layout = sum(h.wager for h in spot.hands)
        added = reading - on_layout
        hand = spot.hands[idx]
        return added if 0 < added < hand.wager else None

    # -- console ------------------------------------------------------------------------------------

    def _button(self, button: dev.Button, table: TableView, now: float) -> list[ev.Event]:
        if button == dev.Button.NO_MORE_BETS:
            return [*self.bets_lying(table), ev.NoMoreBets()]
        if button == dev.Button.INSURANCE_CLOSED:
            return [ev.InsuranceClosed()]
        if button == dev.Button.NEW_DECKS:
            return [ev.DecksChanged(now=now, deck_set="B" if table.deck_set == "A" else "A")]
        if button == dev.Button.ALARM_ACK:
            return self._acknowledge(table)
        action = _BUTTON_ACTIONS[button]
        if table.active is None:
            return [ev.Irregularity("console", f"{action} pressed while no hand is in play ({table.phase})")]
        spot = table.active[0]
        amount = self.chips_added_to_double(table) if action == "double" else None
        return [ev.Decision(spot, action, amount=amount)]

    @staticmethod
    def _acknowledge(table: TableView) -> list[ev.Event]:
        """The alarm button acknowledges the oldest alarm a dealer may clear (operator None: the console).

        An alarm that halts for integrity is the pit's: a supervisor clears it with a reason."""
        for alarm in table.alarms.values():
            if lost_device(alarm.code) is not None or alarm.code == DECK_CHANGE_OVERDUE:
                continue  # these clear when the device is back / the decks are changed
            if alarm.integrity:
                continue
            return [ev.AlarmAcknowledged(alarm.id)]
        return []

    @staticmethod
    def _spot_key(event: dev.SpotSelected, table: TableView) -> list[ev.Event]:
        if not event.pressed or table.phase != Phase.INSURANCE:
            return []
        if ev.Decision(event.spot, "even_money") in table.legal_actions():
            return [ev.Decision(event.spot, "even_money")]
        return [ev.Irregularity("console", f"spot {event.spot}: even money is not offered to this hand")]
