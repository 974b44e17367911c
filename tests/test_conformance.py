"""``tablectl conformance`` (DESIGN "Conformance evidence", issue 25): for every shipped profile, every clause it
cites is exercised by a golden scenario and every scenario gives what its hand-worked ``expect`` says. The
command's exits, its JSON and its refusals are checked on real files through the real command line."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from controller.conformance import build_report, default_scenarios_dir, report_to_json
from controller.profiles import PROFILE_DIR, available_profiles, load_profile_model
from controller.scenario import ScenarioError, run_scenario

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "controller" / "conformance_scenarios"
TABLECTL = [sys.executable, "-m", "controller.cli"]


def _tablectl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TABLECTL, *args], capture_output=True, text=True, timeout=120, cwd=ROOT)


@pytest.mark.parametrize("profile", available_profiles())
def test_every_clause_of_every_shipped_profile_is_exercised_and_every_scenario_passes(profile: str) -> None:
    """The CI gate of the issue: no uncovered clause, no failing scenario, for each shipped profile."""
    report = build_report(profile)
    assert report.clauses, "the profile cites clauses"
    assert not report.uncovered, f"{profile}: clauses no golden scenario names in 'clauses': {report.uncovered}"
    assert not report.failed, "; ".join(f"{s.file}: {s.detail}" for s in report.failed)
    cited = {c.clause for c in load_profile_model(profile).cited().values() if c.clause is not None}
    assert {c.clause for c in report.clauses} == cited, "every clause the profile's comments cite is reported"


def test_the_report_holds_the_values_in_force_and_the_bounds() -> None:
    data = report_to_json(build_report("ny-4620"))
    by_clause = {c["clause"]: c for c in data["clauses"]}
    decks = by_clause["NY 4620.5(a)(2)"]
    assert decks["options"] == [{"option": "decks", "value": "4", "bound": "1 to 4",
                                 "citation": "(a)(2): one to four decks shuffled together"}]
    assert "ny-five-decks-refused.json" in decks["scenarios"] and decks["passed"]
    assert by_clause["NY 4620.5(f)(2)"]["options"][0]["bound"] == "at most 5"
    assert by_clause["NY 4620.5(l)(1)"]["options"][0] == {"option": "double_on", "value": "10-11", "bound": "fixed",
                                                        "citation": "(l)(1): first two cards total 10 or 11"}
    assert {o["option"] for o in data["house_choice"]} >= {"min_bet", "penetration"}
    played = {s["file"]: s for s in data["scenarios"]}
    assert played["ny-natural-pays-3-2-on-five.json"]["detail"].startswith("spot 1 7.50")
    assert data["summary"]["failed"] == 0 and data["uncovered"] == []


def test_cli_prints_json_and_exits_0() -> None:
    done = _tablectl("conformance", "house-h17", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["profile"] == "house-h17" and data["summary"]["covered"] == data["summary"]["clauses"] > 0
    text = _tablectl("conformance", "house-h17")
    assert text.returncode == 0 and "H17 house rule card: HOUSE RULES  [ok]" in text.stdout, text.stdout


def _copy(tmp_path: Path) -> Path:
    target = tmp_path / "scenarios"
    shutil.copytree(SCENARIOS, target)
    return target


def test_a_failing_scenario_exits_1_naming_it(tmp_path: Path) -> None:
    """A lab's copy of the golden files where one expectation is wrong: the report shows it, exit 1."""
    folder = _copy(tmp_path)
    path = folder / "ny-natural-pays-3-2-on-five.json"
    data = json.loads(path.read_text())
    data["expect"]["spots"]["1"]["hands"][0]["payout"] = "10"  # 2:1, not what (h)(2) option one pays
    path.write_text(json.dumps(data))
    done = _tablectl("conformance", "ny-4620", "--json", "--scenarios", str(folder))
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert report["failed"] == ["ny-natural-pays-3-2-on-five.json"]
    clause = next(c for c in report["clauses"] if c["clause"] == "NY 4620.5(h)(2)")
    assert clause["passed"] is False
    assert "ny-natural-pays-3-2-on-five.json" in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_a_refusal_scenario_that_plays_fails(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    path = folder / "ny-five-decks-refused.json"
    data = json.loads(path.read_text())
    data["rules"] = {"decks": 4}  # inside (a)(2): the round plays, so the expected refusal does not come
    path.write_text(json.dumps(data))
    report = build_report("ny-4620", folder)
    assert [s.file for s in report.failed] == ["ny-five-decks-refused.json"]
    assert "played where a refusal was expected" in report.failed[0].detail


def test_a_clause_no_scenario_names_is_listed_uncovered(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    for path in folder.glob("*.json"):
        data = json.loads(path.read_text())
        if data.get("profile") == "ny-4620" and "(g)" in data.get("clauses", []):
            data["clauses"].remove("(g)")
            path.write_text(json.dumps(data))
    report = build_report("ny-4620", folder)
    assert report.uncovered == ["NY 4620.5(g)"]
    done = _tablectl("conformance", "ny-4620", "--scenarios", str(folder))
    assert done.returncode == 0 and "uncovered: NY 4620.5(g)" in done.stdout, "exit 1 is for a failing scenario"


def test_a_lab_profile_by_path_and_its_scenarios(tmp_path: Path) -> None:
    """A lab's own profile file (a path) with its clause and bound, and a scenario that names the profile by path."""
    profile = tmp_path / "lab.toml"
    profile.write_text('name = "lab"\nclause_prefix = "Lab rule "\nmin_bet = "5"  # house choice\n'
                       'decks = 2  # 3(a): two decks [fixed]\n')
    folder = tmp_path / "scenarios"
    folder.mkdir()
    (folder / "lab-decks.json").write_text(json.dumps({
        "description": "Lab rule 3(a): two decks; a table of six is refused", "clauses": ["3(a)"],
        "profile": str(profile), "rules": {"decks": 6}, "bets": {"1": "5"},
        "shoe": ["2C", "TC", "7H", "8D", "TS"], "actions": [{"spot": 1, "action": "stand"}],
        "expect": {"error": "decks = 6 refused: Lab rule 3(a) fixes it at 2"}}))
    report = build_report(str(profile), folder)
    evidence = [(c.clause, [s.file for s in c.scenarios]) for c in report.clauses]
    assert evidence == [("Lab rule 3(a)", ["lab-decks.json"])]
    assert not report.failed


@pytest.mark.parametrize(("args", "message"), [
    (["conformance", "atlantis"], "unknown profile 'atlantis'"),
    (["conformance", "/nope/lab.toml"], "no such profile file"),
    (["conformance", "ny-4620", "--scenarios", "/nope"], "/nope: no such folder of golden scenarios"),
    (["conformance", "ny-4620", "--html", "/nope/x/evidence.html"], "cannot write"),
])
def test_bad_input_exits_2_with_one_line(args: list[str], message: str) -> None:
    done = _tablectl(*args)
    assert done.returncode == 2 and done.stdout == "", done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], done.stderr


def test_a_profile_outside_its_own_clause_exits_2(tmp_path: Path) -> None:
    copy = tmp_path / "ny.toml"
    copy.write_text((PROFILE_DIR / "ny-4620.toml").read_text().replace("decks = 4 ", "decks = 6 "))
    done = _tablectl("conformance", str(copy))
    assert done.returncode == 2 and "decks = 6 refused: NY 4620.5(a)(2) allows 1 to 4" in done.stderr, done.stderr


def test_a_scenarios_clauses_must_be_a_list_of_names() -> None:
    data = json.loads((SCENARIOS / "ny-ties-push.json").read_text())
    data["clauses"] = "(h)"
    with pytest.raises(ScenarioError, match="clauses: a list of the clauses"):
        run_scenario(data)


def test_the_default_scenarios_are_the_checkouts_golden_files() -> None:
    assert default_scenarios_dir() == SCENARIOS


def test_a_broken_scenario_file_or_clauses_of_the_wrong_shape_fail_the_evidence(tmp_path: Path) -> None:
    """Evidence that cannot be read is not silently left out: exit 1, naming the file."""
    folder = _copy(tmp_path)
    (folder / "zz-broken.json").write_text("{not json")
    path = folder / "ny-ties-push.json"
    data = json.loads(path.read_text())
    data["clauses"] = "(h)"
    path.write_text(json.dumps(data))
    report = build_report("ny-4620", folder)
    failed = {s.file: s.detail for s in report.failed}
    assert set(failed) == {"zz-broken.json", "ny-ties-push.json"}, failed
    assert "not valid JSON" in failed["zz-broken.json"] and "clauses: a list" in failed["ny-ties-push.json"]
    done = _tablectl("conformance", "ny-4620", "--scenarios", str(folder))
    assert done.returncode == 1 and "zz-broken.json" in done.stderr


def test_a_golden_file_names_only_clauses_its_profile_cites_or_a_known_procedure_clause() -> None:
    """A misspelt clause would count for nothing: only NY 4620.5(k)(2) (a split's equal amount, a rule of the
    procedure that no option carries) is named without an option citing it."""
    unmatched = {s.file for profile in available_profiles() for s in build_report(profile).unmatched}
    assert unmatched == {"ny-split-equal-amount-plays.json", "ny-split-unequal-amount-refused.json"}
