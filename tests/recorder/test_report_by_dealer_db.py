"""``tablectl report --db URL --by dealer`` on hand-made records of two tables: each dealer's line across the tables,
and the lines add up to the tables' own report (``report --db --json``)."""

from __future__ import annotations

import json

import pytest

from controller.cli import main as tablectl
from controller.game.money import parse_money
from tests.recorder.dealer_floor import fill


@pytest.fixture
def floor(store_url: str) -> str:
    return fill(store_url)


def test_each_dealer_across_tables_adds_up_to_the_floor(floor: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert tablectl(["report", "--db", floor, "--by", "dealer", "--profile", "house-h17", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["by"] == "dealer"
    lines = {d["dealer_id"]: d for d in report["dealers"]}
    assert list(lines) == ["d.ames", "d.bo", None]
    assert (lines["d.bo"]["tables"], lines["d.bo"]["rounds"]) == (["t01", "t02"], 4)
    assert (lines["d.ames"]["tables"], lines["d.ames"]["rounds"]) == (["t01"], 3)
    assert (lines[None]["tables"], lines[None]["rounds"]) == (["t02"], 1)
    assert tablectl(["report", "--db", floor, "--profile", "house-h17", "--json"]) == 0
    floor_figures = json.loads(capsys.readouterr().out)["floor"]
    for name in ("rounds", "hands"):
        assert sum(d[name] for d in report["dealers"]) == report["total"][name] == floor_figures[name]
    for name, table in (("initial_wagers", "initial_wagers"), ("actual_win", "house_net"), ("handle", "handle"),
                        ("theoretical_win", "theoretical_win")):
        assert parse_money(report["total"][name]) == parse_money(floor_figures[table]), name
        assert abs(sum(parse_money(d[name]) for d in report["dealers"]) - parse_money(floor_figures[table])) <= (
            0 if name != "theoretical_win" else 3), name  # theoretical: each dealer-table line rounded to the cent
    assert tablectl(["report", "--db", floor, "--by", "dealer", "--profile", "house-h17"]) == 0
    text = capsys.readouterr().out.splitlines()
    assert text[2].startswith("d.ames") and text[4].startswith("no dealer on duty") and text[5].startswith("total")


def test_by_dealer_is_text_or_json(floor: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert tablectl(["report", "--db", floor, "--by", "dealer", "--html", "x.html"]) == 2
    assert "--by dealer" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        tablectl(["report", "--db", floor, "--by", "spot"])
    assert e.value.code == 2
