"""The simulated crew behaves like a real crew toward the pit (issue 15: tables stalled at the default pace).

Each test runs one simulated table in this process (:class:`controller.sim.demo.DemoTable`) and does
what a pit does to it: a supervisor's commands, a halting alarm, a reshuffle at the cut card at
a person's pace. The table must keep settling rounds.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from controller.contract.alarms import alarm_kind
from controller.contract.topics import CommandTopic
from controller.game import events as ev
from controller.profiles import load_rules
from controller.sim import crew as simcrew
from controller.sim.demo import DemoTable
from tests.mqtt_broker import Mosquitto
from tests.service.test_table_service import _opts, _until, table_running


async def _command(table: DemoTable, verb: str, **payload: Any) -> dict[str, Any]:
    body = dict(payload)
    role = "pit"
    if verb == "ack_alarm":
        body.setdefault("reason", "checked at the table")  # a halting irregularity needs one
        alarm = table.core.table.alarms.get(int(payload["alarm_id"]))
        if alarm is not None and alarm_kind(alarm.code, alarm.halts) == "integrity":
            role = "surveillance"  # the pit may not clear an integrity alarm
    user = "s.jones" if role == "pit" else "eye.one"  # the sender (the broker vouches for the topic's user)
    result = await table.service.on_command(CommandTopic(role, user, verb), json.dumps(body).encode())
    return result.to_json()


async def _settles(table: DemoTable, task: asyncio.Task[None], more: int, timeout: float = 30.0) -> None:
    """``more`` rounds settle (the crew played on), or the crew's own error is raised."""
    target = table.core.table.rounds_settled + more
    try:
        await _until(lambda: table.core.table.rounds_settled >= target or task.done(), timeout, f"{more} rounds")
    except TimeoutError:
        engine = table.core.table
        raise AssertionError(
            f"{more} rounds did not settle in {timeout:g} s: {engine.rounds_settled} of {target} settled, phase "
            f"{engine.phase}, halted {engine.halted!r}, alarms {sorted(a.code for a in engine.alarms.values())}, "
            f"the crew waiting for {table.crew.waiting_for or 'nothing (acting)'!r}, last refusal "
            f"{table.service.last_refusal!r}") from None
    if task.done():
        task.result()
    assert table.core.table.rounds_settled >= target


async def test_the_layout_is_cleared_when_the_cut_card_round_settles_and_the_shuffle_starts_at_once(
        mosquitto: Mosquitto, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """At a person's pace the shuffler starts before the dealer looks up: the dealer still clears the layout.

    The demo used to clear the layout only if it saw the phase ``settled``; a shuffle started at
    the settlement moves it on to ``shuffling`` first, the settled round's chips stayed on the
    spots, and a player who bet the same amount on the same spot next round changed no reading:
    the table never saw the bet and the demo stopped after 30 s.
    """
    monkeypatch.setattr(simcrew, "STUCK_AFTER_S", 5.0)
    rules = load_rules("house-h17", {"decks": 1})  # a cut card every few rounds
    opts = _opts(rules, rounds=None, seed=5, prefix="clear")
    async with table_running(opts, tmp_path / "state", mosquitto.url) as (table, task):
        table.crew.pace = {"card": 0.03, "bet": 0.0, "decision": 0.0, "other": 0.0, "settled": 0.0}
        table.sim.shuffler.shuffle_time = 0.0
        chips = table.sim.chips
        set_wager = chips.set_wager
        leftovers: list[str] = []

        def checked_set_wager(spot: int, cents: int, *, line: str = "bet", chips_: int | None = None) -> None:
            engine = table.core.table
            if line == "bet" and not engine.bets:  # the first bet of a round: the layout must be bare
                lying = {a: c for a, (c, _) in chips.readings.items() if c and a < 0x80}
                if lying:
                    leftovers.append(f"round {engine.round + 1}: chips of the last round lying on {lying}")
            set_wager(spot, cents, line=line)

        chips.set_wager = checked_set_wager  # type: ignore[method-assign]
        await _settles(table, task, 25, timeout=60)
        assert table.core.table.shuffles >= 4
    assert not leftovers, leftovers[:3]


async def test_players_bet_within_the_limits_the_table_shows_from_the_next_round(
        mosquitto: Mosquitto, tmp_path: Path) -> None:
    """``set_limits`` 10/1000 on a running table: no $5 bet is refused afterwards, play goes on."""
    rules = load_rules("house-h17")
    async with table_running(_opts(rules, rounds=None, seed=3, prefix="limits"), tmp_path / "s",
                             mosquitto.url) as (table, task):
        await _settles(table, task, 2)
        # in the middle of a round: accepted as "from the next round"
        await _until(lambda: table.core.table.phase in ("dealing", "players"), 10, "a round in progress")
        result = await _command(table, "set_limits", min_bet="10", max_bet="1000")
        assert result["ok"], result
        await _settles(table, task, 6)
        engine = table.core.table
        assert (engine.min_bet, engine.max_bet) == (1000, 100000)
        assert engine.alarms == {}, [a.message for a in engine.alarms.values()]


async def test_the_crew_resumes_after_a_close_and_an_open(mosquitto: Mosquitto, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Closed longer than the crew's patience, with or without chips on the layout: it plays on after ``open``."""
    monkeypatch.setattr(simcrew, "STUCK_AFTER_S", 1.0)
    rules = load_rules("house-h17")
    async with table_running(_opts(rules, rounds=None, seed=4, prefix="reopen"), tmp_path / "s",
                             mosquitto.url) as (table, task):
        await _settles(table, task, 2)
        closed: dict[str, Any] = {}
        async with asyncio.timeout(20):
            while not closed.get("ok"):  # refused while a round is in progress: retried like a supervisor
                closed = await _command(table, "close")
                await asyncio.sleep(0.005)
        assert table.core.table.phase == "closed"
        await asyncio.sleep(2.5)
        assert not task.done()
        opened = await _command(table, "open")
        assert opened["ok"], opened
        await _settles(table, task, 3)


async def test_new_decks_are_opened_shuffled_and_played(mosquitto: Mosquitto, tmp_path: Path) -> None:
    rules = load_rules("house-h17")
    async with table_running(_opts(rules, rounds=None, seed=6, prefix="decks"), tmp_path / "s",
                             mosquitto.url) as (table, task):
        await _settles(table, task, 2)
        shuffles = table.core.table.shuffles
        result: dict[str, Any] = {}
        async with asyncio.timeout(20):
            while not result.get("ok"):
                result = await _command(table, "decks_changed", deck_set="B")
                await asyncio.sleep(0.005)
        await _settles(table, task, 3)
        assert table.core.table.shuffles == shuffles + 1
        assert table.core.table.deck_set == "B"


async def test_the_crew_waits_out_a_halt_and_resumes_when_it_is_acknowledged(
        mosquitto: Mosquitto, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(simcrew, "STUCK_AFTER_S", 1.0)
    rules = load_rules("house-h17")
    async with table_running(_opts(rules, rounds=None, seed=8, prefix="halt"), tmp_path / "s",
                             mosquitto.url) as (table, task):
        await _settles(table, task, 2)
        await _until(lambda: table.core.table.phase == "settled", 10, "a settlement")
        table.service.apply(ev.Irregularity("surveillance", "a test of the halt", halts=True))
        assert table.core.table.halted is not None
        await asyncio.sleep(3.0)  # three times what the crew used to wait before calling itself stuck
        assert not task.done(), task.exception()
        alarm_id = next(iter(table.core.table.alarms))
        result = await _command(table, "ack_alarm", alarm_id=alarm_id)
        assert result["ok"], result
        await _settles(table, task, 3)


async def test_a_press_lost_while_the_console_is_unplugged_is_pressed_again(
        mosquitto: Mosquitto, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The soak found it: a decision tapped during a 0.25 s USB unplug was lost and the crew waited for ever."""
    monkeypatch.setattr(simcrew, "STUCK_AFTER_S", 6.0)
    rules = load_rules("house-h17")
    async with table_running(_opts(rules, rounds=None, seed=9, prefix="usb"), tmp_path / "s",
                             mosquitto.url) as (table, task):
        await _settles(table, task, 1)
        act = table.crew._act
        unplugged: list[ev.Event] = []

        async def unplugged_once(intent: ev.Event) -> set[str]:
            if isinstance(intent, ev.Decision) and not unplugged:
                unplugged.append(intent)
                table.sim.console.unplug()
                asyncio.get_running_loop().call_later(0.25, table.sim.console.plug)
            return await act(intent)

        table.crew._act = unplugged_once  # type: ignore[method-assign]
        await _settles(table, task, 3)
        assert unplugged


async def test_a_close_between_two_bets_and_an_open_soon_after_leave_no_chips_behind(
        mosquitto: Mosquitto, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The soak found it: the crew waited for its bet through a close and an open; the first bet's chips
    still lay on the layout, so the same bet placed again changed no reading and the table waited."""
    monkeypatch.setattr(simcrew, "STUCK_AFTER_S", 5.0)
    rules = load_rules("house-h17")
    async with table_running(_opts(rules, rounds=None, seed=12, prefix="reclose"), tmp_path / "s",
                             mosquitto.url) as (table, task):
        await _settles(table, task, 1)
        act = table.crew._act
        closed: list[int] = []

        async def close_before_the_second_bet(intent: ev.Event) -> set[str]:
            engine = table.core.table
            if isinstance(intent, ev.BetPlaced) and engine.bets and not closed:
                closed.append(engine.round)
                assert (await _command(table, "close"))["ok"]
                asyncio.get_running_loop().call_later(0.3, lambda: asyncio.ensure_future(_command(table, "open")))
            return await act(intent)

        table.crew._act = close_before_the_second_bet  # type: ignore[method-assign]
        await _settles(table, task, 3)
        assert closed


async def test_chips_taken_off_at_a_close_are_read_off_before_the_same_bet_is_placed_again(
        mosquitto: Mosquitto, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The soak found it again after a restart: the pit closed the table between two bets and opened it as the
    players took their chips back; the crew bet the same chips on the same spot before the sensor had read the
    spot empty, so the sensor saw no change, the table never saw the bet, and the crew waited for it."""
    monkeypatch.setattr(simcrew, "STUCK_AFTER_S", 5.0)
    rules = load_rules("house-h17")
    async with table_running(_opts(rules, rounds=None, seed=12, prefix="reopen-at-once"), tmp_path / "s",
                             mosquitto.url) as (table, task):
        await _settles(table, task, 1)
        act, chips = table.crew._act, table.sim.chips
        clear = chips.clear
        closed: list[int] = []  # the round the pit closed the table in
        opened: list[asyncio.Task[dict[str, Any]]] = []

        def clear_then_open(spot: int | None = None) -> None:  # the pit opens again as the chips come off
            clear(spot)
            if table.core.table.phase == "closed" and closed and not opened:
                opened.append(asyncio.ensure_future(_command(table, "open")))

        async def close_before_the_second_bet(intent: ev.Event) -> set[str]:
            engine = table.core.table
            if isinstance(intent, ev.BetPlaced) and engine.bets and not closed:
                closed.append(engine.round)
                assert (await _command(table, "close"))["ok"]
            return await act(intent)

        monkeypatch.setattr(chips, "clear", clear_then_open)
        table.crew._act = close_before_the_second_bet  # type: ignore[method-assign]
        await _settles(table, task, 3)
        assert closed and opened and (await opened[0])["ok"], (closed, opened)


async def test_a_press_that_is_only_slow_is_never_pressed_twice(
        mosquitto: Mosquitto, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Seen with 100 tables on one loop: a press slower than the crew's patience was pressed again and
    the second one reached the table too ('split refused: not a pair'; a second stand would stand the next
    hand). Only a press made while the console's cable was out is pressed again."""
    monkeypatch.setattr(simcrew, "AGAIN_AFTER_S", 0.01)
    rules = load_rules("house-h17")
    async with table_running(_opts(rules, rounds=None, seed=2, prefix="slow"), tmp_path / "s",
                             mosquitto.url) as (table, task):
        console, acts = table.sim.console, table.crew._act
        counts = {"taps": 0, "presses": 0}
        tap = console.tap

        def counted_tap(key: Any) -> None:  # a press that reaches the table 50 ms later: slow, not lost
            counts["taps"] += 1
            asyncio.get_running_loop().call_later(0.05, tap, key)

        async def counted_act(intent: ev.Event) -> set[str]:
            if isinstance(intent, ev.NoMoreBets | ev.InsuranceClosed) or (
                    isinstance(intent, ev.Decision) and intent.action != "insurance"):
                counts["presses"] += 1
            return await acts(intent)

        console.tap = counted_tap  # type: ignore[method-assign]
        table.crew._act = counted_act  # type: ignore[method-assign]
        await _settles(table, task, 6)
        assert counts["taps"] == counts["presses"] > 6, counts
        assert table.service.last_refusal == ""


async def test_decks_overdue_halt_play_until_the_dealer_opens_new_ones_and_play_goes_on(
        mosquitto: Mosquitto, tmp_path: Path) -> None:
    """A demo running past its deck set's hours (house-h17: 24 h) is halted until the decks are changed:
    the crew, which waits out a halt, must change them itself rather than wait for ever."""
    rules = load_rules("house-h17")
    async with table_running(_opts(rules, rounds=None, seed=10, prefix="overdue"), tmp_path / "s",
                             mosquitto.url) as (table, task):
        await _settles(table, task, 1)
        await _until(lambda: table.core.table.phase == "settled", 10, "a settlement")
        engine = table.core.table
        assert engine.deck_opened_at is not None
        table.service.apply(ev.Tick(now=engine.deck_opened_at + rules.deck_change_hours * 3600 + 1))
        assert engine.halted is not None and "overdue" in engine.halted
        await _settles(table, task, 2)
        assert engine.halted is None


async def test_decks_going_overdue_at_any_moment_are_changed_and_play_goes_on(
        mosquitto: Mosquitto, tmp_path: Path) -> None:
    """The deck set's hours run out wherever the crew is: at a settlement, under wagers put down, in a deal.
    A fresh-clone CI run hung when they ran out under a bet: the table keeps chips put down during a halt
    for when betting opens again, and the crew waited for its bet to be taken for ever instead of changing
    the decks (this test hung within 5 overdue moments before the fix)."""
    rules = load_rules("house-h17")
    moments: dict[str, Any] = {
        "settled": lambda e: e.phase == "settled",
        "under wagers": lambda e: e.phase == "betting" and bool(e.bets),
        "in a deal": lambda e: e.phase in ("dealing", "insurance", "players", "dealer"),
    }
    async with table_running(_opts(rules, rounds=None, seed=11, prefix="overdue-any"), tmp_path / "s",
                             mosquitto.url) as (table, task):
        await _settles(table, task, 1)
        engine = table.core.table
        for _ in range(4):
            for moment, now in moments.items():
                await _until(lambda: now(engine) or task.done(), 30, moment)  # noqa: B023 (awaited at once)
                assert not task.done(), task
                assert engine.deck_opened_at is not None
                table.service.apply(ev.Tick(now=engine.deck_opened_at + rules.deck_change_hours * 3600 + 1))
                assert engine.halted is not None and "overdue" in engine.halted, moment
                await _settles(table, task, 1)
