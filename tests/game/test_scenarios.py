"""Golden scenarios (controller/conformance_scenarios/*.json): each file's ``expect`` was worked out by hand
from the rule texts.

``expect`` is either ``{"error": "substring"}`` (the scenario must be refused with a one-line message containing it)
or a subset of the runner's output: every field given is compared (dicts by the keys given, lists element by element
and of the same length). ``expect["events"]`` is an ordered subsequence of the output's events, each matched by the
fields given.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from controller.scenario import ScenarioError, expect_mismatches, run_scenario

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "controller" / "conformance_scenarios"
FILES = sorted(SCENARIOS.glob("*.json"))
TABLECTL = Path(sys.executable).with_name("tablectl")


def _load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def check(expect: dict[str, Any], result: dict[str, Any]) -> list[str]:
    """The product's own comparison (``tablectl conformance`` plays the golden files with it too)."""
    return expect_mismatches(expect, result)


def test_there_are_golden_files() -> None:
    assert len(FILES) >= 60


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_golden_file_is_well_formed(path: Path) -> None:
    data = _load(path)
    assert isinstance(data.get("description"), str) and len(data["description"]) > 20, "cite the clause"
    expect = data.get("expect")
    assert isinstance(expect, dict) and expect
    if "error" in expect:
        assert set(expect) == {"error"}
    else:
        assert "spots" in expect and "dealer" in expect, "a settlement golden file checks spots and dealer"


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_golden_scenario(path: Path) -> None:
    data = _load(path)
    expect = data["expect"]
    if "error" in expect:
        with pytest.raises(ScenarioError) as info:
            run_scenario(data)
        message = str(info.value)
        assert "\n" not in message
        assert expect["error"] in message, message
        return
    result = run_scenario(data)
    problems = check(expect, result)
    assert not problems, "\n".join(problems)
    # whatever the file checks, the settlement must add up: nets are the sum of hand payouts and insurance,
    # and the house wins what the spots lose
    total = 0
    for s in result["spots"].values():
        cents = sum(_cents(h["payout"]) for h in s["hands"])
        if s["insurance"] is not None:
            cents += _cents(s["insurance"]["payout"])
        assert _cents(s["net"]) == cents
        total += cents
    assert _cents(result["house_net"]) == -total


def _cents(text: str) -> int:
    sign = -1 if text.startswith("-") else 1
    whole, _, frac = text.lstrip("-").partition(".")
    return sign * (int(whole) * 100 + int(frac.ljust(2, "0") or 0))


def test_checker_catches_a_wrong_expectation() -> None:
    data = _load(SCENARIOS / "ny-ties-push.json")
    result = run_scenario(data)
    wrong = json.loads(json.dumps(data["expect"]))
    wrong["spots"]["1"]["hands"][0]["payout"] = "5"
    assert check(wrong, result)
    wrong = json.loads(json.dumps(data["expect"]))
    wrong["dealer"]["cards"].append("5C")
    assert check(wrong, result)
    assert check({"events": [{"type": "payout", "spot": 1}, {"type": "payout", "spot": 3}]}, result)
    assert not check({"events": [{"type": "payout", "spot": 3}, {"type": "payout", "spot": 1}]}, result)


# ---------------------------------------------------------------- through the real command line


def _tablectl(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(TABLECTL), *args], input=stdin, capture_output=True, text=True, timeout=60,
                          cwd=ROOT)


@pytest.mark.parametrize("name", ["ny-ties-house-wins", "house-shoe-surrender-no-peek-blackjack-takes-original-only"])
def test_cli_prints_the_settlement(name: str) -> None:
    path = SCENARIOS / f"{name}.json"
    proc = _tablectl("scenario", str(path))
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert not check(_load(path)["expect"], result)
    assert isinstance(result["events"], list) and result["events"]


def test_cli_no_events_and_stdin() -> None:
    text = (SCENARIOS / "ny-dealer-stands-soft-17.json").read_text()
    proc = _tablectl("scenario", "-", "--no-events", stdin=text)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert "events" not in result
    assert result["spots"]["1"]["net"] == "5"


@pytest.mark.parametrize(
    "name",
    ["ny-double-10-11-refused-on-9", "ny-bet-above-table-maximum-refused", "ny-out-of-turn-refused",
     "ny-shoe-runs-out", "malformed-bad-card", "malformed-unknown-key",
     "nj-hand-dealt-shoe-holds-three-of-a-card-refused", "ny-max-bet-override-10-refused",
     "house-h17-min-bet-4-refused",
     "malformed-amount-on-stand", "malformed-boolean-override-string", "malformed-action-after-the-round-settled",
     "ny-split-unequal-amount-refused"],
)
def test_cli_refusal_exits_2_with_one_line(name: str) -> None:
    path = SCENARIOS / f"{name}.json"
    proc = _tablectl("scenario", str(path))
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert _load(path)["expect"]["error"] in lines[0]


def test_cli_message_names_spot_action_and_rule() -> None:
    proc = _tablectl("scenario", str(SCENARIOS / "ny-double-10-11-refused-on-9.json"))
    assert proc.returncode == 2
    assert "spot 1: double refused: ny-4620 allows doubling only on 10 or 11" in proc.stderr


def test_cli_not_json_and_missing_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    proc = _tablectl("scenario", str(bad))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert "not valid JSON" in proc.stderr
    proc = _tablectl("scenario", str(tmp_path / "nope.json"))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1


# ---------------------------------------------------------------- a stacked shoe the profile's decks cannot hold


def _scenario(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"profile": "ny-4620", "bets": {"1": "5"},
                            "shoe": ["2C", "TC", "7H", "8D", "TS", "9S", "8C"],
                            "actions": [{"spot": 1, "action": "stand"}]}
    base.update(changes)
    return base


def test_a_shoe_is_held_to_the_decks_in_force_overrides_included() -> None:
    """Each card the stacked shoe gives more often than the decks in force hold is refused, wherever it is."""
    shoe = ["2C", "TC", "7H", "8D", "TS", "9S", "AS", "AS"]
    assert run_scenario(_scenario(shoe=shoe))["spots"]["1"]["net"] == "5", "four decks hold two aces of spades"
    with pytest.raises(ScenarioError, match=r"^shoe: AS is given 2 times: 1 deck \(ny-4620, decks = 1\) "
                                            r"holds 1$"):
        run_scenario(_scenario(shoe=shoe, rules={"decks": 1}))
    six = ["2C", "TC", "7H", "8D", "TS", *["QH"] * 6]
    assert run_scenario(_scenario(profile="european-6d", shoe=six, actions=[{"spot": 1, "action": "stand"}]))
    with pytest.raises(ScenarioError, match="shoe: QH is given 7 times: 6 decks"):
        run_scenario(_scenario(profile="european-6d", shoe=[*six, "QH"]))


# ---------------------------------------------------------------- input a lab may get wrong: exit 2, one line


def _bets_file(bets: str) -> bytes:
    """A scenario whose ``bets`` object is the JSON text ``bets``, written as given (duplicate names kept)."""
    rest = json.dumps(_scenario())[1:-1].replace('"bets": {"1": "5"}, ', "")
    return ("{" + f'"bets": {bets}, ' + rest + "}").encode()


BAD_INPUT = {
    "spot-arabic-indic-three": (_bets_file('{"\\u0663": "5"}'), "bets: spot '\u0663' must be a number from 1 to 7"),
    "spot-superscript-two": (_bets_file('{"\\u00b2": "5"}'), "bets: spot '\u00b2' must be a number from 1 to 7"),
    "spot-plus-three": (_bets_file('{"+3": "5"}'), "bets: spot '+3' must be a number from 1 to 7"),
    "spot-space-three": (_bets_file('{" 3": "5"}'), "bets: spot ' 3' must be a number from 1 to 7"),
    "spot-3-and-03": (_bets_file('{"3": "5", "03": "5"}'), "bets: spot 3 is given twice ('3' and '03')"),
    "spot-3-twice": (_bets_file('{"1": "5", "3": "5", "3": "10"}'), "bets: spot 3 is given twice ('3' and '3')"),
    "zero-wager": (_bets_file('{"1": "5", "3": "0"}'), "bets: spot 3: a wager of 0 is no bet"),
    "zero-wager-number": (_bets_file('{"1": 0}'), "bets: spot 1: a wager of 0 is no bet"),
    "latin-1-file": (json.dumps(_scenario(description="cr\u00eape"), ensure_ascii=False).encode("latin-1"),
                     "not UTF-8: byte 0xea"),
    "utf-16-file": (json.dumps(_scenario()).encode("utf-16"), "not UTF-8"),
    "100000-nested-lists": (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    "a-5000-digit-wager": (_bets_file('{"1": ' + "1" * 5000 + "}"), "not valid JSON: Exceeds the limit"),
    "profile-twice": (('{"profile": "house-h17", ' + json.dumps(_scenario())[1:]).encode(),
                      "key 'profile' is given twice"),
    "spot-twice-in-an-action": (json.dumps(_scenario()).replace('"spot": 1', '"spot": 1, "spot": 2').encode(),
                                "actions[0]: key 'spot' is given twice"),
    "995-nested-lists-in-an-action": (
        json.dumps(_scenario()).replace('"stand"', "[" * 995 + "]" * 995).encode(), "nested too deeply"),
}


@pytest.mark.parametrize("name", list(BAD_INPUT))
def test_cli_bad_input_exits_2_with_one_line_never_a_traceback(tmp_path: Path, name: str) -> None:
    content, message = BAD_INPUT[name]
    path = tmp_path / f"{name}.json"
    path.write_bytes(content)
    proc = _tablectl("scenario", str(path))
    assert (proc.returncode, proc.stdout) == (2, ""), proc.stderr[-500:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and len(lines[0]) < 300, proc.stderr[-500:]
    assert message in lines[0], lines[0]


def test_cli_stdin_that_is_not_utf8_exits_2() -> None:
    proc = subprocess.run([str(TABLECTL), "scenario", "-"], input=BAD_INPUT["latin-1-file"][0], capture_output=True,
                          timeout=60, cwd=ROOT)
    assert proc.returncode == 2 and proc.stdout == b""
    assert len(proc.stderr.strip().splitlines()) == 1 and b"-: not UTF-8" in proc.stderr, proc.stderr[-500:]


def test_a_spot_given_as_a_number_and_with_a_leading_zero_still_plays() -> None:
    """Plain ASCII digits are the contract; a lone "03" is spot 3, as it always was."""
    assert set(run_scenario(_scenario(bets={"03": "5"}, actions=[{"spot": 3, "action": "stand"}]))["spots"]) == {"3"}
