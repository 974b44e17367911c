"""The table's time against a wall clock set back or jumped forward (issue #33, "Time can be set back").

A real journal on disk, the real core and service (no devices: the clock is what is on trial), the wall clock and
the monotonic clock injected. A wall clock set back 12 hours mid-shoe raises the ``clock_jump`` alarm, journal times
never go back, and the deck change stays due at the same elapsed time, also across a restart.
"""

from __future__ import annotations

from pathlib import Path
from typing import cast

from controller.contract.alarms import CLOCK_ALARM
from controller.game import events as ev
from controller.journal import Journal
from controller.profiles import load_rules
from controller.service.clock import TableClock
from controller.service.core import TableCore
from controller.service.table_service import TableService
from drivers.base import Device
from drivers.group import DeviceGroup

T0 = 1_790_000_000.0  # some wall-clock time
HOUR = 3600.0
RULES = load_rules("house-h17")  # deck_change_hours = 24
DUE_S = RULES.deck_change_hours * HOUR


class Clocks:
    """A wall clock and a monotonic clock the test moves."""

    def __init__(self, wall: float, mono: float) -> None:
        self.w = wall
        self.m = mono

    def wall(self) -> float:
        return self.w

    def mono(self) -> float:
        return self.m

    def run(self, seconds: float) -> None:
        self.w += seconds
        self.m += seconds


class _Shoe:
    """Where the service sends the shoe's commands (dealing locked, opened): nothing to deal here."""

    async def open(self) -> None: ...

    async def close(self) -> None: ...

    def listen(self, _: object) -> None: ...

    async def lock_dealing(self) -> None: ...

    async def enable_dealing(self) -> None: ...


def _service(journal: Journal, clocks: Clocks, tick_every: float = 0.02) -> TableService:
    clock = TableClock(wall=clocks.wall, mono=clocks.mono, jump_s=60)
    devices = DeviceGroup(shoe=cast(Device, _Shoe()))
    return TableService(TableCore("t01", RULES, journal, clock=clock), devices, clock=clock, tick_every=tick_every)


def _due_in(service: TableService) -> int:
    return int(service.core.state()["deck_set"]["change_due_in_s"])


def _clock_alarms(service: TableService) -> list[str]:
    return [a.message for a in service.table.alarms.values() if a.code == CLOCK_ALARM]


async def _ticked(service: TableService) -> None:
    """Wait until the ticker has passed the clock in twice (so the last move is seen)."""
    mark = service.applied
    await service.wait_input(mark, {ev.Tick.TYPE}, timeout=5)
    await service.wait_input(service.applied, {ev.Tick.TYPE}, timeout=5)


def _journal_times(path: Path) -> list[float]:
    with Journal(path) as journal:
        return [row.ts for row in journal.inputs_since(0)]


async def test_a_wall_clock_set_back_12_hours_alarms_and_the_deck_change_stays_due(tmp_path: Path) -> None:
    path = tmp_path / "t01.journal"
    clocks = Clocks(T0, 500.0)
    with Journal(path) as journal:
        service = _service(journal, clocks)
        await service.start()
        try:
            service.apply(ev.TableOpened(now=service.clock()))
            clocks.run(HOUR)
            await _ticked(service)
            assert _due_in(service) == DUE_S - HOUR
            assert not _clock_alarms(service)
            clocks.w -= 12 * HOUR  # the wall clock set back 12 hours mid-shoe
            await _ticked(service)
            (message,) = _clock_alarms(service)
            assert "went back 43200 s" in message
            assert _due_in(service) == DUE_S - HOUR, "the deck change neither pushed out nor pulled in"
            clocks.run(HOUR)
            await _ticked(service)
            assert _due_in(service) == DUE_S - 2 * HOUR
            assert len(_clock_alarms(service)) == 1, "one step, one alarm"
        finally:
            await service.stop()
    times = _journal_times(path)
    assert times == sorted(times), "journal times never go back"
    with Journal(path) as journal:
        alarms = [row.event for row in journal.inputs_since(0) if row.event.get("code") == CLOCK_ALARM]
    assert len(alarms) == 1, "the alarm is journaled"

    # a restart 10 minutes later, the wall clock still 12 hours behind: the offset comes back from the journal
    clocks.run(600)
    clocks.m = 7.0  # another boot: the monotonic clock starts again
    with Journal(path) as journal:
        service = _service(journal, clocks)
        await service.start()
        try:
            await _ticked(service)
            assert _due_in(service) == DUE_S - 2 * HOUR - 600, "the downtime counts; the jump does not"
            assert len(_clock_alarms(service)) == 1, "no second alarm for the same step"
        finally:
            await service.stop()


async def test_a_wall_clock_set_back_while_the_table_was_down_alarms_at_start(tmp_path: Path) -> None:
    path = tmp_path / "t01.journal"
    clocks = Clocks(T0, 500.0)
    with Journal(path) as journal:
        service = _service(journal, clocks)
        await service.start()
        service.apply(ev.TableOpened(now=service.clock()))
        clocks.run(HOUR)
        await _ticked(service)
        await service.stop()
    clocks.w -= 12 * HOUR
    clocks.m = 3.0
    with Journal(path) as journal:
        service = _service(journal, clocks)
        await service.start()
        try:
            (message,) = _clock_alarms(service)
            assert "went back" in message and "while the table was down" in message
            await _ticked(service)
            assert DUE_S - HOUR - 1 <= _due_in(service) <= DUE_S - HOUR, "resumed at the journal's last time"
            clocks.run(HOUR)
            await _ticked(service)
            assert DUE_S - 2 * HOUR - 1 <= _due_in(service) <= DUE_S - 2 * HOUR
            assert len(_clock_alarms(service)) == 1
        finally:
            await service.stop()
    times = _journal_times(path)
    assert times == sorted(times)


async def test_a_forward_jump_past_the_bound_alarms_and_does_not_pull_the_deck_change_in(tmp_path: Path) -> None:
    clocks = Clocks(T0, 500.0)
    with Journal(tmp_path / "t01.journal") as journal:
        service = _service(journal, clocks)
        await service.start()
        try:
            service.apply(ev.TableOpened(now=service.clock()))
            clocks.w += 30  # within the bound (60 s): no alarm
            await _ticked(service)
            assert not _clock_alarms(service)
            clocks.w += 12 * HOUR
            await _ticked(service)
            (message,) = _clock_alarms(service)
            assert "went forward" in message
            assert _due_in(service) == DUE_S
        finally:
            await service.stop()


async def test_the_clock_jump_alarm_is_surveillances_to_clear() -> None:
    from controller.contract.alarms import alarm_kind

    assert alarm_kind(CLOCK_ALARM, False) == "integrity"
