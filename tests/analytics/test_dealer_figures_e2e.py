"""Each dealer's figures on a real journal (DESIGN, "The dealer on duty"): a demo table's inputs replayed through a
table service with dealers assigned as a pit supervisor and a badge assign them (one relief during a round, a
sign-out), then ``tablectl report --by dealer``, ``recall --dealer``, the live ``analytics`` topic, a restart, and the
recorder's database, each against the others and against the table's own figures."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest

from controller.analytics.live import LiveAnalytics, theory_for
from controller.cli import main as tablectl
from controller.game import events as ev
from controller.game.money import parse_money
from controller.journal import Journal
from controller.mqtt.publisher import MemoryPublisher
from controller.profiles import load_rules
from controller.recorder.store import open_store
from controller.reports.recall import dealer_of
from controller.service.core import TableCore, engine_input
from controller.service.table_service import TableService
from controller.sim.demo import demo_pit
from drivers.base import Device
from drivers.group import DeviceGroup

pytestmark = pytest.mark.timeout(600)

PROFILE = "house-h17"
ROUNDS = 24
#: the figures of a dealer's line that the live topic carries too (the report's hands_per_hour counts from the
#: first round, the live one from the open: docs/analytics.md)
SAME_LIVE = ("rounds", "hands", "procedure_errors", "initial_wagers", "actual_win", "theoretical_win", "win_z",
             "win_sd", "min_rounds")


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class _Shoe:
    """Where the service sends the shoe's commands; never opened here (the replay has no devices to tell)."""

    async def lock_dealing(self) -> None: ...

    async def enable_dealing(self) -> None: ...

    async def reveal_hole(self) -> None: ...


@dataclass
class Dealt:
    journal: Path
    #: the last ``analytics`` message the replayed table published
    analytics: dict[str, Any]
    #: each round's dealer of record as the test assigned them
    dealers: dict[int, str | None]


@pytest.fixture(scope="module")
def dealt(tmp_path_factory: pytest.TempPathFactory) -> Dealt:
    """A demo table's ROUNDS rounds (its real inputs) dealt again with dealers on duty: d.ames assigned by pit.kim
    before the first round, relieved by d.bo's badge during round 11 (held to its settlement), d.bo signed out by
    pit.kim after round 18: rounds 19 on are no dealer's."""
    import asyncio

    mp = pytest.MonkeyPatch()
    mp.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("xdg")))
    state = tmp_path_factory.mktemp("dealt") / "state"
    try:
        assert tablectl(["demo", "--tables", "1", "--rounds", str(ROUNDS), "--seed", "5", "--speed", "max",
                         "--state-dir", str(state), "--no-dashboard", "--quiet"]) == 0
    finally:
        mp.undo()
    theory_for(load_rules(PROFILE)).result(timeout=120)
    target = state.parent / "dealt.journal"

    async def replay() -> dict[str, Any]:
        clock = _Clock()
        journal = Journal(target)
        publisher = MemoryPublisher(journal)
        core = TableCore("t01", load_rules(PROFILE), journal, publisher, clock=clock, pit=demo_pit("t01"))
        service = TableService(core, DeviceGroup(shoe=cast(Device, _Shoe())), clock=clock, tick_every=0)
        await publisher.start()
        settled, relieved, signed_out = 0, False, False

        def apply(event: ev.Event, ts: float) -> list[str]:
            clock.now = ts
            upto = journal.last_seq
            service.apply(event)
            return [json.loads(r.body)["type"] for r in journal.records(upto + 1)]

        with Journal.open_readonly(state / "t01.journal") as original:
            rows = list(original.inputs_since(0))
            journal.add_records([json.loads(r.body) for r in original.records(1, 1) if '"journal_started"' in r.body])
        apply(ev.DealerAssigned("d.ames", "pit.kim"), rows[0].ts)
        for row in rows:
            if row.event.get("type") not in ev.EVENT_TYPES:  # a player's card in or out: the ratings', not a round's
                continue
            if row.event["type"] == ev.DealerAssigned.TYPE:  # the demo crew's own dealers: this test assigns its own
                continue
            types = apply(engine_input(row.event), row.ts)
            settled += types.count("round_settled")
            if settled == 10 and "no_more_bets" in types and not relieved:
                relieved = True
                apply(ev.DealerAssigned("d.bo", "badge"), row.ts + 0.0005)
            if settled == 18 and "round_settled" in types and not signed_out:
                signed_out = True
                apply(ev.DealerAssigned(None, "pit.kim"), row.ts + 0.0005)
        assert relieved and signed_out
        analytics = [json.loads(p) for t, p, _ in publisher.messages if t.endswith("/analytics")]
        journal.close()
        return analytics[-1]

    analytics = asyncio.run(replay())
    dealers = {n: "d.ames" if n <= 11 else "d.bo" if n <= 18 else None for n in range(1, ROUNDS + 1)}
    return Dealt(target, analytics, dealers)


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    capsys.readouterr()
    assert tablectl(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_every_round_names_its_dealer_of_record(dealt: Dealt, capsys: pytest.CaptureFixture[str]) -> None:
    rounds = _json(capsys, "recall", str(dealt.journal), "--last", str(ROUNDS), "--json")
    assert {r["round"]: dealer_of(r) for r in rounds} == dealt.dealers
    assert all(r["dealer_id"] == dealt.dealers[r["round"]] for r in rounds if "dealer_id" in r)  # dealer-core's field
    relief = next(r for r in rounds if r["round"] == 11)
    settle = next(e for e in relief["events"] if e["type"] == "round_settled")
    assert (settle["dealer_id"], settle.get("relieved_by")) == ("d.ames", "d.bo")


def test_recall_dealer_gives_exactly_that_dealers_rounds(dealt: Dealt, capsys: pytest.CaptureFixture[str]) -> None:
    for dealer in ("d.ames", "d.bo"):
        rounds = _json(capsys, "recall", str(dealt.journal), "--dealer", dealer, "--json")
        assert [r["round"] for r in rounds] == [n for n, d in dealt.dealers.items() if d == dealer]
    assert [r["round"] for r in _json(capsys, "recall", str(dealt.journal), "--dealer", "d.bo", "--last", "2",
                                      "--json")] == [17, 18]
    capsys.readouterr()
    assert tablectl(["recall", str(dealt.journal), "--dealer", "d.cruz"]) == 2
    err = capsys.readouterr().err
    assert "no round dealt by d.cruz" in err and "d.ames, d.bo" in err
    assert tablectl(["recall", str(dealt.journal), "--dealer", "D.Ames"]) == 2
    assert "only a-z 0-9" in capsys.readouterr().err


def test_report_by_dealer_adds_up_to_the_tables_report(dealt: Dealt, capsys: pytest.CaptureFixture[str]) -> None:
    table = _json(capsys, "report", str(dealt.journal), "--json")
    report = _json(capsys, "report", str(dealt.journal), "--by", "dealer", "--json")
    lines = {d["dealer_id"]: d for d in report["dealers"]}
    assert list(lines) == ["d.ames", "d.bo", None]
    assert [lines[d]["rounds"] for d in lines] == [11, 7, ROUNDS - 18]
    for name in ("rounds", "hands", "decisions"):
        assert sum(d[name] for d in report["dealers"]) == report["total"][name] == table[name], name
    for name, of_table in (("initial_wagers", "initial_wagers"), ("actual_win", "house_net"), ("handle", "handle")):
        assert sum(parse_money(d[name]) for d in report["dealers"]) == parse_money(table[of_table]), name
    assert parse_money(report["total"]["theoretical_win"]) == parse_money(table["theoretical_win"])
    assert abs(sum(parse_money(d["theoretical_win"]) for d in report["dealers"])
               - parse_money(table["theoretical_win"])) <= 2  # each line rounded to the cent
    assert sum(d["on_duty_s"] for d in report["dealers"]) == pytest.approx(table["play_s"] + table["idle_s"])
    assert lines["d.ames"]["win_z"] is not None and lines["d.bo"]["win_z"] is None  # 11 rounds and 7
    capsys.readouterr()
    assert tablectl(["report", str(dealt.journal), "--by", "dealer"]) == 0
    text = capsys.readouterr().out
    assert "d.ames" in text and "no dealer on duty" in text and "total" in text


def test_the_live_dealers_are_the_reports_and_survive_a_restart(dealt: Dealt,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    report = _json(capsys, "report", str(dealt.journal), "--by", "dealer", "--json")
    lines = {d["dealer_id"]: d for d in report["dealers"]}
    live = dealt.analytics["dealers"]
    assert sorted(live) == ["d.ames", "d.bo"]  # no dealer's rounds are no one's
    for dealer, figures in live.items():
        for name in SAME_LIVE:
            assert figures[name] == lines[dealer][name], (dealer, name)
    restarted = LiveAnalytics()
    with Journal.open_readonly(dealt.journal) as journal:
        restarted.load(journal)
    theory = theory_for(load_rules(PROFILE)).result()
    assert restarted.payload(theory, table_id="t01", profile=PROFILE)["dealers"] == live


def test_the_recorders_database_gives_the_journals_dealers(dealt: Dealt, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "recorder.db")
    with open_store(db) as store, Journal.open_readonly(dealt.journal) as journal:
        for row in journal.records():
            assert store.add_event("t01", row.seq, row.body) == "stored"
    from_journal = _json(capsys, "report", str(dealt.journal), "--by", "dealer", "--json")
    from_db = _json(capsys, "report", "--db", db, "--by", "dealer", "--json")
    assert from_db["dealers"] == [{**d, "tables": ["t01"]} for d in from_journal["dealers"]]
    rounds = _json(capsys, "recall", "--db", db, "--dealer", "d.bo", "--json")
    journal_rounds = _json(capsys, "recall", str(dealt.journal), "--dealer", "d.bo", "--json")
    assert [{k: v for k, v in r.items() if k != "table_id"} for r in rounds] == journal_rounds
    assert {r["table_id"] for r in rounds} == {"t01"}
