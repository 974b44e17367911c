"""The live ``<root>/analytics`` topic (DESIGN, "Table analytics"): what a table publishes at each settlement and
shoe end, since it was last opened, checked against ``tablectl report`` and the journal itself, to the cent.

A simulated table (:class:`controller.sim.demo.DemoTable`: simulators, real drivers, the service, the crew) plays on a
real Mosquitto; its journal is then replayed input by input through a second table service whose publisher
records every message synchronously (:class:`controller.mqtt.publisher.MemoryPublisher`), so each publish point can be
checked one by one, with a close and a reopen put in, and with the theory held back.
"""

from __future__ import annotations

import asyncio
import io
import json
import math
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest

from controller.analytics import live as live_analytics_module
from controller.analytics.hold import MIN_ROUNDS, NO_TOTALS, figures, totals_after
from controller.analytics.live import PUBLISH_ON, LiveAnalytics, Theory, theory_for
from controller.analytics.shuffle_quality import THRESHOLD
from controller.cli import main as tablectl
from controller.game import events as ev
from controller.game.money import parse_money
from controller.game.rules import rules_digest
from controller.journal import Journal
from controller.mqtt.options import BrokerOptions
from controller.mqtt.publisher import MemoryPublisher, MqttPublisher
from controller.profiles import load_rules
from controller.records import rounds as recall_rounds
from controller.service import analytics_feed as analytics_feed_module
from controller.service.core import TableCore, engine_input
from controller.service.table_service import TableService
from controller.sim.demo import DemoOptions, DemoTable, demo_pit
from drivers.base import Device
from drivers.group import DeviceGroup
from tests.mqtt.mqtt_helpers import recording
from tests.mqtt_broker import Mosquitto

pytestmark = pytest.mark.timeout(300)

PROFILE = "house-h17"
ROUNDS = 40
#: the figures that must equal ``tablectl report --json`` exactly (money as decimal strings)
SAME_AS_REPORT = ("rounds", "hands", "decisions", "handle", "house_net", "initial_wagers", "theoretical_edge",
                  "theoretical_win", "hold", "win_z", "win_sd", "sigma", "covariance", "sigma_source", "min_rounds",
                  "play_s", "mean_round_s")


@dataclass
class Played:
    journal: Path
    #: every ``analytics`` message the broker delivered, in order, and the event seq received before each
    analytics: list[tuple[dict[str, Any], int]]


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory, mosquitto_session: Mosquitto) -> Played:
    """A house-h17 table that played 40 rounds (a few shoes) on Mosquitto, and what it published."""
    state = tmp_path_factory.mktemp("live-analytics") / "state"
    state.mkdir()
    prefix = "live-analytics"
    opts = DemoOptions(rules=load_rules(PROFILE), rounds=ROUNDS, seed=9, speed="max", prefix=prefix, quiet=True,
                       dashboard=False, tick_every=5.0)

    async def play() -> list[tuple[dict[str, Any], int]]:
        async with recording(mosquitto_session.host, mosquitto_session.port, f"{prefix}/t01/#") as rec:
            table = DemoTable("t01", opts, state, mosquitto_session.url, io.StringIO())
            try:
                async with asyncio.timeout(240):
                    await table.run()
            finally:
                await table.close()
            await rec.wait_for(lambda r: any(m.json()["rounds"] == ROUNDS and m.json()["theoretical_win"] is not None
                                             for m in r.on("/analytics")), timeout=30)
        out: list[tuple[dict[str, Any], int]] = []
        last_event = 0
        for m in rec.messages:
            if m.topic.endswith("/events"):
                last_event = max(last_event, int(m.json()["seq"]))
            elif m.topic.endswith("/analytics"):
                out.append((m.json(), last_event))
        return out

    return Played(state / "t01.journal", asyncio.run(play()))


def _outbox(path: Path) -> list[dict[str, Any]]:
    with Journal.open_readonly(path) as journal:
        return [json.loads(row.body) for row in journal.records()]


def _report(path: Path, capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    capsys.readouterr()
    assert tablectl(["report", str(path), "--json", *args]) == 0
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    return data


def _since_open(events: list[dict[str, Any]], upto: int) -> tuple[list[dict[str, Any]], float | None, float]:
    """The settled rounds of the records up to ``upto`` since the last ``table_opened``, its ts, the last ts."""
    kept = [e for e in events if e["seq"] <= upto]
    opens = [i for i, e in enumerate(kept) if e["type"] == "table_opened"]
    start = opens[-1] if opens else 0
    closes = [e["ts"] for e in kept[start:] if e["type"] == "table_closed"]
    return (list(recall_rounds(kept[start:])), kept[start]["ts"] if opens else None,
            closes[0] if closes else kept[-1]["ts"])


def _one_pass(events: list[dict[str, Any]], upto: int) -> dict[str, Any]:
    """What :func:`controller.analytics.hold.figures` says of the rounds since the last open, up to ``upto``."""
    rounds, opened, now = _since_open(events, upto)
    return figures(rounds, load_rules(PROFILE), baseline=NO_TOTALS, opened=opened, now=now).to_json()


def _check_against_one_pass(payload: dict[str, Any], events: list[dict[str, Any]]) -> None:
    want = _one_pass(events, payload["seq"])
    for key in (*SAME_AS_REPORT, "idle_s", "rounds_per_hour", "hands_per_hour", "decisions_per_hour"):
        assert payload[key] == want[key], (key, payload["seq"], payload[key], want[key])
    if payload["rounds"]:  # the chart's last point is where the figures are
        last = payload["series"][-1]
        assert (last["round"], last["house_net"], last["theoretical_win"]) == (
            payload["rounds"], payload["house_net"], payload["theoretical_win"])


# ---- the published topic against the report --------------------------------------------------------------


def test_the_live_figures_equal_the_report_on_the_same_journal_to_the_cent(
    played: Played, capsys: pytest.CaptureFixture[str]
) -> None:
    final, _ = played.analytics[-1]
    report = _report(played.journal, capsys)
    assert final["rounds"] == report["rounds"] == ROUNDS
    for key in SAME_AS_REPORT:
        assert final[key] == report[key], (key, final[key], report[key])
    # theoretical win: initial wagers x the edge `tablectl edge` prints, to the cent
    theoretical, initial = parse_money(final["theoretical_win"]), parse_money(final["initial_wagers"])
    assert theoretical == round(initial * report["theoretical_edge"])
    assert final["win_sd"] is not None and final["theoretical_hold"] is not None
    expected_z = (parse_money(final["house_net"]) - theoretical) / parse_money(final["win_sd"])
    assert final["win_z"] == pytest.approx(expected_z, rel=1e-3)
    # the engine's own totals: what `state` shows (the table opened once)
    with Journal.open_readonly(played.journal) as journal:
        core = TableCore("t01", load_rules(PROFILE), journal)
        core.recover()
        totals = core.state()["totals"]
    assert parse_money(totals["handle"]) == parse_money(final["handle"])
    assert parse_money(totals["house_net"]) == parse_money(final["house_net"])
    # the shuffle-quality monitor's figures ride along: its threshold and the last shoes it judged
    assert final["shuffle"]["threshold"] == THRESHOLD
    assert all(set(shoe) >= {"shoe", "score", "passed"} for shoe in final["shuffle"]["shoes"])


def test_every_message_is_the_one_pass_figures_of_the_records_before_it_and_never_ahead_of_the_events(
    played: Played,
) -> None:
    events = _outbox(played.journal)
    assert len(played.analytics) >= 10  # published as the rounds settled, not only at the end
    rounds_seen = [a["rounds"] for a, _ in played.analytics]
    assert rounds_seen == sorted(rounds_seen) and rounds_seen[-1] == ROUNDS
    for payload, events_before in played.analytics:
        assert payload["seq"] <= events_before, "an analytics message ahead of the events it counts"
        if payload["theoretical_win"] is None:  # the theory was still being computed: the rest holds anyway
            assert payload["win_z"] is None and payload["sigma"] is None
            continue
        _check_against_one_pass(payload, events)
        # no z before the sample means something: too few rounds below the minimum, a number from it on
        few = payload["rounds"] < payload["min_rounds"] == MIN_ROUNDS
        assert (payload["win_z"] is None) == few, payload["rounds"]


# ---- every publish point, replayed ------------------------------------------------------------------------


@dataclass
class Replay:
    service: TableService
    publisher: MemoryPublisher
    journal: Journal
    path: Path
    #: per input replayed: the types of the records it produced, the messages it caused, the journal's last seq
    steps: list[tuple[list[str], list[tuple[str, bytes, bool]], int]]


class _Shoe:
    """Where the service sends the shoe's commands; never opened here (the replay has no devices to tell)."""

    async def lock_dealing(self) -> None: ...

    async def enable_dealing(self) -> None: ...

    async def reveal_hole(self) -> None: ...


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def _replay(source: Path, target: Path, *, reopen_after_settlement: int | None = None,
                  setup: Callable[[TableService], None] | None = None) -> Replay:
    """Apply every input of ``source`` to a fresh table service writing ``target`` (the inputs' own times), a
    close and an open put in after the ``reopen_after_settlement``-th settlement."""
    clock = _Clock()
    journal = Journal(target)
    publisher = MemoryPublisher(journal)
    core = TableCore("t01", load_rules(PROFILE), journal, publisher, clock=clock, pit=demo_pit("t01"))  # as the demo
    service = TableService(core, DeviceGroup(shoe=cast(Device, _Shoe())), clock=clock, tick_every=0)
    if setup is not None:
        setup(service)
    await publisher.start()
    steps: list[tuple[list[str], list[tuple[str, bytes, bool]], int]] = []
    settled = 0

    def apply(event: ev.Event, ts: float) -> None:
        nonlocal settled
        clock.now = ts
        before, upto = len(publisher.messages), journal.last_seq
        service.apply(event)
        types = [json.loads(r.body)["type"] for r in journal.records(upto + 1)]
        steps.append((types, publisher.messages[before:], journal.last_seq))
        settled += types.count("round_settled")

    with Journal.open_readonly(source) as original:
        rows = list(original.inputs_since(0))
        # a journal created on purpose names itself first (journal_started, before any input): so does the replay
        started = [json.loads(r.body) for r in original.records(1, 1) if '"journal_started"' in r.body]
    journal.add_records(started)
    for row in rows:
        apply(engine_input(row.event), row.ts)
        if reopen_after_settlement is not None and settled == reopen_after_settlement:
            reopen_after_settlement = None
            apply(ev.TableClosed(now=row.ts + 0.001), row.ts + 0.001)
            apply(ev.TableOpened(now=row.ts + 0.002), row.ts + 0.002)
    return Replay(service, publisher, journal, target, steps)


def _analytics(messages: list[tuple[str, bytes, bool]]) -> list[dict[str, Any]]:
    return [json.loads(p) for t, p, _ in messages if t.endswith("/analytics")]


async def test_published_after_each_settlement_and_shoe_end_and_nothing_else(played: Played, tmp_path: Path) -> None:
    theory_for(load_rules(PROFILE)).result(timeout=120)  # known from the first publish on
    shuffle = {"threshold": 2.5, "shoes": [{"shoe": 1, "score": 0.4, "alarm": False}]}
    flags = [{"spot": 3, "shoe": 1, "reason": "bets follow the count"}]

    def providers(service: TableService) -> None:
        service.analytics_shuffle = lambda: shuffle
        service.analytics_flags = lambda: flags

    replay = await _replay(played.journal, tmp_path / "replay.journal", setup=providers)
    events = _outbox(replay.path)
    points = shoe_ends_alone = 0
    for types, messages, last_seq in replay.steps:
        published = _analytics(messages)
        # the contract's publish points (a settlement; a shoe end: the shuffle asked for, or done), and the others
        shoe_end = "round_settled" not in types and ("shuffle_requested" in types or "shuffle_done" in types)
        shoe_ends_alone += shoe_end
        due = shoe_end or any(t == "round_settled" or t in PUBLISH_ON for t in types)
        assert len(published) == (1 if due else 0), (types, published)
        if not due:
            continue
        points += 1
        payload = published[0]
        assert messages[-1][0].endswith("/analytics") and messages[-1][2]  # retained, after the events and state
        assert payload["seq"] == last_seq  # it counts every record of its input
        assert payload["shuffle"] == shuffle and payload["flagged_spots"] == flags
        _check_against_one_pass(payload, events)
    settlements = sum(e["type"] == "round_settled" for e in events)
    shoe_ends = sum(e["type"] == "shuffle_requested" for e in events)
    assert settlements == ROUNDS and shoe_ends >= 2 and shoe_ends_alone >= 2 and points >= settlements + shoe_ends
    # replayed at the inputs' own times, it publishes what the table published
    final = _analytics(replay.publisher.messages)[-1]
    live, _ = played.analytics[-1]
    assert {k: v for k, v in final.items() if k not in ("shuffle", "flagged_spots")} == {
        k: v for k, v in live.items() if k not in ("shuffle", "flagged_spots")}
    replay.journal.close()


async def test_the_figures_start_again_when_the_table_is_opened_again(
    played: Played, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    theory_for(load_rules(PROFILE)).result(timeout=120)
    replay = await _replay(played.journal, tmp_path / "reopened.journal", reopen_after_settlement=15)
    published = _analytics(replay.publisher.messages)
    closed = [a for a in published if a["closed_at"] is not None]
    assert closed and closed[0]["rounds"] == 15  # the closed table's figures stand until it opens again
    opens = sorted({a["opened"] for a in published if a["opened"] is not None})
    assert len(opens) == 2, "opened twice"
    reopened = [a for a in published if a["opened"] == opens[1]]
    assert reopened[0]["rounds"] == 0 and reopened[0]["closed_at"] is None, "the open starts the figures again"
    final = published[-1]
    assert final["rounds"] == ROUNDS - 15
    # the engine's totals start again at the open too: the figures are since the last open, as `totals`
    totals = replay.service.core.state()["totals"]
    assert (parse_money(final["handle"]), parse_money(final["house_net"])) == (
        parse_money(totals["handle"]), parse_money(totals["house_net"]))
    replay.journal.close()
    # and `report --since` the open says the same of the same rounds
    report = _report(replay.path, capsys, "--since", final["opened_at"].rstrip("Z"))
    for key in ("rounds", "hands", "handle", "house_net", "initial_wagers", "theoretical_win", "hold", "win_z"):
        assert final[key] == report[key], (key, final[key], report[key])
    whole = _report(replay.path, capsys)
    assert parse_money(whole["handle"]) > parse_money(final["handle"])


async def test_without_the_theory_yet_the_rest_goes_out_and_the_theory_follows(
    played: Played, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pending: Future[Theory] = Future()
    monkeypatch.setattr(analytics_feed_module, "theory_for", lambda rules, cache_dir=None, key=None: pending)
    replay = await _replay(played.journal, tmp_path / "pending.journal")
    before = _analytics(replay.publisher.messages)
    assert before and all(a["theoretical_win"] is None and a["win_z"] is None for a in before)
    assert before[-1]["rounds"] == ROUNDS and before[-1]["handle"] == played.analytics[-1][0]["handle"]
    started = time.monotonic()
    pending.set_result(theory_for(load_rules(PROFILE)).result(timeout=120))  # the worker thread's answer
    while len(_analytics(replay.publisher.messages)) == len(before):
        assert time.monotonic() - started < 5, "not republished once the theory was known"
        await asyncio.sleep(0.01)
    after = _analytics(replay.publisher.messages)[-1]
    assert after["theoretical_win"] == played.analytics[-1][0]["theoretical_win"] and after["win_z"] is not None
    replay.journal.close()


def test_the_theory_is_worked_out_by_a_child_and_kept_beside_the_journal_for_a_restart(tmp_path: Path) -> None:
    """A table killed and restarted finds its theory at once (a second or two of CPU otherwise, at every start,
    beside the event loop): kept by the rules' digest, sealed, the same figures the table's own process works out;
    an edited one is not taken (tests/analytics/test_kept_theory.py: every other move against it)."""
    rules = load_rules(PROFILE)
    key = bytes(range(32))

    def compute(cache_dir: Path | None, key: bytes | None = key) -> Any:
        return live_analytics_module._compute(rules, cache_dir, threading.Event(), key)

    kept = compute(tmp_path / ".theory")
    [path] = (tmp_path / ".theory").glob("theory-*.json")
    assert rules_digest(rules) in path.name
    assert kept == compute(None), "the child's figures are the process's own"
    path.write_text(json.dumps({**json.loads(path.read_text()), "edge": 0.5}))
    assert compute(tmp_path / ".theory") == kept, "edited: worked out again"
    assert json.loads(path.read_text())["edge"] == kept.edge, "kept anew"
    assert compute(tmp_path / "unkeyed" / ".theory", None) == kept, "without a key: worked out by a child"
    assert not (tmp_path / "unkeyed").exists(), "without a key nothing is kept on disk"


# ---- the pieces ---------------------------------------------------------------------------------------------


def test_the_chart_series_is_thinned_evenly_and_each_point_is_the_figures_at_its_round(played: Played) -> None:
    theory = theory_for(load_rules(PROFILE)).result(timeout=120)
    live = LiveAnalytics(series_points=8)
    with Journal.open_readonly(played.journal) as journal:
        live.load(journal)
    series = live.payload(theory, table_id="t01", profile=PROFILE)["series"]
    assert len(series) <= 8 and series[0]["round"] == 0 and series[-1]["round"] == ROUNDS
    inner = [p["round"] for p in series[1:-1]]
    stride = inner[1] - inner[0]
    assert stride & (stride - 1) == 0 and inner == list(range(inner[0], inner[-1] + 1, stride))
    all_rounds = list(recall_rounds(_outbox(played.journal)))
    for p in series[1:]:
        at = figures(all_rounds[: p["round"]], load_rules(PROFILE), baseline=NO_TOTALS).to_json()
        variance = 0.0
        for r in all_rounds[: p["round"]]:  # each hand's variance, and the covariance of each two hands of a round
            ws = [parse_money(s["wager"]) for s in r["spots"].values()
                  if s.get("wager") and parse_money(s["wager"]) > 0]
            variance += theory.spread.sigma ** 2 * sum(w * w for w in ws) + theory.spread.covariance * (
                sum(ws) ** 2 - sum(w * w for w in ws))
        sd = round(math.sqrt(variance))
        assert (p["house_net"], p["theoretical_win"]) == (at["house_net"], at["theoretical_win"])
        assert parse_money(p["sd"]) == sd


def test_a_journal_with_no_open_gives_empty_figures_and_no_theory_gives_nulls(tmp_path: Path) -> None:
    with Journal(tmp_path / "new.journal") as journal:
        live = LiveAnalytics()
        assert live.advance(journal) is True and live.loaded
        payload = live.payload(None, table_id="t01", profile=PROFILE)
    assert payload["rounds"] == 0 and payload["opened"] is None and payload["handle"] == "0"
    assert payload["hold"] is None and payload["theoretical_win"] is None and payload["win_z"] is None
    assert payload["series"] == [{"round": 0, "ts": 0.0, "house_net": "0", "theoretical_win": None, "sd": None}]
    assert payload["shuffle"] == {"threshold": None, "shoes": []} and payload["flagged_spots"] == []


def test_totals_after_and_the_tally_count_a_restart_of_the_totals_as_figures_does() -> None:
    """The engine's totals start again at an open: a round whose totals count fewer rounds than the one before."""
    from controller.analytics.live import Tally

    def r(n: int, handle: str, net: str) -> dict[str, Any]:
        return {"started": float(n), "ended": n + 0.5, "spots": {"1": {"wager": "10"}}, "decisions": [],
                "totals": {"rounds": n, "handle": handle, "house_net": net}}

    rounds = [r(7, "100", "10"), r(8, "110", "0"), r(1, "10", "-10")]
    tally = Tally(before=totals_after(r(6, "90", "5")))
    for x in rounds:
        tally.add(x)
    want = figures(rounds, load_rules(PROFILE), baseline=totals_after(r(6, "90", "5")))
    assert (tally.handle, tally.house_net, tally.initial) == (want.handle, want.house_net, want.initial_wagers)


# ---- the publisher ------------------------------------------------------------------------------------------


async def test_the_publisher_never_waits_keeps_the_latest_and_sends_it_after_the_events(
    mosquitto: Mosquitto, tmp_path: Path
) -> None:
    with Journal(tmp_path / "t01.journal") as journal:
        publisher = MqttPublisher(journal, table_id="t01", broker=BrokerOptions([mosquitto.url]),
                                  prefix="pub-analytics")
        journal.commit_event({"type": "tick"}, [{"type": "round_settled", "round": 1}], ts=1.0)
        started = time.perf_counter()
        for n in range(3):  # before any connection: nothing waits, only the newest stays queued
            publisher.publish_analytics({"rounds": n})
        assert time.perf_counter() - started < 0.05
        async with recording(mosquitto.host, mosquitto.port, "pub-analytics/t01/#") as rec:
            await publisher.start()
            try:
                await publisher.wait_drained(timeout=10)
                assert publisher.topics["analytics"] == "pub-analytics/t01/analytics"
                await rec.wait_for(lambda r: bool(r.on("/analytics")))
            finally:
                await publisher.close()
        kinds = [m.topic.rsplit("/", 1)[1] for m in rec.messages if not m.topic.endswith("/status")]
        assert kinds.index("events") < kinds.index("analytics")
        assert [m.json() for m in rec.on("/analytics")] == [{"rounds": 2}]
    async with recording(mosquitto.host, mosquitto.port, "pub-analytics/t01/analytics") as fresh:
        await fresh.wait_for(lambda r: bool(r.messages))
    assert fresh.messages[0].retain and fresh.messages[0].json() == {"rounds": 2}



def test_a_failing_signal_reader_neither_stops_nor_repeats_the_sums(played: Played) -> None:
    """The advantage-play signals read the same records: their failure on one is logged, and the money sums
    are the same as without them (never folded in twice on the next publish)."""
    def boom(body: Any) -> None:
        raise RuntimeError("a signals bug")

    with Journal.open_readonly(played.journal) as journal:
        plain, failing = LiveAnalytics(), LiveAnalytics(also=boom)
        plain.load(journal)
        failing.load(journal)
        assert failing.advance(journal) is False
    assert failing.tally == plain.tally and failing.tally.rounds == ROUNDS


async def test_the_live_shoe_numbers_are_the_tables_and_the_reports_after_a_reopen_and_a_restart(
    played: Played, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One numbering of the shoes: the live topic's (flags, signals) counted from the last open, 14/15/144,
    where ``tablectl report`` and the shuffle scores count the table's shuffles from the journal's start,
    29/30/159. Both count the table's shuffles now, across an open and a restart."""
    from controller.analytics.live_signals import SignalWatch

    replay = await _replay(played.journal, tmp_path / "reopened.journal", reopen_after_settlement=15)
    shuffles = replay.service.core.state()["shoe"]["shuffles"]
    assert shuffles >= 3, "the premise: several shoes, some before the reopen"
    assert replay.service.signals.shoe == shuffles
    live = {(s.shoe, s.spot, s.bets) for s in replay.service.signals.signals}
    replay.journal.close()
    detail = _report(replay.path, capsys, "--detail")["advantage"]["signals"]
    report = {(s["shoe"], s["spot"], s["bets"]) for s in detail}
    assert live and live <= report, (sorted(live), sorted(report))

    # a restart: the watch reads the records from the last open only, then takes the table's count
    rules = load_rules(PROFILE)
    watch = SignalWatch(lambda: rules)
    with Journal.open_readonly(replay.path) as journal:
        LiveAnalytics(also=watch.take, also_reset=watch.reset).advance(journal)
    watch.align(shuffles)
    assert watch.shoe == shuffles
    restarted = {(s.shoe, s.spot, s.bets) for s in watch.signals}
    assert restarted and restarted <= report, (sorted(restarted), sorted(report))
