"""Profiles: every shipped one loads; bad ones fail naming the file, the key and the reason."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from controller.profiles import (
    PROFILE_DIR,
    ProfileError,
    available_profiles,
    load_profile_model,
    load_rules,
    option_citations,
)

DESIGN_PROFILES = {"ny-4620", "nj-shoe", "nj-hand-dealt", "european-6d", "house-h17", "house-shoe-surrender"}


def test_every_profile_design_names_ships() -> None:
    assert set(available_profiles()) >= DESIGN_PROFILES


#: how each shipped profile's rule text (shared/rules) names its clauses: NY and NJ number them; the European
#: text and the two house cards have headed sections only, cited by heading (or by a quoted passage)
CLAUSES: dict[str, str] = {
    "ny-4620": r"\([a-m]\)",  # 4620.5(h)(2) written "(h)(2)"
    "nj-shoe": r"19:4[67]-\d+\.\d+",  # N.J.A.C. 19:47-2.10(a)
    "nj-hand-dealt": r"19:4[67]-\d+\.\d+",
    "european-6d": r"BASIC RULES|STAGES OF THE GAME|INSURANCE AND EQUAL MONEY|SURRENDER|BLACK JACK|NEXT GIVEAWAY|"
                   r"DOUBLE|SPLIT|WINNING AND LOSSING BETS|DRAW - STAND OFF",
    "house-h17": r"Blackjack Rules|Game time|Splits|AA split exception|Double Down|Blackjack:|Insurance|HOUSE RULES",
    "house-shoe-surrender": r"BLACKJACK.THE BASICS|Card Shuffling and Cutting|Dealing|DOUBLING DOWN|SPLITTING PAIRS|"
                            r"INSURANCE|BLACKJACK|SURRENDER BLACKJACK|ODDS",
}
NOT_OPTIONS = {"name", "description", "clause_prefix"}


def _option_comments(name: str) -> dict[str, str]:
    """Each option of a shipped profile -> its inline comment ("" when it has none), as the product reads them."""
    text = (PROFILE_DIR / f"{name}.toml").read_text()
    cited = option_citations(text)
    return {key: cited.get(key, "") for key in tomllib.loads(text) if key not in NOT_OPTIONS}


def _cites(name: str, comment: str) -> bool:
    return ("house choice" in comment or re.search(CLAUSES[name], comment) is not None
            or re.search(r'"[^"]{4,}"', comment) is not None)  # a passage of the text, quoted


@pytest.mark.parametrize("name", sorted(DESIGN_PROFILES))
def test_shipped_profile_loads_and_cites_its_clauses(name: str) -> None:
    """DESIGN: "Each option that a rule text sets cites its clause in a comment"; an option no text sets says
    "house choice". Every option line carries one or the other, so a missing citation fails here."""
    rules = load_rules(name)
    assert rules.name == name
    options = _option_comments(name)
    assert set(options) >= {"decks", "natural_pays", "ties", "burn", "surrender"}, "the parser found the options"
    uncited = sorted(key for key, comment in options.items() if not _cites(name, comment))
    assert not uncited, f"{name}: options citing no clause and not saying 'house choice': {uncited}"


def test_the_citation_check_fails_a_missing_or_empty_citation() -> None:
    """The check above can fail: no comment, or one that names neither a clause nor "house choice"."""
    assert not _cites("nj-shoe", "") and not _cites("nj-shoe", "the usual shoe game")
    assert not _cites("ny-4620", "not in the regulation") and not _cites("european-6d", "house rule")
    assert _cites("nj-shoe", "19:47-2.10(a): on the first two cards") and _cites("ny-4620", "(h)(2)")
    assert _cites("house-h17", '"the dealer must always hit a soft 17"') and _cites("nj-shoe", "house choice")


@pytest.mark.parametrize("name", ["nj-shoe", "nj-hand-dealt"])
def test_nj_routine_burn_is_house_choice_not_19_47_2_15_f(name: str) -> None:
    """19:47-2.15(f) burns the first card after the discards are reshuffled for insufficient cards (the engine
    does that on its own); the amendment sets no burn after a routine shuffle."""
    comment = _option_comments(name)["burn"]
    assert "house choice" in comment and not comment.startswith("19:47-2.15(f)"), comment


def test_ny_profile_follows_4620_5() -> None:
    r = load_rules("ny-4620")
    assert r.max_bet == 500  # (f)(2): maximum bet $5
    assert r.decks <= 4  # (a)(2)
    assert r.double_on == "10-11" and not r.double_after_split  # (l)(1), (k)(6)
    assert r.split_by == "value" and r.max_hands == 0  # (k)(1), (k)(3)
    assert r.peek_on == frozenset({1, 10})  # (h)(1)


@pytest.mark.parametrize(
    ("ties", "pays"),
    [("push_naturals_only", None), ("house_wins", None), ("house_wins", "6:5"), ("push_naturals_only", "3:2"),
     ("push", "2:1"), ("push", "1:1")],
)
def test_ny_tie_option_sets_the_natural_payout_4620_5_h_2(tmp_path: Path, ties: str, pays: str | None) -> None:
    """NY 4620.5(h)(2): under tie option two or three "the dealer pays off the winning natural 21 at 2-to-1 odds";
    under option one (all ties push) "at 3-to-2 odds". A profile that pairs them otherwise is refused, naming the
    clause, whether the pairing comes from a per-table override or from a copy of the profile under a path."""
    overrides = {"ties": ties} if pays is None else {"ties": ties, "natural_pays": pays}
    with pytest.raises(ProfileError) as err:
        load_rules("ny-4620", overrides)
    assert "natural_pays" in str(err.value) and "NY 4620.5(h)(2)" in str(err.value), str(err.value)
    copy = tmp_path / "ny-copy.toml"
    text = (PROFILE_DIR / "ny-4620.toml").read_text().replace('ties = "push"', f'ties = "{ties}"')
    copy.write_text(text if pays is None else text.replace('natural_pays = "3:2"', f'natural_pays = "{pays}"'))
    with pytest.raises(ProfileError, match=r"natural_pays: .*NY 4620\.5\(h\)\(2\)"):
        load_rules(str(copy))


@pytest.mark.parametrize(("ties", "pays"), [("push", "3:2"), ("push_naturals_only", "2:1"), ("house_wins", "2:1")])
def test_ny_tie_options_with_their_own_payout_load(ties: str, pays: str) -> None:
    r = load_rules("ny-4620", {"ties": ties, "natural_pays": pays})
    assert (r.ties, r.natural_pays) == (ties, (int(pays[0]), int(pays[2])))


def test_nj_hand_dealt_follows_the_amendments() -> None:
    r = load_rules("nj-hand-dealt")
    assert r.dealer_hits_soft_17 and r.double_on == "hard-9-11" and not r.double_after_split
    assert r.deck_change_hours == 4 and r.second_cut_card and r.penetration <= 2 / 3


def test_house_shoe_surrender_limits_hands_by_table_size() -> None:
    assert load_rules("house-shoe-surrender").effective_max_hands == 3
    assert load_rules("house-shoe-surrender", {"spots": 6}).effective_max_hands == 4


def test_a_per_table_max_hands_override_wins_over_the_table_size_rule() -> None:
    """DESIGN: "Any option can be overridden per table": a table's own max_hands beats what the house card
    derives from the table's size (max_hands_by_spots), at any size."""
    assert load_rules("house-shoe-surrender", {"max_hands": 2}).effective_max_hands == 2
    assert load_rules("house-shoe-surrender", {"spots": 6, "max_hands": 3}).effective_max_hands == 3
    for beyond_the_card in ({"max_hands": 0}, {"spots": 6, "max_hands": 5}):  # issue 36: bounded by the card
        with pytest.raises(ProfileError, match="SPLITTING PAIRS allows at most"):
            load_rules("house-shoe-surrender", beyond_the_card)
    assert load_rules("house-shoe-surrender", {"spots": 6}).effective_max_hands == 4, "no override: the card's"
    by_size = {"max_hands": 2, "max_hands_by_spots": {"6": 3}}  # both given per table: the table's own table
    assert load_rules("house-shoe-surrender", {**by_size, "spots": 6}).effective_max_hands == 3
    assert load_rules("house-shoe-surrender", by_size).effective_max_hands == 2


def test_a_path_works_where_a_name_does(tmp_path: Path) -> None:
    f = tmp_path / "mine.toml"
    f.write_text('decks = 2\nmin_bet = "7.50"\nmax_bet = 100\n')
    r = load_rules(str(f))
    assert (r.decks, r.min_bet, r.max_bet, r.name) == (2, 750, 10000, "mine")


def test_only_documented_keys_still_load(tmp_path: Path) -> None:
    f = tmp_path / "lab.toml"
    f.write_text('decks = 6\nspots = 7\nmin_bet = "5"\nmax_bet = "500"\nhole_card = "peek"\npeek_on = ["A"]\n')
    assert load_rules(str(f)).peek_on == frozenset({1})


@pytest.mark.parametrize(
    ("body", "key", "reason"),
    [
        ("decks = 9\n", "decks", "less than or equal to 8"),
        ("surrender_everything = true\n", "surrender_everything", "unknown key"),
        ('natural_pays = "7:5"\n', "natural_pays", "'3:2'"),
        ('min_bet = 10\nmax_bet = 5\n', "max_bet", "below min_bet"),
        ("min_bet = 5.5\n", "min_bet", "not a float"),
        ('hole_card = "none"\npeek_on = ["A"]\n', "peek_on", "must be empty"),
        ("second_cut_card = true\npenetration = 0.9\n", "penetration", "19:47-2.5(i)"),
        ("resplit_aces = true\nmax_hands = 2\n", "resplit_aces", "max_hands"),
        ('surrender = "european"\nhole_card = "peek"\n', "surrender", "european"),
        ("penetration = 1.5\n", "penetration", "less than 1"),
        # an Arabic-Indic 3 and a superscript 2 are not table sizes
        ('max_hands_by_spots = { "\u0663" = 2 }\n', "max_hands_by_spots", "number of spots from 1 to 7"),
        ('max_hands_by_spots = { "\u00b2" = 2 }\n', "max_hands_by_spots", "number of spots from 1 to 7"),
    ],
)
def test_bad_profile_names_file_key_and_reason(tmp_path: Path, body: str, key: str, reason: str) -> None:
    f = tmp_path / "bad.toml"
    f.write_text(body)
    with pytest.raises(ProfileError) as err:
        load_rules(str(f))
    text = str(err.value)
    assert str(f) in text and key in text and reason in text, text


def test_invalid_toml_and_missing_file(tmp_path: Path) -> None:
    f = tmp_path / "broken.toml"
    f.write_text("decks = = 3\n")
    with pytest.raises(ProfileError, match="not valid TOML"):
        load_rules(str(f))
    with pytest.raises(ProfileError, match="unknown profile 'atlantis'"):
        load_rules("atlantis")


def test_overrides_are_validated_and_named() -> None:
    with pytest.raises(ProfileError) as err:
        load_profile_model("house-h17", {"ties": "coin_flip"})
    assert "overrides ties" in str(err.value) and "ties" in str(err.value)
    assert load_rules("nj-shoe", {"ties": "house_wins"}).ties == "house_wins", "nj-shoe's ties: house choice"


# ---- what set_limits may set (DESIGN.md, "Operators and roles") -----------------------------------


def test_ny_limits_stay_within_4620_5_f_2() -> None:
    from controller.game.rules import limits_refusal

    rules = load_rules("ny-4620")
    assert (rules.max_bet_ceiling, rules.min_bet_floor) == (500, 0)
    why = limits_refusal(rules, 1, 99999999999)
    assert why is not None and "4620.5(f)(2)" in why and "max_bet 999999999.99" in why
    assert limits_refusal(rules, 501, 600) is not None
    assert limits_refusal(rules, 1, 500) is None and limits_refusal(rules, 200, 500) is None


def test_house_h17_keeps_its_5_dollar_minimum() -> None:
    from controller.game.rules import limits_refusal

    rules = load_rules("house-h17")
    why = limits_refusal(rules, 100, 50000)
    assert why is not None and "Min bet: $5" in why and "may be increased" in why
    assert limits_refusal(rules, 500, 100000) is None and limits_refusal(rules, 1000, 50000) is None
    why = limits_refusal(rules, 1000, 25000)
    assert why is not None and "max_bet 250 is below 500" in why, "the $500 maximum may be increased, not lowered"


@pytest.mark.parametrize("name", ["european-6d", "nj-shoe", "nj-hand-dealt", "house-shoe-surrender"])
def test_rule_texts_without_limits_bound_nothing(name: str) -> None:
    from controller.game.rules import limits_refusal

    assert limits_refusal(load_rules(name), 1, 99999999999) is None


def test_limit_bounds_are_written_beside_the_citation_and_do_not_change_the_rules_digest(tmp_path: Path) -> None:
    from controller.game.snapshot import rules_digest

    f = tmp_path / "lab.toml"
    f.write_text('min_bet = "5"\nmax_bet = "500"\n')
    plain = load_rules(str(f))
    assert (plain.min_bet_floor, plain.max_bet_ceiling) == (0, 0)
    f.write_text('clause_prefix = "Lab "\nmin_bet = "5"  # 7(a): at least $2 [at least 2]\n'
                 'max_bet = "500"  # 7(b): up to $1000 [at most 1000]\n')
    bounded = load_rules(str(f))
    assert (bounded.min_bet_floor, bounded.max_bet_ceiling, bounded.max_bet_ceiling_rule) == (
        200, 100000, "Lab 7(b): up to $1000")
    assert rules_digest(bounded) == rules_digest(plain), "bounds limit commands, not how rounds replay"
    f.write_text('min_bet = "5"\ntable_max_bet_ceiling = "5"\n')
    with pytest.raises(ProfileError, match="table_max_bet_ceiling: no longer a key: write the bound"):
        load_rules(str(f))


def test_the_profiles_citations_are_machine_readable_and_a_refusal_carries_its_clause() -> None:
    """Issue 17: refusals carry the clause of the profile option they enforce. The profile's comments are the
    one place a citation is written; the loaded rules carry them, and the engine's refusal names the option
    and what the profile cites for it. A per-table override is cited as such (the clause no longer sets it)."""
    from controller.game import events as ev
    from controller.game.errors import IllegalAction
    from controller.game.table import Table

    rules = load_rules("european-6d")
    cited = dict(rules.citations)
    assert cited == {k: v for k, v in _option_comments("european-6d").items() if v}
    assert cited["double_after_split"].startswith("DOUBLE:")
    assert dict(load_rules("nj-shoe", {"max_hands": 3}).citations)["max_hands"] == "per-table override"
    table = Table(rules)
    for event in (ev.TableOpened(now=0.0), ev.ShuffleDone(count=rules.cards_in_shoe), ev.CardDrawn("2C"),
                  ev.BetPlaced(spot=1, amount=1000), ev.NoMoreBets(), ev.CardDrawn("8C"), ev.CardDrawn("6H"),
                  ev.CardDrawn("8D"), ev.Decision(spot=1, action="split"), ev.CardDrawn("3H")):
        table.handle(event)
    with pytest.raises(IllegalAction) as refused:
        table.handle(ev.Decision(spot=1, action="double"))
    assert str(refused.value) == "spot 1: double refused: european-6d does not allow doubling after a split"
    assert (refused.value.option, refused.value.clause) == ("double_after_split", cited["double_after_split"])


def test_option_citations_reads_inline_comments_only_outside_strings() -> None:
    text = '\n'.join([
        '# a header comment',
        'name = "x"                 # not an option',
        'description = "a # inside"  # nor this',
        'decks = 6                  # 4620.5(b): six decks',
        'min_bet = "5 # not a comment"   # house choice',
        'max_bet = "a \\" quote # still inside"  # quoted',
        'burn = 1',
        '[table]',
        'x = 1  # a table key is not a profile option',
    ])
    assert option_citations(text) == {"decks": "4620.5(b): six decks", "min_bet": "house choice", "max_bet": "quoted"}
