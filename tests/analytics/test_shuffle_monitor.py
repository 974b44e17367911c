"""The shuffle-quality monitor in the table service: its alarm, journaled, not halting, and a restart.

The table service is driven input by input (the simulated dealer's next event applied through
:meth:`TableService.apply`, no devices running) on a real journal, so whole shoes take a fraction of a
second; the last test runs ``tablectl demo --shuffler weak`` itself against a real Mosquitto.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from controller.analytics.shuffle_quality import THRESHOLD
from controller.cli import main as tablectl
from controller.game import events as ev
from controller.journal import Journal
from controller.journal.anchor import load_key
from controller.profiles import load_rules
from controller.service.core import TableCore
from controller.service.table_service import TableService
from controller.sim.dealer import SimulatedDealer
from tests.mqtt_broker import Mosquitto

CODE = "shuffle_quality"
RULES = load_rules("house-h17")  # 6 decks, cut card at 234: the demo's


@contextmanager
def _service(state: Path, *, new: bool = True) -> Iterator[TableService]:
    """A table service on ``state/t01.journal`` whose devices are never opened (inputs are applied directly)."""
    from simulators.hardware import SimTable

    state.mkdir(parents=True, exist_ok=True)
    journal = Journal(state / "t01.journal", synchronous="NORMAL")
    try:
        service = TableService(TableCore("t01", RULES, journal), SimTable(state / "devices").device_group())
        service.recover()
        if new:
            service.apply(ev.TableOpened(now=1_000_000.0))
        yield service
    finally:
        journal.close()


def _play(service: TableService, dealer: SimulatedDealer, *, shuffles: int, cards: int = 0) -> None:
    """Play until the table has shuffled ``shuffles`` times and dealt ``cards`` of that shoe."""
    table = service.table
    while table.shuffles < shuffles or (table.shuffles == shuffles and table.cards_dealt < cards):
        event = dealer.next_event(table)
        assert event is not None, table.phase
        service.apply(event)


def _dealer(shuffler: str) -> SimulatedDealer:
    return SimulatedDealer(RULES, seed=31, table_id="t01", shuffler=shuffler)


def _shuffle_alarm_inputs(journal: Journal) -> list[dict[str, Any]]:
    return [row.event for row in journal.inputs_since(0)
            if row.event["type"] == "irregularity" and row.event["source"] == "shuffle_quality"]


def _scores(service: TableService) -> list[dict[str, Any]]:
    return [s.to_json() for s in service.shuffle_scores(20)]


async def test_a_weak_shoe_raises_the_alarm_without_halting_and_good_shoes_raise_none(tmp_path: Path) -> None:
    with _service(tmp_path / "good") as good:
        _play(good, _dealer("good"), shuffles=7)
        scores = good.shuffle_scores(20)
        assert [s.shoe for s in scores] == [2, 3, 4, 5, 6], "each shoe judged at its end against the one before"
        assert all(s.passed for s in scores), [s.to_json() for s in scores]
        assert not any(a.code == CODE for a in good.table.alarms.values())
        assert _shuffle_alarm_inputs(good.core.journal) == []

    with _service(tmp_path / "weak") as weak:
        _play(weak, _dealer("weak"), shuffles=2)
        assert weak.shuffle_scores() == [], "the first shoe has nothing to be judged against"
        _play(weak, _dealer("weak"), shuffles=3)  # shoe 2, the machine's riffle of shoe 1, ends
        (score,) = weak.shuffle_scores()
        assert score.shoe == 2 and not score.passed and score.rising_z > score.threshold
        (alarm,) = [a for a in weak.table.alarms.values() if a.code == CODE]
        assert not alarm.halts and weak.table.halted is None, "surveillance decides: play goes on"
        assert "shoe 2 (deck set A) failed the shuffle-quality check" in alarm.message
        journal = weak.core.journal
        assert len(_shuffle_alarm_inputs(journal)) == 1
        published = [json.loads(r.body) for r in journal.records() if '"alarm"' in r.body]
        assert [b["code"] for b in published if b["type"] == "alarm"] == [CODE]

        _play(weak, _dealer("weak"), shuffles=4, cards=30)  # shoe 3 fails too: its alarm is still active
        assert [s.passed for s in weak.shuffle_scores()] == [False, False]
        assert len(_shuffle_alarm_inputs(journal)) == 1
        assert weak.table.round_open or weak.table.phase in ("betting", "settled"), "rounds are dealt on"

        weak.apply(ev.AlarmAcknowledged(alarm.id, operator="surveillance-7", reason="shuffler sent for repair"))
        _play(weak, _dealer("weak"), shuffles=5)
        assert len(_shuffle_alarm_inputs(journal)) == 2, "acknowledged: the next failing shoe raises it again"


async def test_a_restart_rebuilds_the_previous_order_and_the_scores_from_the_journal(tmp_path: Path) -> None:
    with _service(tmp_path / "straight") as straight:
        _play(straight, _dealer("weak"), shuffles=5)
        expected = _scores(straight)
    assert [s["shoe"] for s in expected] == [2, 3, 4]

    with _service(tmp_path / "restarted") as first:
        _play(first, _dealer("weak"), shuffles=3, cards=120)  # stopped in the middle of shoe 3
        before = _scores(first)
    with _service(tmp_path / "restarted", new=False) as second:
        assert _scores(second) == before, "the scores so far come back from the journal"
        _play(second, _dealer("weak"), shuffles=5)  # a new dealer, as after a restart
        assert _scores(second) == expected, "shoe 3 judged against shoe 2's order, half of it dealt before"
        assert len(_shuffle_alarm_inputs(second.core.journal)) == 1, "no second alarm for the shoe alarmed"


async def test_a_restart_reads_back_only_the_last_shoes_and_scores_them_as_play_did(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from controller.service import shuffle_watch

    with _service(tmp_path / "state") as first:
        _play(first, _dealer("weak"), shuffles=7, cards=40)  # stopped in the middle of shoe 7
        played = _scores(first)
    assert [s["shoe"] for s in played] == [2, 3, 4, 5, 6]
    # the shoes a start reads back: the last 4 shuffles of 7 (KEEP + 2 give the KEEP last scores; here 2)
    monkeypatch.setattr(shuffle_watch, "REBUILT_SHOES", 4)
    with _service(tmp_path / "state", new=False) as second:
        assert _scores(second) == played[-2:], "shoes 5 and 6 judged again, each against the one before"
        assert second._shuffle_watch.shuffles == second.table.shuffles == 7


@pytest.mark.parametrize("then", ["nothing", "a card in"])
async def test_an_alarm_a_crash_kept_out_of_the_journal_is_raised_at_the_start(tmp_path: Path, then: str) -> None:
    from simulators.hardware import SimTable

    state = tmp_path / "state"
    dealer = _dealer("weak")
    with _service(state) as service:
        _play(service, dealer, shuffles=2)
        table = service.table
        while (event := dealer.next_event(table)) is not None and not isinstance(event, ev.ShuffleDone):
            service.apply(event)
        assert isinstance(event, ev.ShuffleDone)
        service.core.apply(event)  # journaled; the process dies before the monitor's alarm is
        if then == "a card in":  # a player's card in the reader: no input of the engine's
            service.core.apply_card("card_in", 1, "4000123412341234")
        assert _shuffle_alarm_inputs(service.core.journal) == []

    for start in range(2):  # the first start raises it; a second start finds it journaled
        journal = Journal(state / "t01.journal", synchronous="NORMAL")
        devices = tmp_path / f"devices{start}"
        devices.mkdir()
        try:
            async with SimTable(devices, decks=RULES.decks) as sim:
                service = TableService(TableCore("t01", RULES, journal), sim.device_group(), tick_every=0)
                await service.start()
                try:
                    assert [a.code for a in service.table.alarms.values()].count(CODE) == 1
                    assert len(_shuffle_alarm_inputs(journal)) == 1
                    assert [s.shoe for s in service.shuffle_scores()] == [2]
                finally:
                    await service.stop()
        finally:
            journal.close()


async def _demo(mosquitto: Mosquitto, tmp_path: Path, state: Path, *, rounds: int,
                kill_at_round: int | None = None) -> str:
    """``tablectl demo --shuffler weak`` on ``state``, killed (SIGKILL) once it prints round ``kill_at_round``."""
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "xdg")}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "controller.cli", "demo", "--speed", "max", "--rounds", str(rounds), "--seed", "4",
        "--shuffler", "weak", "--broker", mosquitto.url, "--state-dir", str(state), "--no-dashboard",
        "--prefix", state.name, "--journal-sync", "NORMAL", stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT, env=env)
    assert proc.stdout is not None
    lines: list[str] = []
    async with asyncio.timeout(120):
        while line := (await proc.stdout.readline()).decode():
            lines.append(line)
            if kill_at_round is not None and f" round {kill_at_round:>4}:" in line:
                proc.kill()
                break
        await proc.wait()
    if kill_at_round is None:
        assert proc.returncode == 0, "".join(lines)
    return "".join(lines)


def _records(state: Path) -> list[dict[str, Any]]:
    with Journal.open_readonly(state / "t01.journal", key=load_key(state / "journal.key")) as journal:
        return [json.loads(r.body) for r in journal.records()]


async def test_the_demo_with_a_weak_shuffler_raises_the_alarm_within_3_shoes(mosquitto: Mosquitto,
                                                                              tmp_path: Path) -> None:
    state = tmp_path / "state"
    out = await _demo(mosquitto, tmp_path, state, rounds=55)
    assert "t01: rounds 55 " in out, "the alarm does not halt: every round was played"
    records = _records(state)
    shuffles_before_alarm = 0
    for body in records:
        if body["type"] == "shuffle_done":
            shuffles_before_alarm += 1
        elif body["type"] == "alarm" and body["code"] == CODE:
            assert body["halts"] is False
            break
    else:
        raise AssertionError("no shuffle_quality alarm in the journal")
    # shuffle 1 starts shoe 1 (nothing to judge it by), shuffle 2 the first weak shoe, judged when shuffle 3 ends it
    assert shuffles_before_alarm <= 3, shuffles_before_alarm


async def test_a_weak_demo_killed_and_resumed_deals_the_same_shoes(mosquitto: Mosquitto, tmp_path: Path) -> None:
    """Each weak shoe is worked out from the one before: a resumed demo works them out again, the same."""
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    await _demo(mosquitto, tmp_path, straight, rounds=45)
    for kill_at in (25, 40):  # in shoe 2, then about where it ends and is judged
        await _demo(mosquitto, tmp_path, resumed, rounds=45, kill_at_round=kill_at)
    played = sum(1 for b in _records(resumed) if b["type"] == "round_settled")
    assert 40 <= played < 45, f"killed after round {played}"
    await _demo(mosquitto, tmp_path, resumed, rounds=45)

    def dealt(state: Path) -> tuple[list[Any], list[Any]]:
        records = _records(state)
        cards = [(b["card"], b.get("to")) for b in records if b["type"] in ("card", "hole_card")]
        settled = [{k: v for k, v in b.items() if k not in ("seq", "ts")} for b in records
                   if b["type"] == "round_settled"]
        return cards, settled

    assert dealt(resumed) == dealt(straight)
    alarms = [b for b in _records(resumed) if b["type"] == "alarm" and b["code"] == CODE]
    assert len(alarms) == 1 and "shoe 2 " in alarms[0]["message"]


async def test_the_report_judges_every_shoe_again_from_the_journal_as_the_table_did(tmp_path: Path) -> None:
    """``tablectl report`` gives the shuffle figures too: each shoe's score worked out again from the journal's
    inputs by the same monitor, equal to what the table judged live (and every shoe, not only the last ones)."""
    with _service(tmp_path / "weak") as weak:
        _play(weak, _dealer("weak"), shuffles=5)
        live = _scores(weak)
        path = weak.core.journal.path
    assert len(live) == 3 and not any(s["passed"] for s in live)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert tablectl(["report", str(path), "--json", "--profile", RULES.name]) == 0
    assert json.loads(out.getvalue())["shuffle"] == {"threshold": THRESHOLD, "shoes": live}
