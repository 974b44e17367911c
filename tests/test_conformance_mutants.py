"""The conformance pack's verdict on one golden scenario, at the edges a plausible wrong change would pass unseen
(issue 39): a refusal worded otherwise than the scenario expects fails, as does a settlement that differs or a
file with nothing to compare with. Pure: :func:`controller.conformance.play` on the shipped golden files' data."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from controller.conformance import build_report, default_scenarios_dir, dumps, play, report_to_json, report_to_text
from controller.scenario import ScenarioError, run_scenario

SCENARIOS = default_scenarios_dir()
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


def test_the_text_report_marks_each_clause_and_sums_up() -> None:
    text = report_to_text(build_report("ny-4620"))
    lines = text.splitlines()
    assert lines[0] == "ny-4620: New York 9 NYCRR 4620.5, tie option one (config/profiles/ny-4620.toml)"
    block = text[text.index("NY 4620.5(a)(2)  [ok]"):].split("\n\n")[0].splitlines()
    assert block[:2] == ["NY 4620.5(a)(2)  [ok]", "  decks = 4  (a table: 1 to 4)"]
    assert block[2].startswith(f"  pass  {REFUSED}: ") and CLAUSE_REFUSAL in block[2]
    assert "  ties = push" in lines, "a clause that sets no bound on a table shows none"
    assert "house choice (no clause sets them): min_bet = 1, penetration = 0.75, deck_change_hours = 24" in lines
    assert lines[-1] == "16 clauses, 16 covered by scenarios; 31 scenarios played, 0 failed"


def test_the_text_report_names_what_is_uncovered_and_what_failed(tmp_path: Path) -> None:
    folder = tmp_path / "scenarios"
    folder.mkdir()
    data = _golden(REFUSED)
    data["expect"] = {"error": "something else"}
    (folder / REFUSED).write_text(json.dumps(data))
    report = build_report("ny-4620", folder)
    text = report_to_text(report)
    assert "NY 4620.5(a)(2)  [FAIL]" in text and f"  FAIL  {REFUSED}: refused otherwise: " in text
    assert "NY 4620.5(g)  [uncovered]" in text
    assert "16 clauses, 1 covered by scenarios; 1 scenarios played, 1 failed" in text
    uncovered = next(line for line in text.splitlines() if line.startswith("uncovered: "))
    assert "NY 4620.5(g)" in uncovered and "NY 4620.5(a)(2)" not in uncovered
    assert text.splitlines()[-1].startswith(f"failed: {REFUSED}: refused otherwise: ")
    data = report_to_json(report)
    assert data["summary"] == {"clauses": 16, "covered": 1, "scenarios": 1, "failed": 1}
    assert data["failed"] == [REFUSED] and "NY 4620.5(g)" in data["uncovered"]
    (clause,) = [c for c in data["clauses"] if c["cited_as"] == "(a)(2)"]
    assert clause["passed"] is False and clause["scenarios"] == [REFUSED]
    assert all(c["passed"] is False for c in data["clauses"] if not c["scenarios"]), "uncovered is not passed"
    (played,) = data["scenarios"]
    assert (played["file"], played["expects"], played["passed"], played["clauses"]) == (REFUSED, "refusal", False,
                                                                                        ["(a)(2)"])
    assert played["description"].startswith("NY 4620.5(a)(2)")


def test_each_verdict_names_the_file_its_description_and_clauses() -> None:
    """Every branch of :func:`play` gives the whole result: file, description, clauses, what it expects, verdict."""
    refused = _golden(REFUSED)
    who = (REFUSED, refused["description"], ("(a)(2)",))
    cases: list[tuple[dict[str, Any], str, bool]] = [
        ({}, "refusal", True),
        ({"expect": {"error": "otherwise"}}, "refusal", False),
        ({"rules": {"decks": 4}}, "refusal", False),  # plays: the refusal expected does not come
        ({"expect": {"house_net": "5"}}, "settlement", False),  # refused where a settlement is expected
        ({"expect": None}, "?", False),
    ]
    for change, expects, passed in cases:
        r = play(SCENARIOS / REFUSED, {**refused, **change})
        assert (r.file, r.description, r.clauses, r.expects, r.passed) == (*who, expects, passed), change
        assert r.detail.startswith(("decks = 5", "refused", "played where", "no expect")) or CLAUSE_REFUSAL in r.detail
    settled = _golden(SETTLED)
    r = play(SCENARIOS / SETTLED, {**settled, "expect": {**settled["expect"], "house_net": "1"}})
    assert (r.file, r.description, r.clauses, r.expects, r.passed) == (SETTLED, settled["description"],
                                                                       tuple(settled["clauses"]), "settlement", False)
    r = play(SCENARIOS / SETTLED, settled)
    assert (r.description, r.clauses, r.expects, r.passed) == (settled["description"], tuple(settled["clauses"]),
                                                              "settlement", True)


@pytest.mark.parametrize("data", [[1, 2], "x", None])
def test_a_scenario_that_is_not_an_object_fails_with_nothing_to_compare(data: Any) -> None:
    r = play(Path("odd.json"), data)
    assert (r.file, r.description, r.clauses, r.expects, r.passed, r.detail) == (
        "odd.json", "", (), "?", False, "no expect: nothing to compare with")


def test_a_scenario_without_clauses_or_description_has_none() -> None:
    data = {k: v for k, v in _golden(REFUSED).items() if k not in ("clauses", "description")}
    r = play(SCENARIOS / REFUSED, data)
    assert (r.description, r.clauses, r.passed) == ("", (), True)


# ---------------------------------------------------------------- which files of a folder are the profile's evidence

PROFILE_FILE = Path(__file__).resolve().parents[1] / "config" / "profiles" / "ny-4620.toml"


def _folder(tmp_path: Path) -> Path:
    """A folder mixing the profile's scenarios (by name, by absolute and relative path) with everything else a
    lab's folder may hold: another profile's, one naming no profile or an unknown one, unreadable files."""
    folder = tmp_path / "scenarios"
    folder.mkdir()
    refused = _golden(REFUSED)

    def put(name: str, data: Any) -> None:
        (folder / name).write_text(json.dumps(data), encoding="utf-8")

    put("a-by-name.json", refused)
    put("b-by-path.json", {**refused, "profile": str(PROFILE_FILE)})
    put("c-by-relative-path.json", {**refused, "profile": "config/profiles/ny-4620.toml"})
    put("d-other-profile.json", {**refused, "profile": "nj-shoe"})
    put("e-unknown-profile.json", {**refused, "profile": "no-such-profile"})
    put("f-no-profile.json", {k: v for k, v in refused.items() if k != "profile"})
    put("g-profile-not-a-name.json", {**refused, "profile": 4620})
    put("h-a-list.json", [refused])
    put("i-no-clauses.json", {k: v for k, v in refused.items() if k != "clauses"})
    put("j-empty-clauses.json", {**refused, "clauses": []})
    put("k-other-clause.json", {**refused, "clauses": ["(z)(9)"]})
    put("l-not-json.txt", "not a scenario: not *.json")
    (folder / "m-broken.json").write_text("{not json", encoding="utf-8")
    (folder / "n-latin1.json").write_bytes(b'{"profile": "caf\xe9"}')
    (folder / "0-a-folder.json").mkdir()  # first: the files after it are still read
    return folder


def test_the_evidence_is_the_profiles_scenarios_by_name_or_path_and_every_file_that_cannot_be_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(PROFILE_FILE.parents[2])  # where "config/profiles/ny-4620.toml" names the profile
    report = build_report("ny-4620", _folder(tmp_path))
    (evidence,) = [c for c in report.clauses if c.cited_as == "(a)(2)"]
    assert [(s.file, s.passed) for s in evidence.scenarios] == [
        ("a-by-name.json", True), ("b-by-path.json", True), ("c-by-relative-path.json", True)]
    assert [c.clause for c in report.clauses if c.scenarios and c is not evidence] == []
    unmatched = [(s.file, s.description, s.clauses, s.expects, s.passed) for s in report.unmatched]
    assert unmatched == [
        ("0-a-folder.json", "", (), "?", False), ("m-broken.json", "", (), "?", False),
        ("n-latin1.json", "", (), "?", False),
        ("k-other-clause.json", _golden(REFUSED)["description"], ("(z)(9)",), "refusal", True),
    ]
    details = {s.file: s.detail for s in report.unmatched}
    assert details["m-broken.json"].startswith("not valid JSON: ")
    assert details["n-latin1.json"] == "not UTF-8: byte 0xe9 at offset 16 (a scenario is UTF-8 JSON)"
    assert details["0-a-folder.json"] == "cannot read: Is a directory"
    assert [s.file for s in report.scenarios] == ["0-a-folder.json", "a-by-name.json", "b-by-path.json",
                                                  "c-by-relative-path.json", "k-other-clause.json", "m-broken.json",
                                                  "n-latin1.json"]
    assert [s.file for s in report.failed] == ["0-a-folder.json", "m-broken.json", "n-latin1.json"]


def test_another_profiles_folder_gives_this_profile_no_evidence(tmp_path: Path) -> None:
    folder = tmp_path / "scenarios"
    folder.mkdir()
    (folder / "nj.json").write_text(json.dumps({**_golden(REFUSED), "profile": "nj-shoe"}), encoding="utf-8")
    report = build_report("ny-4620", folder)
    assert (report.scenarios, report.unmatched, len(report.uncovered)) == ([], [], len(report.clauses))


def test_the_json_report_in_full(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every field of ``tablectl conformance --json`` on a small folder: one clause passed, one failed, the rest
    uncovered, a file that is no scenario; paths shown relative to the working directory when inside it."""
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "scenarios"
    folder.mkdir()
    refused, settled = _golden(REFUSED), _golden(SETTLED)
    (folder / REFUSED).write_text(json.dumps(refused), encoding="utf-8")
    (folder / SETTLED).write_text(json.dumps({**settled, "expect": {**settled["expect"], "house_net": "1"}}),
                                  encoding="utf-8")
    (folder / "zz.json").write_text("[", encoding="utf-8")
    data = report_to_json(build_report("ny-4620", Path("scenarios")))
    assert (data["profile"], data["description"]) == ("ny-4620", "New York 9 NYCRR 4620.5, tie option one")
    assert data["path"] == str(PROFILE_FILE)  # outside the working directory: as it is
    assert data["scenarios_dir"] == "scenarios"  # inside it: relative
    (a2,) = [c for c in data["clauses"] if c["cited_as"] == "(a)(2)"]
    assert a2 == {"clause": "NY 4620.5(a)(2)", "cited_as": "(a)(2)", "scenarios": [REFUSED], "passed": True,
                  "options": [{"option": "decks", "value": "4", "bound": "1 to 4",
                               "citation": "(a)(2): one to four decks shuffled together"}]}
    (h,) = [c for c in data["clauses"] if c["cited_as"] == "(h)"]
    assert h["options"] == [{"option": "ties", "value": "push", "bound": None,
                             "citation": "(h): option one, all ties are pushes"}]
    h2 = next(c for c in data["clauses"] if c["cited_as"] == "(h)(2)")
    assert (h2["scenarios"], h2["passed"]) == ([SETTLED], False)
    assert data["house_choice"] == [
        {"option": "min_bet", "value": "1", "bound": None, "citation": "house choice: 4620.5 sets no minimum"},
        {"option": "penetration", "value": "0.75", "bound": None, "citation": "not set by 4620.5: house choice"},
        {"option": "deck_change_hours", "value": "24", "bound": None, "citation": "not set by 4620.5: house choice"},
    ]
    assert [s["file"] for s in data["scenarios"]] == [REFUSED, SETTLED, "zz.json"]
    zz = data["scenarios"][2]
    assert zz == {"file": "zz.json", "expects": "?", "passed": False, "detail": zz["detail"], "clauses": [],
                  "description": ""} and zz["detail"].startswith("not valid JSON")
    assert data["unmatched"] == ["zz.json"] and data["failed"] == [SETTLED, "zz.json"]
    covered = [c["clause"] for c in data["clauses"] if c["scenarios"]]
    assert data["uncovered"] == [c["clause"] for c in data["clauses"] if c["clause"] not in covered]
    assert data["summary"] == {"clauses": 16, "covered": len(covered), "scenarios": 3, "failed": 2}
    assert all(c["passed"] is False for c in data["clauses"] if c["clause"] in data["uncovered"])


# ---------------------------------------------------------------- the verdicts' details, word for word


def test_a_passed_refusal_shows_the_refusal_itself() -> None:
    data = _golden(REFUSED)
    with pytest.raises(ScenarioError) as refusal:
        run_scenario(data)
    assert play(SCENARIOS / REFUSED, data).detail == str(refusal.value)


def test_a_settlement_that_differs_shows_its_first_three_differences() -> None:
    data = _golden(SETTLED)
    data["expect"] = {"a": 1, "b": 2, "c": 3, "d": 4}
    r = play(SCENARIOS / SETTLED, data)
    assert (r.passed, r.detail) == (False, "a: missing from the output; b: missing from the output; "
                                           "c: missing from the output")


def test_a_passed_settlement_shows_each_spots_net_and_the_dealers_total() -> None:
    name = "ny-ties-push.json"
    assert play(SCENARIOS / name, _golden(name)).detail == "spot 1 0, spot 3 -4; dealer 20"


def test_the_text_report_lists_the_uncovered_clauses_separated(tmp_path: Path) -> None:
    folder = tmp_path / "scenarios"
    folder.mkdir()
    report = build_report("ny-4620", folder)
    line = next(x for x in report_to_text(report).splitlines() if x.startswith("uncovered: "))
    assert line == "uncovered: " + "; ".join(c.clause for c in report.clauses)
    assert line.startswith("uncovered: NY 4620.5(a)(1); NY 4620.5(a)(2); ")


def test_the_json_the_command_prints_is_the_report_one_key_a_line() -> None:
    report = build_report("ny-4620")
    text = dumps(report)
    assert json.loads(text) == report_to_json(report)
    assert text.splitlines()[:2] == ["{", ' "profile": "ny-4620",']  # indented by one
