"""The rule text bounds every override (issue 25): one bound per option, written beside its citation in the
profile, held on every path that sets the option (the profile file, a table config's [rules], a scenario's
``rules``, the engine's limits event and so ``set_limits``); each refusal is one line naming the clause."""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

import pytest

from controller.game import events as ev
from controller.game.errors import GameError
from controller.game.rules import limits_refusal
from controller.game.table import Table
from controller.profiles import (
    PROFILE_DIR,
    Citation,
    ProfileError,
    ProfileModel,
    available_profiles,
    load_profile_model,
    load_rules,
    parse_citations,
)
from controller.scenario import ScenarioError, run_scenario
from controller.service.settings import ConfigError, load_settings

TABLE = """
table_id = "t05"
profile = "{profile}"
[devices.shoe]
port = "/dev/ttyS1"
[devices.shuffler]
port = "/dev/ttyS2"
[devices.chips]
port = "/dev/ttyS3"
[rules]
{rules}
"""


def _table_config(tmp_path: Path, profile: str, rules: str) -> Path:
    path = tmp_path / "t05.toml"
    path.write_text(TABLE.format(profile=profile, rules=rules))
    return path


def _scenario(profile: str, rules: dict[str, Any], bet: str) -> dict[str, Any]:
    return {"profile": profile, "rules": rules, "bets": {"1": bet},
            "shoe": ["2C", "TC", "7H", "8D", "TS", "9S", "8C", "5D"], "actions": [{"spot": 1, "action": "stand"}]}


def _open(rules: Any) -> Table:
    t = Table(rules)
    t.handle(ev.TableOpened(now=0.0))
    t.handle(ev.ShuffleDone(count=rules.cards_in_shoe))
    return t


# ---------------------------------------------------------------- the cases of the issue, on every path

ISSUE_CASES = [
    # profile, override (scenario JSON / TOML), bet, the clause the refusal names
    ("ny-4620", {"max_bet": "10"}, 'max_bet = "10"', "10", "NY 4620.5(f)(2) allows at most 5"),
    ("house-h17", {"min_bet": "4"}, 'min_bet = "4"', "4", "H17 house rule card: HOUSE RULES allows at least 5"),
    ("ny-4620", {"decks": 5}, "decks = 5", "5", "NY 4620.5(a)(2) allows 1 to 4"),
]


def _edited_copy(tmp_path: Path, profile: str, toml: str) -> Path:
    """A copy of ``profile``'s file with the line of ``toml``'s key replaced by ``toml`` (its comment, the clause
    and bound, kept)."""
    key = toml.partition(" =")[0]
    lines = []
    for line in (PROFILE_DIR / f"{profile}.toml").read_text().splitlines():
        if line.startswith(f"{key} "):
            line = toml + " " + line[line.index("#"):]
        lines.append(line)
    copy = tmp_path / "copy.toml"
    copy.write_text("\n".join(lines) + "\n")
    return copy


@pytest.mark.parametrize(("profile", "override", "toml", "bet", "clause"), ISSUE_CASES)
def test_a_scenario_override_outside_the_clause_is_refused(profile: str, override: dict[str, Any], toml: str,
                                                           bet: str, clause: str) -> None:
    """New York with max_bet 10 took a $10 bet; the H17 card's $5 minimum took a $4 bet; NY took five decks."""
    with pytest.raises(ScenarioError) as info:
        run_scenario(_scenario(profile, override, bet))
    assert clause in str(info.value) and "\n" not in str(info.value), str(info.value)


@pytest.mark.parametrize(("profile", "override", "toml", "bet", "clause"), ISSUE_CASES)
def test_a_table_config_override_outside_the_clause_is_refused(tmp_path: Path, profile: str,
                                                               override: dict[str, Any], toml: str, bet: str,
                                                               clause: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(_table_config(tmp_path, profile, toml))
    assert clause in str(info.value), str(info.value)


@pytest.mark.parametrize(("profile", "override", "toml", "bet", "clause"), ISSUE_CASES)
def test_a_profile_file_outside_its_own_clause_is_refused(tmp_path: Path, profile: str,
                                                          override: dict[str, Any], toml: str, bet: str,
                                                          clause: str) -> None:
    """A copy of the profile under a path, edited outside what its own citation allows."""
    with pytest.raises(ProfileError) as info:
        load_rules(str(_edited_copy(tmp_path, profile, toml)))
    assert clause in str(info.value), str(info.value)


@pytest.mark.parametrize(("profile", "low", "high", "clause"), [
    ("ny-4620", 100, 1000, "NY 4620.5(f)(2)"), ("house-h17", 400, 50000, "Min bet: $5"),
    ("house-h17", 500, 40000, "Max bet: $500")])
def test_the_engines_limits_event_is_held_to_the_clause(profile: str, low: int, high: int, clause: str) -> None:
    """The engine's own limits event (a journal replay, a command) refuses what set_limits refuses: one check."""
    rules = load_rules(profile)
    table = _open(rules)
    with pytest.raises(GameError) as info:
        table.handle(ev.LimitsSet(min_bet=low, max_bet=high))
    assert clause in str(info.value), str(info.value)
    assert (table.min_bet, table.max_bet) == (rules.min_bet, rules.max_bet), "the table keeps its limits"
    why = limits_refusal(rules, low, high)
    assert why is not None and why in str(info.value), "set_limits refuses with the same text"


def test_limits_inside_the_clause_are_taken() -> None:
    table = _open(load_rules("ny-4620"))
    table.handle(ev.LimitsSet(min_bet=200, max_bet=500))
    assert (table.min_bet, table.max_bet) == (200, 500)
    h17 = _open(load_rules("house-h17"))
    h17.handle(ev.LimitsSet(min_bet=2500, max_bet=100000))
    assert (h17.min_bet, h17.max_bet) == (2500, 100000), "the card's limits 'may be increased'"


# ---------------------------------------------------------------- issue 36: the shoe card's ties and split limits

SHOE = "house-shoe-surrender"
#: override (scenario JSON), the same as a table config's TOML line, what the refusal names
SHOE_CASES = [
    ({"ties": "house_wins"}, 'ties = "house_wins"',
     "ties = house_wins refused: Shoe game house rule card: BLACKJACK—THE BASICS allows one of push, "
     "push_naturals_only"),
    ({"max_hands": 4}, "max_hands = 4",
     "max_hands = 4 refused: Shoe game house rule card: SPLITTING PAIRS allows at most 3 hands at 7 spots"),
    ({"max_hands": 0}, "max_hands = 0",
     "max_hands = 0 refused: Shoe game house rule card: SPLITTING PAIRS allows at most 3 hands at 7 spots"),
    ({"max_hands_by_spots": {"7": 5}}, 'max_hands_by_spots = { "7" = 5 }',
     "max_hands_by_spots = {7 = 5} refused: Shoe game house rule card: SPLITTING PAIRS allows at most 3 hands at 7 "
     "spots"),
]
SHOE_IDS = ["ties-house-wins", "max-hands-4", "max-hands-0-unlimited", "by-spots-7-5"]


@pytest.mark.parametrize(("override", "toml", "message"), SHOE_CASES, ids=SHOE_IDS)
def test_the_shoe_cards_ties_and_splits_refused_in_a_scenario(override: dict[str, Any], toml: str,
                                                             message: str) -> None:
    """Was played: a player's natural against the dealer's lost 10 under ties = house_wins; four hands dealt."""
    with pytest.raises(ScenarioError) as info:
        run_scenario(_scenario(SHOE, override, "10"))
    assert message in str(info.value) and "\n" not in str(info.value), str(info.value)


@pytest.mark.parametrize(("override", "toml", "message"), SHOE_CASES, ids=SHOE_IDS)
def test_the_shoe_cards_ties_and_splits_refused_in_a_table_config(tmp_path: Path, override: dict[str, Any],
                                                                  toml: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(_table_config(tmp_path, SHOE, toml))
    assert message in str(info.value), str(info.value)


@pytest.mark.parametrize(("override", "toml", "message"), SHOE_CASES, ids=SHOE_IDS)
def test_the_shoe_cards_ties_and_splits_refused_in_a_copy_of_the_profile(tmp_path: Path, override: dict[str, Any],
                                                                         toml: str, message: str) -> None:
    """A lab's copy of the card's profile, edited against its own clause (the bound stays in the comment)."""
    with pytest.raises(ProfileError) as info:
        load_rules(str(_edited_copy(tmp_path, SHOE, toml)))
    assert message.partition(" refused: ")[2] in str(info.value), str(info.value)


@pytest.mark.parametrize("override", [o for o, _, _ in SHOE_CASES], ids=SHOE_IDS)
def test_set_limits_cannot_carry_a_rule_option(override: dict[str, Any]) -> None:
    """``set_limits`` sets the limits only: a payload that names another option is refused, not half-applied."""
    import json

    from controller.contract.results import CommandResult
    from controller.service.commands import parse_command

    result = parse_command("set_limits", json.dumps({"min_bet": "10", "max_bet": "1000", **override}),
                           user="pit.boss")
    assert isinstance(result, CommandResult) and not result.ok
    assert f"{next(iter(override))}: unknown field" in str(result.error), result


@pytest.mark.parametrize(("override", "spots"), [
    ({"max_hands": 2}, 7), ({"max_hands": 3}, 7), ({"max_hands": 4, "spots": 6}, 6),
    ({"spots": 6}, 6), ({"ties": "push_naturals_only"}, 7), ({"max_hands_by_spots": {"7": 2, "6": 4}}, 7)])
def test_what_the_shoe_card_allows_is_taken(override: dict[str, Any], spots: int) -> None:
    """Inside the card: fewer hands (the golden 'max-hands-override-wins'), four hands at a six-spot table, the
    natural's push kept while the house takes other ties (the card says nothing of them)."""
    rules = load_rules(SHOE, override)
    assert rules.spots == spots
    assert rules.effective_max_hands == override.get("max_hands", min(
        override.get("max_hands_by_spots", {"7": 3, "6": 4}).get(str(spots), 3), 4 if spots == 6 else 3))


# ---------------------------------------------------------------- every shipped profile's bounded options


def _bounded() -> list[tuple[str, Citation]]:
    out = []
    for name in available_profiles():
        text = (PROFILE_DIR / f"{name}.toml").read_text()
        prefix = load_profile_model(name).clause_prefix
        out.extend((name, c) for c in parse_citations(text, prefix).values() if c.bound is not None)
    return out


BOUNDED = _bounded()


def _other_value(model: ProfileModel, option: str) -> Any:
    """A value of the option's type other than the profile's (for a fixed option)."""
    value = getattr(model, option)
    hint = typing.get_type_hints(ProfileModel)[option]
    if isinstance(value, bool):
        return not value
    if typing.get_origin(hint) is typing.Literal:
        return next(v for v in typing.get_args(hint) if v != value)
    if option == "peek_on":
        return ["A"] if value != ["A"] else ["T"]
    if isinstance(value, int):
        return value + 1 if value < 4 else value - 1
    raise AssertionError(f"no other value for {option} = {value!r}")


def _outside(option: str, low: float | None, high: float | None) -> Any:
    money = option in ("min_bet", "max_bet")
    value = (high + (100 if money else 1)) if high is not None else (low - (100 if money else 1))  # type: ignore[operator]
    return f"{int(value) // 100}.{int(value) % 100:02d}" if money else int(value)


def test_every_shipped_profile_bounds_something() -> None:
    assert {name for name, _ in BOUNDED} >= {"ny-4620", "house-h17", "european-6d", "nj-hand-dealt",
                                             "house-shoe-surrender", "nj-shoe"}


@pytest.mark.parametrize(("profile", "cited"), BOUNDED, ids=[f"{p}-{c.option}" for p, c in BOUNDED])
def test_each_bounded_option_of_each_shipped_profile_refuses_an_override_outside_its_clause(
        tmp_path: Path, profile: str, cited: Citation) -> None:
    """For each option a shipped profile's clause fixes or bounds: an override outside it is refused, naming the
    clause, by the scenario runner and by a table config alike; the profile's own value is taken."""
    model = load_profile_model(profile)
    assert cited.bound is not None and cited.clause is not None
    if cited.bound.fixed:
        bad = _other_value(model, cited.option)
    elif cited.bound.choices:
        hint = typing.get_type_hints(ProfileModel)[cited.option]
        bad = next(v for v in typing.get_args(hint) if v not in cited.bound.choices)
    elif cited.bound.by_spots:
        most = cited.bound.most_at(model.spots)
        assert most is not None
        bad = {str(model.spots): most + 1} if cited.option.endswith("_by_spots") else most + 1
    else:
        bad = _outside(cited.option, cited.bound.low, cited.bound.high)
    with pytest.raises(ProfileError) as info:
        load_rules(profile, {cited.option: bad})
    message = str(info.value)
    assert cited.clause in message and f"{cited.option} = " in message and "\n" not in message, message
    with pytest.raises(ScenarioError, match=r"refused: " + cited.clause.replace("(", r"\(").replace(")", r"\)")):
        run_scenario(_scenario(profile, {cited.option: bad}, str(model.min_bet // 100)))
    own = getattr(model, cited.option)
    assert load_rules(profile, {cited.option: own if cited.option not in ("min_bet", "max_bet")
                                else f"{own // 100}.{own % 100:02d}"}), "the profile's own value is no override"


# ---------------------------------------------------------------- booleans are booleans, counts are numbers


@pytest.mark.parametrize("value", ["no", "yes", "on", "false", 1, 0])
def test_a_boolean_override_is_a_json_boolean(value: Any) -> None:
    """``"dealer_hits_soft_17": "no"`` was taken as false, "yes"/"on"/1 as true."""
    with pytest.raises(ScenarioError, match=r"dealer_hits_soft_17: .* is not a boolean \(write true or false\)"):
        run_scenario(_scenario("nj-shoe", {"dealer_hits_soft_17": value}, "10"))


@pytest.mark.parametrize(("option", "value"), [("burn", True), ("decks", False), ("spots", "6"), ("max_hands", 2.0)])
def test_a_count_override_is_a_whole_number(option: str, value: Any) -> None:
    """``"burn": true`` was taken as 1."""
    with pytest.raises(ScenarioError, match=rf"{option}: .* is not a whole number"):
        run_scenario(_scenario("nj-shoe", {option: value}, "10"))


def test_a_boolean_in_a_table_config_is_a_toml_boolean(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="dealer_hits_soft_17: 'no' is not a boolean"):
        load_settings(_table_config(tmp_path, "nj-shoe", 'dealer_hits_soft_17 = "no"'))
    assert load_settings(_table_config(tmp_path, "nj-shoe", "dealer_hits_soft_17 = true")).load_rules(
    ).dealer_hits_soft_17 is True


def test_a_table_configs_environment_override_is_read_as_its_toml_value(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """``TABLECTL_RULES__DECKS=2`` is the number 2 (as ``decks = 2`` in [rules]), ``true`` a boolean; a bound or a
    type the environment breaks is refused like the file's."""
    path = _table_config(tmp_path, "nj-shoe", 'min_bet = "25"')
    monkeypatch.setenv("TABLECTL_RULES__DECKS", "2")
    monkeypatch.setenv("TABLECTL_RULES__DEALER_HITS_SOFT_17", "true")
    monkeypatch.setenv("TABLECTL_RULES__TIES", "push")
    monkeypatch.setenv("TABLECTL_RULES__MAX_BET", "2500.50")
    rules = load_settings(path).load_rules()
    assert (rules.decks, rules.dealer_hits_soft_17, rules.ties, rules.min_bet, rules.max_bet) == (
        2, True, "push", 2500, 250050)
    monkeypatch.setenv("TABLECTL_RULES__DEALER_HITS_SOFT_17", "no")
    with pytest.raises(ConfigError, match="dealer_hits_soft_17: 'no' is not a boolean"):
        load_settings(path)
    monkeypatch.delenv("TABLECTL_RULES__DEALER_HITS_SOFT_17")
    monkeypatch.setenv("TABLECTL_RULES__DECK_CHANGE_HOURS", "25")
    with pytest.raises(ConfigError, match=r"deck_change_hours = 25 refused: N\.J\.A\.C\. 19:46-1\.18\(g\) allows"):
        load_settings(path)


@pytest.mark.parametrize("bound", ["[1 to]", "[at most5]", "[1 - 4]", "[fixd]", "[4 to 1]"])
def test_a_bound_that_does_not_read_is_refused_not_ignored(tmp_path: Path, bound: str) -> None:
    """A typo would silently drop the bound and let any override through: the profile is refused instead."""
    lab = tmp_path / "lab.toml"
    lab.write_text(f"decks = 4  # 3(a): one to four decks {bound}\n")
    with pytest.raises(ProfileError, match=r"decks: bound \[.*\] is (not 'fixed'|empty)"):
        load_rules(str(lab))
