"""What a device event means at the table (controller.service.device_inputs), on the pure engine, no I/O."""

from __future__ import annotations

from controller.game import events as ev
from controller.game.table import Table
from controller.profiles import load_rules
from controller.service.device_inputs import DeviceInputs
from drivers import events as dev

NOW = 1_795_000_000.0


def _feed(table: Table, inputs: DeviceInputs, device: str, event: dev.DeviceEvent) -> list[ev.Event]:
    """Translate and apply, as the service does (pending bets included)."""
    out = inputs.translate(device, event, table, NOW)
    for e in out:
        table.handle(e)
    for e in [*inputs.pending_bets(table), *inputs.pending_insurance(table)]:
        table.handle(e)
        out.append(e)
    return out


def _open(profile: str = "house-h17") -> tuple[Table, DeviceInputs]:
    table = Table(load_rules(profile, {"burn": 0}))
    table.handle(ev.TableOpened(now=NOW))
    return table, DeviceInputs()


def _shuffled(table: Table, inputs: DeviceInputs) -> None:
    comp = tuple(4 * table.rules.decks for _ in range(13))
    _feed(table, inputs, "shuffler", dev.ShuffleComplete("A", table.rules.cards_in_shoe, comp))


def _deal(table: Table, inputs: DeviceInputs, bets: dict[int, int], cards: tuple[str, ...],
          *, hole_face_down: bool = True) -> None:
    """Chips on the spots, no more bets, the cards out of the shoe (the hole card last, face down)."""
    for spot, cents in bets.items():
        _feed(table, inputs, "chips", dev.Wager(spot, "bet", cents, 1))
    _feed(table, inputs, "console", dev.ButtonPressed(dev.Button.NO_MORE_BETS))
    for card in cards:
        _feed(table, inputs, "shoe", dev.CardRead(card))
    if hole_face_down:
        _feed(table, inputs, "shoe", dev.HoleCardDealt())


def test_chips_placed_while_shuffling_become_bets_once_betting_opens() -> None:
    table, inputs = _open()
    assert table.phase == "shuffling"
    assert _feed(table, inputs, "chips", dev.Wager(3, "bet", 2500, 3)) == []
    _shuffled(table, inputs)
    assert table.bets == {3: (2500, None)}


def test_a_cleared_layout_after_the_round_is_not_a_bet_and_no_round_starts() -> None:
    table, inputs = _open()
    _shuffled(table, inputs)
    _deal(table, inputs, {2: 1000}, ("9C", "TS", "8D"))
    assert _feed(table, inputs, "shoe", dev.PeekResult(1, False)) == [ev.PeekResult(blackjack=False)]
    assert _feed(table, inputs, "shoe", dev.PeekResult(2, False)) == [], "a repeated answer is not applied twice"
    _feed(table, inputs, "console", dev.ButtonPressed(dev.Button.STAND_NEXT))
    assert table.awaiting_reveal
    _feed(table, inputs, "shoe", dev.HoleCardRevealed("7H"))
    assert table.phase == "settled"
    round_no = table.round
    assert _feed(table, inputs, "chips", dev.Wager(2, "bet", 0, 0)) == []
    assert table.round == round_no and table.phase == "settled"


def test_chips_added_after_no_more_bets_on_a_spot_not_playing_are_past_posting() -> None:
    table, inputs = _open("nj-shoe")  # doubling for less allowed
    _shuffled(table, inputs)
    _deal(table, inputs, {1: 1000, 4: 1000}, ("9C", "5D", "6S", "8D", "TC"))
    assert table.phase == "players" and table.active == (1, 0)
    out = _feed(table, inputs, "chips", dev.Wager(4, "bet", 3000, 3))
    assert len(out) == 1 and isinstance(out[0], ev.Irregularity) and "past-posting" in out[0].detail
    assert table.spots[4].hands[0].wager == 1000, "the wager stays what it was at no more bets"
    # chips added on the playing spot are a double for less, keyed by the button
    _feed(table, inputs, "chips", dev.Wager(1, "bet", 1500, 2))
    assert _feed(table, inputs, "console", dev.ButtonPressed(dev.Button.DOUBLE)) == [ev.Decision(1, "double", 500)]


def test_insurance_chips_are_the_insurance_decision_and_a_repeated_reading_is_not() -> None:
    table, inputs = _open()
    _shuffled(table, inputs)
    _deal(table, inputs, {2: 1000}, ("9C", "AS", "8D"))
    assert table.phase == "insurance"
    assert _feed(table, inputs, "chips", dev.Wager(2, "insurance", 500, 1)) == [ev.Decision(2, "insurance", 500)]
    fresh = DeviceInputs()  # a restarted service reads the same chips again
    assert fresh.translate("chips", dev.Wager(2, "insurance", 500, 1), table, NOW) == []


def test_console_buttons_act_on_the_active_hand_and_out_of_turn_is_an_irregularity() -> None:
    table, inputs = _open()
    _shuffled(table, inputs)
    out = inputs.translate("console", dev.ButtonPressed(dev.Button.STAND_NEXT), table, NOW)
    assert len(out) == 1 and isinstance(out[0], ev.Irregularity) and out[0].source == "console"
    assert inputs.translate("console", dev.ButtonReleased(dev.Button.STAND_NEXT), table, NOW) == []
    assert inputs.translate("console", dev.ButtonPressed(dev.Button.NEW_DECKS), table, NOW) == [
        ev.DecksChanged(now=NOW, deck_set="B")]


def test_device_health_becomes_fault_and_restore_once_each() -> None:
    table, inputs = _open()
    lost = dev.HealthChanged("shoe", dev.Health.LOST, "port closed")
    assert _feed(table, inputs, "shoe", lost) == [ev.DeviceFault("shoe", "port closed")]
    assert _feed(table, inputs, "shoe", lost) == [], "already lost"
    assert table.halted is not None
    assert inputs.translate("console", dev.ButtonPressed(dev.Button.ALARM_ACK), table, NOW) == [], \
        "a lost device's alarm is not the dealer's to clear"
    ok = dev.HealthChanged("shoe", dev.Health.OK)
    assert _feed(table, inputs, "shoe", ok) == [ev.DeviceRestored("shoe")]
    assert table.halted is None and not table.alarms


def test_alarm_button_acknowledges_the_oldest_alarm_a_dealer_may_clear() -> None:
    table, inputs = _open()
    _feed(table, inputs, "chips", dev.SensorFault(5, "bet", 1))
    _feed(table, inputs, "shoe", dev.Misread("unreadable"))
    first, second = sorted(table.alarms)
    assert table.alarms[first].code == "irregularity:chips" and "sensor dirty" in table.alarms[first].message
    assert table.alarms[second].halts, "a card nobody could read halts play"
    assert _feed(table, inputs, "console", dev.ButtonPressed(dev.Button.ALARM_ACK)) == [
        ev.AlarmAcknowledged(first)]
    assert list(table.alarms) == [second]


def test_after_a_restart_the_chips_of_the_round_just_settled_are_not_a_new_bet() -> None:
    table, inputs = _open()
    _shuffled(table, inputs)
    _deal(table, inputs, {2: 1000}, ("9C", "TS", "8D", "7H"), hole_face_down=False)
    _feed(table, inputs, "shoe", dev.PeekResult(1, False))
    _feed(table, inputs, "console", dev.ButtonPressed(dev.Button.STAND_NEXT))
    assert table.phase == "settled"
    restarted = DeviceInputs()  # the service restarted; the sensor still reads the settled round's chips
    assert _feed(table, restarted, "chips", dev.Wager(2, "bet", 1000, 1)) == []
    assert table.phase == "settled" and table.round == 1
    # chips on a spot that did not play the settled round were placed while the service was away: a bet
    assert _feed(table, restarted, "chips", dev.Wager(5, "bet", 1500, 2)) == [ev.BetPlaced(5, 1500)]
    assert table.round == 2 and table.phase == "betting"
    assert _feed(table, restarted, "chips", dev.Wager(2, "bet", 2000, 2)) == [ev.BetPlaced(2, 2000)]


def _settle_one_round(table: Table, inputs: DeviceInputs, bets: dict[int, int]) -> None:
    """A round on ``bets``: player 9+T=19 stands, dealer T+8=18 (peek: no blackjack)."""
    _deal(table, inputs, bets, ("9C",) * len(bets) + ("TS",) + ("TD",) * len(bets))
    _feed(table, inputs, "shoe", dev.PeekResult(1, False))
    for _ in bets:
        _feed(table, inputs, "console", dev.ButtonPressed(dev.Button.STAND_NEXT))
    _feed(table, inputs, "shoe", dev.HoleCardRevealed("8H"))
    assert table.phase == "settled", table.phase


def test_chips_left_lying_on_a_spot_are_in_action_at_no_more_bets() -> None:
    """What lies in the betting circle at no more bets is the wager, touched since the last round or not.

    A winner who lets the original chips ride changes no reading (the payout set beside them is
    picked up): a table that took only changes as bets dealt that player out of the round.
    """
    table, inputs = _open()
    _shuffled(table, inputs)
    _settle_one_round(table, inputs, {2: 1000, 5: 2500})
    _feed(table, inputs, "chips", dev.Wager(5, "bet", 0, 0))  # spot 5 lost: collected; spot 2's chips stay
    assert _feed(table, inputs, "chips", dev.Wager(4, "bet", 500, 1)) == [ev.BetPlaced(4, 500)]
    out = _feed(table, inputs, "console", dev.ButtonPressed(dev.Button.NO_MORE_BETS))
    assert out == [ev.BetPlaced(2, 1000), ev.NoMoreBets()]
    assert sorted(table.spots) == [2, 4]


def test_a_bet_placed_while_the_cut_card_round_is_reshuffled_is_played() -> None:
    """The shuffle asked at the settlement: chips moved meanwhile are deferred, then placed, never dropped."""
    table, inputs = _open()
    _shuffled(table, inputs)
    _feed(table, inputs, "chips", dev.Wager(3, "bet", 1500, 2))
    _feed(table, inputs, "console", dev.ButtonPressed(dev.Button.NO_MORE_BETS))
    for card in ("9C", "TS"):
        _feed(table, inputs, "shoe", dev.CardRead(card))
    _feed(table, inputs, "shoe", dev.CutCard())  # during the round: the shuffle waits for its settlement
    _feed(table, inputs, "shoe", dev.CardRead("TD"))
    _feed(table, inputs, "shoe", dev.HoleCardDealt())
    _feed(table, inputs, "shoe", dev.PeekResult(1, False))
    _feed(table, inputs, "console", dev.ButtonPressed(dev.Button.STAND_NEXT))
    _feed(table, inputs, "shoe", dev.HoleCardRevealed("8H"))
    assert table.phase == "settled" and table.shuffle_due
    _feed(table, inputs, "chips", dev.Wager(3, "bet", 0, 0))  # collected
    _feed(table, inputs, "shuffler", dev.ShuffleStarted("A"))
    assert _feed(table, inputs, "chips", dev.Wager(3, "bet", 1500, 2)) == []  # the same bet again, while shuffling
    _shuffled(table, inputs)
    assert table.bets == {3: (1500, None)}


def test_reads_the_shoe_cannot_replay_halt_play_naming_how_many_cards() -> None:
    table, inputs = _open()
    [alarm_input] = _feed(table, inputs, "shoe", dev.ReadsUnaccounted(3, (4, 120)))
    assert isinstance(alarm_input, ev.Irregularity) and alarm_input.halts
    assert alarm_input.detail.startswith("3 cards are unaccounted for")
    assert "read 120 of shoe load 4" in alarm_input.detail
    assert table.halted is not None
    [unknown] = inputs.translate("shoe", dev.ReadsUnaccounted(None, (4, 120)), table, NOW)
    assert isinstance(unknown, ev.Irregularity) and "an unknown number of cards" in unknown.detail
    [one] = inputs.translate("shoe", dev.ReadsUnaccounted(1, None), table, NOW)
    assert isinstance(one, ev.Irregularity) and one.detail.startswith("1 card is unaccounted for")


def test_insurance_chips_put_down_while_the_console_is_lost_are_taken_when_it_is_back() -> None:
    """Seen in a 20-table soak (seed 22): the console unplugged for 0.47 s as a player insured; the reading came
    while the round was held, was refused as an irregularity, and the sensor, reporting a level, never sent it
    again: the round waited for ever for insurance to close."""
    table, inputs = _open()
    _shuffled(table, inputs)
    _deal(table, inputs, {1: 1000}, ("9H", "AS", "7C"))
    assert table.phase == "insurance"
    _feed(table, inputs, "console", dev.HealthChanged("console", dev.Health.LOST, "unplugged"))
    assert _feed(table, inputs, "chips", dev.Wager(1, "insurance", 500, 1)) == [], "held: no refusal, no alarm"
    assert not table.spots[1].insurance
    back = _feed(table, inputs, "console", dev.HealthChanged("console", dev.Health.OK))
    assert back == [ev.DeviceRestored("console"), ev.Decision(1, "insurance", amount=500)]
    assert table.spots[1].insurance == 500
    assert _feed(table, inputs, "console", dev.HealthChanged("console", dev.Health.OK)) == [], "taken once"


def test_a_shuffle_that_completes_after_the_pit_closed_the_table_is_taken() -> None:
    """The pit closes the table while the shuffler runs: its shuffle still counts (the engine takes
    ``shuffle_done`` while closed), so the reopened table does not ask the shuffler again."""
    table, inputs = _open()
    assert inputs.translate("shuffler", dev.ShuffleStarted("A"), table, NOW) == [ev.ShuffleStarted()]
    table.handle(ev.ShuffleStarted())
    table.handle(ev.TableClosed(now=NOW))
    assert table.phase == "closed" and table.shuffle_due
    _shuffled(table, inputs)
    assert not table.shuffle_due and table.shuffles == 1
    table.handle(ev.TableOpened(now=NOW + 60))
    assert table.phase == "betting" and not table.shuffle_due
