"""The table service on its real drivers and simulated devices, publishing to a real Mosquitto.

Each test runs one simulated table in this process (:class:`controller.sim.demo.DemoTable`: the
four simulators, the real drivers, the service, the simulated crew), so it can reach into
the devices: pull a cable, stop the broker, and watch what a subscriber sees.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from controller.game.rules import Rules
from controller.mqtt.state_model import StateSnapshot
from controller.profiles import load_rules
from controller.sim.demo import DemoOptions, DemoTable
from drivers.events import Button
from tests.mqtt.mqtt_helpers import Recorder, recording
from tests.mqtt_broker import Mosquitto

#: how long the broker stays away in the outage test (issue #4: "stopped for 30 s")
OUTAGE_S = 30.0


def _opts(rules: Rules, *, rounds: int | None, seed: int, prefix: str, speed: str = "max") -> DemoOptions:
    return DemoOptions(rules=rules, rounds=rounds, seed=seed, speed=speed, prefix=prefix,  # type: ignore[arg-type]
                       quiet=True, dashboard=False, tick_every=5.0)


@contextlib.asynccontextmanager
async def table_running(opts: DemoOptions, state: Path, broker_url: str) -> AsyncIterator[tuple[DemoTable,
                                                                                            asyncio.Task[None]]]:
    """One simulated table playing in the background; closed (status offline) at the end."""
    state.mkdir(parents=True, exist_ok=True)
    table = DemoTable("t01", opts, state, broker_url, io.StringIO())
    task = asyncio.create_task(table.run())
    try:
        yield table, task
    finally:
        task.cancel()
        with contextlib.suppress(BaseException):  # its failure, if any, was reported by the test
            await task
        await table.close()


async def _until(predicate: Any, timeout: float, what: str) -> None:
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.01)


def _gapless(rec: Recorder, prefix: str, upto: int | None = None) -> list[dict[str, Any]]:
    """The events of t01 once each in seq order (a repeat with the same body allowed, a gap not)."""
    seen: dict[int, bytes] = {}
    out: list[dict[str, Any]] = []
    for m in rec.on(f"{prefix}/t01/events"):
        seq = m.json()["seq"]
        if upto is not None and seq > upto:
            continue  # published after the subscriber had what it waited for
        if seq in seen:
            assert seen[seq] == m.payload, f"seq {seq} repeated with another body"
            continue
        assert seq == len(seen) + 1, f"gap: seq {seq} after {len(seen)}"
        seen[seq] = m.payload
        out.append(m.json())
    return out


async def test_a_full_shoe_is_dealt_to_the_cut_card_and_reshuffled(mosquitto: Mosquitto, tmp_path: Path) -> None:
    rules = load_rules("house-h17", {"decks": 2})  # 104 cards, cut card at 78: a shoe in ~10 rounds
    opts = _opts(rules, rounds=None, seed=21, prefix="shoe")
    async with recording(mosquitto.host, mosquitto.port, "shoe/#") as rec:
        async with table_running(opts, tmp_path / "state", mosquitto.url) as (table, task):
            await _until(lambda: (table.core.table.shuffles >= 2 and table.core.table.rounds_settled >= 1
                         and table.core.table.phase == "settled") or task.done(), 60, "the second shoe")
            assert not task.done(), task.exception()
            sim_position = table.sim.shoe.position
            engine = table.core.table
            assert engine.cards_dealt == sim_position, "every card out of the simulated shoe reached the engine"
            await table.publisher.wait_drained(10)
            last_seq = table.core.seq
        await rec.wait_for(lambda r: any(m.payload == b"offline" for m in r.on("shoe/t01/status")), 10)
    events = _gapless(rec, "shoe")
    assert events[-1]["seq"] >= last_seq
    types = [e["type"] for e in events]
    cut = types.index("cut_card")
    first_shuffle_done = types.index("shuffle_done")
    second_shuffle_done = types.index("shuffle_done", first_shuffle_done + 1)
    assert first_shuffle_done < cut < second_shuffle_done, "shuffled, dealt to the cut card, shuffled again"
    cut_event = events[cut]
    assert cut_event["cards_dealt"] >= rules.cut_card_index
    assert events[second_shuffle_done]["count"] == 104
    # the round in which the cut card came out was finished before the shuffle (no round cut short)
    between = types[cut:second_shuffle_done]
    assert "round_settled" in between
    assert "alarm" not in types, [e for e in events if e["type"] == "alarm"]
    states = [StateSnapshot.model_validate(m.json()) for m in rec.on("shoe/t01/state")]
    assert any(s.shoe.cut_card_reached for s in states)
    assert states[-1].shoe.cards_dealt < rules.cut_card_index, "the new shoe starts from zero"
    assert {s.devices["shoe"] for s in states} == {"ok"}


async def test_broker_stopped_mid_shoe_loses_no_event(tmp_path: Path) -> None:
    # the pit's recorder keeps a persistent session: its queue must hold the whole outage's backlog
    broker = Mosquitto(tmp_path / "broker", persistence=True, extra_config="max_queued_messages 0\n")
    broker.start()
    rules = load_rules("house-h17")
    opts = _opts(rules, rounds=None, seed=8, prefix="outage", speed="fast")
    sub = {"client_id": "pit-sub", "clean_session": False}
    try:
        async with table_running(opts, tmp_path / "state", broker.url) as (table, task):
            async with recording(broker.host, broker.port, "outage/t01/events", **sub) as before:  # type: ignore[arg-type]
                await before.wait_for(lambda r: len(r.on("/events")) >= 30, 30)
                broker.stop()  # the pit's subscriber is cut off too; its session waits in the broker
            stopped_at = table.core.seq
            await asyncio.sleep(OUTAGE_S)  # the table plays on while the pit's broker is away
            assert not task.done(), task.exception()
            during = table.core.seq - stopped_at
            assert during > 20, "the table kept playing through the outage"
            assert table.journal.delivered_upto <= stopped_at + 64
            broker.start()
            async with recording(broker.host, broker.port, "outage/t01/events", **sub) as after:  # type: ignore[arg-type]
                await table.publisher.wait_drained(30)
                last = table.core.seq
                await after.wait_for(lambda r: last in r.event_seqs(), 30)
        seen = Recorder(messages=before.messages + after.messages)
        events = _gapless(seen, "outage", upto=last)
        assert [e["seq"] for e in events][:last] == list(range(1, last + 1)), "every seq, in order, none lost"
    finally:
        broker.close()


async def test_shoe_cable_pulled_mid_round_holds_the_round_and_it_resumes(mosquitto: Mosquitto,
                                                                         tmp_path: Path) -> None:
    rules = load_rules("house-h17")
    rounds, seed = 6, 13
    straight = _opts(rules, rounds=rounds, seed=seed, prefix="straight")
    async with table_running(straight, tmp_path / "straight", mosquitto.url) as (table, task):
        await asyncio.wait_for(asyncio.shield(task), 60)
        expected = table.core.table.snapshot()["totals"]

    pulled = _opts(rules, rounds=rounds, seed=seed, prefix="pulled")
    async with recording(mosquitto.host, mosquitto.port, "pulled/#") as rec:
        async with table_running(pulled, tmp_path / "pulled", mosquitto.url) as (table, task):
            await _until(lambda: table.core.table.phase != "closed", 10, "the open table")
            engine, crew, service = table.core.table, table.crew, table.service  # recovered by now
            act = crew._act
            checked: list[str] = []

            async def pull_mid_round(intent: Any) -> set[str]:
                """At the first player decision from round 2 on, the shoe's cable comes out."""
                if not checked and engine.round >= 2 and engine.phase == "players":
                    table.sim.shoe.pull_cable()
                    await _until(lambda: engine.devices["shoe"] == "lost", 5, "the lost shoe")
                    assert "device_lost:shoe" in [a.code for a in engine.alarms.values()]
                    assert engine.halted is not None
                    held_at = (engine.round, engine.phase, engine.active, engine.cards_dealt)
                    mark = service.applied
                    table.sim.console.tap(Button.STAND_NEXT)  # the dealer plays on regardless
                    _, got = await service.wait_input(mark, {"irregularity"}, timeout=5)
                    assert got == "irregularity" and service.refused_input(service.applied) == "decision"
                    assert (engine.round, engine.phase, engine.active, engine.cards_dealt) == held_at, "held"
                    table.sim.shoe.restore_cable()
                    await _until(lambda: engine.devices["shoe"] == "ok", 5, "the shoe back")
                    checked.append("held and resumed")
                return await act(intent)

            crew._act = pull_mid_round  # type: ignore[method-assign]
            await asyncio.wait_for(asyncio.shield(task), 60)
            assert checked, "the cable was never pulled"
            assert engine.snapshot()["totals"] == expected, "the pulled cable changed no settlement"
            assert {a.code for a in engine.alarms.values()} == {"irregularity:console"}
        await rec.wait_for(lambda r: any(m.payload == b"offline" for m in r.on("pulled/t01/status")), 10)
    alarms = [m.json() for m in rec.on("pulled/t01/alarms")]
    assert any(any(a["code"] == "device_lost:shoe" and a["halts"] for a in msg) for msg in alarms)
    states = [m.json() for m in rec.on("pulled/t01/state")]
    assert any(s["devices"]["shoe"] == "lost" and s["halted"] for s in states)
    assert states[-1]["devices"]["shoe"] == "ok"
    _gapless(rec, "pulled")


async def test_malformed_commands_are_refused_with_reasons_and_change_nothing(mosquitto: Mosquitto,
                                                                              tmp_path: Path) -> None:
    import aiomqtt

    rules = load_rules("house-h17")
    opts = _opts(rules, rounds=None, seed=3, prefix="cmds", speed="realtime")
    async with table_running(opts, tmp_path / "state", mosquitto.url) as (table, _task):
        await table.publisher.wait_connected(10)
        await _until(lambda: table.core.table.phase != "closed", 10, "the open table")
        cases: list[tuple[str, bytes, str]] = [
            ("pit/s.jones/set_limits", b"{not json", "JSON"),
            ("pit/s.jones/set_limits", b'{"min_bet": 5.5, "max_bet": "500"}', "min_bet"),
            ("pit/s.jones/set_limits", b'{"min_bet": "50", "max_bet": "5", "operator": "s.jones"}', "max_bet"),
            ("pit/s.jones/ack_alarm", b'{"alarm_id": "seven"}', "alarm_id"),
            ("pit/s.jones/ack_alarm", b'{"alarm_id": 999}', "no active alarm 999"),
            ("pit/s.jones/close", b'{"operator": "a.li"}', "operator: 'a.li' is not the sender"),
            ("pit/s.jones/open", b'{"deck_set": "A", "extra": 1}', "extra"),
            ("pit/s.jones/fly", b"{}", "fly"),
        ]
        before = table.core.table.snapshot()
        async with aiomqtt.Client(mosquitto.host, mosquitto.port) as client:
            await client.subscribe("cmds/t01/cmd/+/+/+/result", qos=1)
            results: list[dict[str, Any]] = []
            for verb, payload, _ in cases:
                await client.publish(f"cmds/t01/cmd/{verb}", payload, qos=1)
                async with asyncio.timeout(10):
                    async for m in client.messages:
                        import json

                        results.append(json.loads(bytes(m.payload)))  # type: ignore[arg-type]
                        break
        after = table.core.table.snapshot()
    for (verb, _, needle), result in zip(cases, results, strict=True):
        assert result["ok"] is False, (verb, result)
        assert needle.lower() in result["error"].lower(), (verb, needle, result)
    assert after["limits"] == before["limits"] and after["totals"] == before["totals"]


async def test_a_journal_that_cannot_write_stops_the_table_instead_of_playing_on(mosquitto: Mosquitto,
                                                                              tmp_path: Path) -> None:
    """An input that cannot be journaled must not be played on: the service fails (exit 1 in
    ``tablectl run``; systemd restarts it and the journal resumes where it was durable)."""
    opts = _opts(load_rules("house-h17"), rounds=None, seed=2, prefix="diskfull")
    async with table_running(opts, tmp_path / "state", mosquitto.url) as (table, task):
        await _until(lambda: table.core.table.rounds_settled >= 1 or task.done(), 30, "a round")

        def disk_full(*_args: Any, **_kw: Any) -> Any:
            raise OSError(28, "No space left on device")

        table.journal.commit_event = disk_full  # type: ignore[method-assign]
        durable = table.journal.last_input_id
        try:
            await asyncio.wait_for(asyncio.shield(task), 30)
        except OSError as e:
            assert e.errno == 28
        else:
            raise AssertionError("the table played on without its journal")
        assert table.service.failed.done()
        assert table.journal.last_input_id == durable


def test_a_shuffle_asked_at_a_settlement_is_asked_again_after_a_restart() -> None:
    """The cut card came out mid-round: the shuffle is due at the settlement, phase still 'settled'.
    A crash before the shuffler heard of it must not leave the table waiting for a shuffle nobody does."""
    from controller.game import events as ev
    from controller.game.effects import StartShuffle
    from controller.game.table import Table
    from controller.service.device_commands import pending_requests

    table = Table(load_rules("house-h17", {"burn": 0}))
    table.handle(ev.TableOpened(now=0.0))
    table.handle(ev.ShuffleDone(count=table.rules.cards_in_shoe))
    table.handle(ev.BetPlaced(1, 1000))
    table.handle(ev.NoMoreBets())
    for card in ("9C", "TS", "8D"):
        table.handle(ev.CardDrawn(card))
    table.handle(ev.CutCardReached())
    table.handle(ev.CardDrawn("7H"))  # the hole card: the dealer has 17 and stands
    table.handle(ev.PeekResult(blackjack=False))
    table.handle(ev.Decision(1, "stand"))
    assert table.phase == "settled" and table.shuffle_due
    assert any(isinstance(e, StartShuffle) for e in pending_requests(table))


async def test_an_input_that_comes_as_the_wait_times_out_is_still_seen(tmp_path: Path) -> None:
    """The input lands in the same loop turn as the timeout: the timeout cancels the waiting task before it
    resumes. Under load the crew then called itself stuck on an acknowledgement that had arrived."""
    import time

    from controller.journal import Journal
    from controller.service.core import TableCore
    from controller.service.table_service import TableService
    from drivers.group import DeviceGroup

    with Journal(tmp_path / "t01.journal") as journal:
        service = TableService(TableCore("t01", load_rules("house-h17"), journal), DeviceGroup())
        mark = service.applied

        loop = asyncio.get_running_loop()
        loop.call_later(0.01, time.sleep, 0.1)  # a loaded loop: both timers below fall due in one turn
        loop.call_later(0.049, service._applied, "alarm_ack")  # the input, just before the timeout's own timer
        assert await service.wait_input(mark, None, timeout=0.05) == (mark + 1, "alarm_ack")
