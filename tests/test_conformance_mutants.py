"""The conformance pack's verdict on one golden scenario, at the edges a plausible wrong change would pass unseen
(issue 39): a refusal worded otherwise than the scenario expects fails, as does a settlement that differs or a
file with nothing to compare with. Pure: :func:`controller.conformance.play` on the shipped golden files' data."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from controller.conformance import build_report, play

SCENARIOS = Path(__file__).resolve().parent / "scenarios"
REFUSED = "ny-five-decks-refused.json"
SETTLED = "ny-natural-pays-3-2-on-five.json"
CLAUSE_REFUSAL = "decks = 5 refused: NY 4620.5(a)(2) allows 1 to 4"


def _golden(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((SCENARIOS / name).read_text())
    return data


def test_the_refusal_the_scenario_expects_passes_naming_it() -> None:
    r = play(SCENARIOS / REFUSED, _golden(REFUSED))
    assert (r.file, r.expects, r.passed, r.clauses) == (REFUSED, "refusal", True, ("(a)(2)",))
    assert CLAUSE_REFUSAL in r.detail


@pytest.mark.parametrize("expected", [
    "decks = 5 refused: NY 4620.5(a)(3) allows 1 to 4",  # another clause
    "decks = 5 refused: NY 4620.5(a)(2) allows 1 to 6",  # another bound
    "insurance refused",  # another refusal altogether
])
def test_a_refusal_worded_otherwise_than_expected_fails_saying_both(expected: str) -> None:
    data = _golden(REFUSED)
    data["expect"] = {"error": expected}
    r = play(SCENARIOS / REFUSED, data)
    assert (r.expects, r.passed) == ("refusal", False)
    assert r.detail.startswith("refused otherwise: ") and r.detail.endswith(f"(expected: {expected})")
    assert CLAUSE_REFUSAL in r.detail


def test_a_refusal_worded_otherwise_fails_the_report_too(tmp_path: Path) -> None:
    folder = tmp_path / "scenarios"
    folder.mkdir()
    data = _golden(REFUSED)
    data["expect"] = {"error": "decks = 5 refused: NY 4620.5(a)(2) allows 1 to 8"}
    (folder / REFUSED).write_text(json.dumps(data))
    report = build_report("ny-4620", folder)
    assert [s.file for s in report.failed] == [REFUSED]
    (evidence,) = [c for c in report.clauses if c.cited_as == "(a)(2)"]
    assert [s.passed for s in evidence.scenarios] == [False]


def test_a_settlement_that_differs_fails_and_one_that_matches_passes() -> None:
    data = _golden(SETTLED)
    ok = play(SCENARIOS / SETTLED, data)
    assert (ok.expects, ok.passed) == ("settlement", True) and ok.detail.startswith("spot 1 7.50")
    data["expect"] = {**data["expect"], "house_net": "-7.49"}
    bad = play(SCENARIOS / SETTLED, data)
    assert (bad.expects, bad.passed) == ("settlement", False) and "house_net" in bad.detail


def test_a_settlement_scenario_that_is_refused_fails_naming_the_refusal() -> None:
    data = _golden(REFUSED)
    data["expect"] = {"house_net": "5"}
    r = play(SCENARIOS / REFUSED, data)
    assert (r.expects, r.passed) == ("settlement", False) and r.detail.startswith("refused: ")
    assert CLAUSE_REFUSAL in r.detail


@pytest.mark.parametrize("expect", [None, {}, [], "error"])
def test_a_scenario_with_nothing_to_compare_with_fails(expect: Any) -> None:
    data = _golden(REFUSED)
    data["expect"] = expect
    r = play(SCENARIOS / REFUSED, data)
    assert (r.expects, r.passed, r.detail) == ("?", False, "no expect: nothing to compare with")
