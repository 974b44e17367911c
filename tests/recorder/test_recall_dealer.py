"""``tablectl recall --dealer ID`` (controller/reports/recall.py, controller/cli/recall.py): exactly the rounds a dealer
dealt, from a table's records and from the recorder's database across tables; a bad or unknown id refused, exit 2."""

from __future__ import annotations

import json

import pytest

from controller.cli import main as tablectl
from controller.errors import UsageError
from controller.reports.recall import dealer_of, dealt_by, no_rounds_of
from tests.analytics.dealer_records import Log
from tests.recorder.dealer_floor import fill, two_tables


@pytest.fixture
def floor(store_url: str) -> str:
    return fill(store_url)


def test_a_dealers_rounds_are_exactly_those_they_dealt() -> None:
    t1 = two_tables()["t01"]
    seen: set[str] = set()
    ames = list(dealt_by(Log(t1.bodies), "d.ames", seen=seen))
    assert [r["round"] for r in ames] == [1, 2, 3]  # the round dealt across the relief is the dealer of record's
    assert [dealer_of(r) for r in ames] == ["d.ames"] * 3
    assert [r["round"] for r in dealt_by(Log(t1.bodies), "d.bo")] == [4, 5]
    assert seen == {"d.bo"}
    assert list(dealt_by(Log(t1.bodies), "d.cruz")) == []
    error = no_rounds_of("d.cruz", "t01.journal", {"d.bo", "d.ames"})
    assert isinstance(error, UsageError) and "its dealers: d.ames, d.bo" in str(error)


def test_recall_db_dealer_gives_their_rounds_at_every_table(floor: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert tablectl(["recall", "--db", floor, "--dealer", "d.bo", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert sorted((r["table_id"], r["round"]) for r in got) == [("t01", 4), ("t01", 5), ("t02", 1), ("t02", 2)]
    assert [r["ended"] for r in got] == sorted(r["ended"] for r in got)  # oldest first, across the tables
    assert {dealer_of(r) for r in got} == {"d.bo"}
    assert tablectl(["recall", "--db", floor, "--dealer", "d.bo", "--table", "t02", "--json"]) == 0
    assert [(r["table_id"], r["round"]) for r in json.loads(capsys.readouterr().out)] == [("t02", 1), ("t02", 2)]
    assert tablectl(["recall", "--db", floor, "--dealer", "d.bo", "--last", "1", "--json"]) == 0
    assert [(r["table_id"], r["round"]) for r in json.loads(capsys.readouterr().out)] == [
        (got[-1]["table_id"], got[-1]["round"])]


@pytest.mark.parametrize(("dealer", "why"), [("D.Bo", "only a-z 0-9 . _ -"), ("", "blank"), ("x" * 65, "at most 64"),
                                             ("d.cruz", "no round dealt by d.cruz")])
def test_a_bad_or_unknown_dealer_is_refused_in_one_line_exit_2(
        floor: str, dealer: str, why: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert tablectl(["recall", "--db", floor, "--dealer", dealer]) == 2
    err = capsys.readouterr().err.strip()
    assert why in err and "\n" not in err
