"""The console's badge reader: badge reports, their reassembly, and the driver on the simulated console."""

from __future__ import annotations

import asyncio
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drivers import Button, ConsoleDriver
from drivers.badge import (
    BADGE_MAX,
    REPORT_BADGE,
    BadgeAssembler,
    badge_reports,
    check_badge,
    sign_out_report,
)
from drivers.events import BadgeRead, BadgeSignOut, BadgeUnreadable, DeviceEvent
from simulators import SimConsole
from tests.drivers.test_documented_frames import _section

BADGES = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789._-", min_size=1, max_size=BADGE_MAX)


def _assemble(reports: list[bytes]) -> list[DeviceEvent]:
    assembler = BadgeAssembler()
    return [e for r in reports for e in assembler.feed(r)]


@given(BADGES, st.integers(0, 255))
def test_every_badge_id_goes_through_whole(badge: str, counter: int) -> None:
    reports = badge_reports(badge.encode(), counter)
    assert len(reports) == -(-len(badge) // 4) and all(len(r) == 8 and r[0] == REPORT_BADGE for r in reports)
    assert [r[3] for r in reports] == [(counter + i) & 0xFF for i in range(len(reports))]
    assert _assemble(reports) == [BadgeRead(badge)]


@given(st.lists(st.binary(min_size=0, max_size=12), max_size=40))
@settings(max_examples=300)
def test_garbage_never_raises_and_never_reads_a_badge_that_is_not_an_id(reports: list[bytes]) -> None:
    assembler = BadgeAssembler()
    for report in reports:
        for event in assembler.feed(bytes((REPORT_BADGE,)) + report):
            assert isinstance(event, BadgeRead | BadgeSignOut | BadgeUnreadable)
            if isinstance(event, BadgeRead):
                assert check_badge(event.badge) == event.badge


@given(st.binary(min_size=1, max_size=255))
def test_any_bytes_swiped_are_read_only_if_they_are_an_id(raw: bytes) -> None:
    events = _assemble(badge_reports(raw, 0))
    try:
        valid = check_badge(raw.decode("ascii")) == raw.decode("ascii")
    except (ValueError, UnicodeDecodeError):
        valid = False
    if valid:
        assert events == [BadgeRead(raw.decode())]
    else:
        assert len(events) == 1 and isinstance(events[0], BadgeUnreadable), events


def test_each_bad_badge_is_one_clear_error_and_the_next_badge_reads() -> None:
    cases = {
        "at most 64": badge_reports(b"a" * 65, 0),
        "0x41 is not one of a-z": badge_reports(b"d.AMES", 0),
        "offset 4 with no badge begun": badge_reports(b"d.ames", 0)[1:],
        "length changed from 6 to 7": [badge_reports(b"d.ames", 0)[0], badge_reports(b"d.amess", 1)[1]],
        "offset 8 where 4 was due": [badge_reports(b"d.ames.jr", 0)[0], badge_reports(b"d.ames.jr", 0)[2]],
        "padding not zero": [badge_reports(b"d.ames", 0)[0], badge_reports(b"d.ames", 0)[1][:-1] + b"x"],
        "malformed sign-out": [bytes((REPORT_BADGE, 0, 0, 1, 0, 0, 9, 0))],
        "not a badge report": [bytes((REPORT_BADGE, 3, 0))],
    }
    for reason, reports in cases.items():
        assembler = BadgeAssembler()
        events = [e for r in reports for e in assembler.feed(r)]
        assert len(events) == 1 and isinstance(events[0], BadgeUnreadable), (reason, events)
        assert reason in events[0].reason, (reason, events[0].reason)
        assert [e for r in badge_reports(b"d.baker", 9) for e in assembler.feed(r)] == [BadgeRead("d.baker")]


def test_a_badge_cut_short_by_a_new_one_or_the_sign_out_key_is_said_once() -> None:
    first = badge_reports(b"d.ames.senior", 0)
    events = _assemble([*first[:2], *badge_reports(b"d.chen", 2)])
    assert [type(e) for e in events] == [BadgeUnreadable, BadgeRead] and events[1] == BadgeRead("d.chen")
    assert "cut short after 8 of 13" in events[0].reason  # type: ignore[attr-defined]
    events = _assemble([first[0], sign_out_report(1)])
    assert [type(e) for e in events] == [BadgeUnreadable, BadgeSignOut]


def test_the_badge_reports_of_the_docs_both_ways() -> None:
    section = _section("Dealer console (USB HID)")
    examples = re.findall(r"`(03(?: [0-9a-f]{2}){7})`", section)
    assert len(examples) == 3, examples
    reports = [bytes.fromhex(h) for h in examples]
    assert reports[:2] == badge_reports(b"d.ames", 10)
    assert reports[2] == sign_out_report(12)
    assert _assemble(reports) == [BadgeRead("d.ames"), BadgeSignOut()]


# -- on the simulated console, through the real driver and pyusb ------------------------------------------


async def _events(console: ConsoleDriver, n: int) -> list[DeviceEvent]:
    out: list[DeviceEvent] = []

    async def run() -> None:
        async for event in console.events():
            if event.type != "health":
                out.append(event)
                if len(out) == n:
                    return

    await asyncio.wait_for(run(), 3)
    return out


async def test_a_swiped_badge_and_the_sign_out_key_arrive_among_the_buttons() -> None:
    sim = SimConsole()
    async with ConsoleDriver(backend=sim.backend) as console:
        sim.tap(Button.SPLIT)
        sim.swipe("d.ames")
        sim.swipe("x" * 64)
        sim.tap(3)
        sim.sign_out()
        events = await _events(console, 7)
        assert console.lost_reports == 0
    assert [e.to_json() for e in events] == [
        {"type": "button_pressed", "button": "split"}, {"type": "button_released", "button": "split"},
        {"type": "badge", "badge": "d.ames"}, {"type": "badge", "badge": "x" * 64},
        {"type": "spot_select", "spot": 3, "pressed": True}, {"type": "spot_select", "spot": 3, "pressed": False},
        {"type": "badge_sign_out"},
    ]


async def test_a_report_lost_mid_badge_is_an_unreadable_badge_never_another_id() -> None:
    sim = SimConsole(link="sim:badge-lost")
    async with sim, ConsoleDriver(port=sim.port) as console:
        sim.swipe("d.ames")  # two reports: the first is lost, then the second
        sim.drop_next = 1
        sim.swipe("d.baker")
        sim.swipe(b"d.BAKER")  # a damaged badge
        sim.swipe(b"a" * 100)  # no badge id is that long
        sim.swipe("d.baker")
        events = await _events(console, 5)
        assert console.lost_reports == 1
    assert events[0] == BadgeRead("d.ames") and events[-1] == BadgeRead("d.baker")
    reasons = [e.reason for e in events[1:4]]  # type: ignore[attr-defined]
    assert "offset 4 with no badge begun" in reasons[0] or "lost" in reasons[0], reasons
    assert "0x42" in reasons[1] and "100 characters: at most 64" in reasons[2], reasons


async def test_a_badge_half_read_when_the_cable_is_pulled_is_said_and_the_console_comes_back() -> None:
    sim = SimConsole()
    async with ConsoleDriver(backend=sim.backend) as console:
        it = console.events()
        assert (await asyncio.wait_for(anext(it), 2)).type == "health"
        sim.reports.put(badge_reports(b"d.ames.senior", 1)[0])  # the first report, then the cable goes
        await asyncio.sleep(0.3)
        sim.unplug()
        assert (await asyncio.wait_for(anext(it), 2)).to_json()["health"] == "lost"
        cut = await asyncio.wait_for(anext(it), 2)
        assert isinstance(cut, BadgeUnreadable) and "console was lost" in cut.reason
        sim.plug()
        assert (await asyncio.wait_for(anext(it), 2)).to_json()["health"] == "ok"
        sim.swipe("d.ames")
        assert await asyncio.wait_for(anext(it), 2) == BadgeRead("d.ames")


def test_the_simulator_refuses_a_str_that_is_not_a_badge_id() -> None:
    sim = SimConsole()
    for bad in ("", "D.AMES", "d ames", "x" * 65, "d.amés"):
        with pytest.raises(ValueError, match="badge id"):
            sim.swipe(bad)
    assert sim.reports.empty()
