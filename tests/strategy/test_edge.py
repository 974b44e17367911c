"""The theoretical house edge against published figures (docs/house-edge.md) and known rule effects."""

from __future__ import annotations

import pytest

from controller.game.rules import Rules
from controller.profiles import available_profiles, load_rules
from controller.strategy.edge import house_edge
from controller.strategy.ev import Context, deal_probability, situation_ev
from tests.strategy.published import PUBLISHED, Published

#: tolerance of the brief: 0.05 percentage points
TOLERANCE = 0.0005


@pytest.mark.parametrize("pub", PUBLISHED, ids=[p.name for p in PUBLISHED])
def test_edge_agrees_with_published_figure(pub: Published) -> None:
    rep = house_edge(pub.to_rules())
    # published tables give the player's return for composition-dependent play
    assert -rep.house_edge_optimal == pytest.approx(pub.player_return, abs=TOLERANCE)
    # and the total-dependent chart the bench plays costs at most a few thousandths of a percent more
    assert 0.0 <= rep.house_edge - rep.house_edge_optimal < 0.0002


def test_multi_deck_appendix_9_figures_agree_much_closer_than_required() -> None:
    for pub in PUBLISHED:
        if pub.source.startswith("Wizard") and pub.rules["decks"] >= 2:
            assert -house_edge(pub.to_rules()).house_edge_optimal == pytest.approx(pub.player_return, abs=0.0001)


@pytest.mark.parametrize(
    ("change", "effect", "tol"),
    [
        # rule effects on a 6-deck S17 DAS game; 6:5 is exactly 0.3 x P(natural) x P(no dealer natural)
        ({"natural_pays": (6, 5)}, 0.0136, 0.0003),
        ({"natural_pays": (2, 1)}, -0.0227, 0.0005),
        ({"natural_pays": (1, 1)}, 0.0227, 0.0005),
        ({"dealer_hits_soft_17": True}, 0.0021, 0.0003),
        ({"double_after_split": False}, 0.0014, 0.0003),
        ({"surrender": "late"}, -0.0007, 0.0003),
        ({"resplit_aces": True}, -0.0007, 0.0003),
        ({"double_on": "10-11"}, 0.0018, 0.0006),
        ({"double_on": "9-11"}, 0.0009, 0.0004),
    ],
)
def test_rule_effects_match_published_rule_variation_tables(
    change: dict[str, object], effect: float, tol: float
) -> None:
    base = house_edge(Rules(decks=6)).house_edge
    changed = house_edge(Rules(decks=6, **change)).house_edge  # type: ignore[arg-type]
    assert changed - base == pytest.approx(effect, abs=tol)


def _naturals(decks: int) -> tuple[float, float]:
    """P(player natural, no dealer natural) and P(both naturals), by hand from the deal."""
    ctx = Context.of(Rules(decks=decks))
    alone = both = 0.0
    for up in range(1, 11):
        w = deal_probability(decks, 1, 10, up)
        p_bj = situation_ev(ctx, 1, 10, up).p_blackjack
        alone += w * (1.0 - p_bj)
        both += w * p_bj
    return alone, both


def test_six_to_five_costs_three_tenths_of_the_naturals() -> None:
    for decks in (1, 6):
        base = house_edge(Rules(decks=decks)).house_edge
        six_five = house_edge(Rules(decks=decks, natural_pays=(6, 5))).house_edge
        alone, _ = _naturals(decks)
        assert six_five - base == pytest.approx(0.3 * alone, abs=1e-12)


def test_ties_options_cost_the_player_dearly() -> None:
    push = house_edge(Rules(decks=4)).house_edge
    naturals_only = house_edge(Rules(decks=4, ties="push_naturals_only", natural_pays=(2, 1))).house_edge
    house_wins = house_edge(Rules(decks=4, ties="house_wins", natural_pays=(2, 1))).house_edge
    assert push < naturals_only < house_wins
    # the only difference: a natural against the dealer's natural loses instead of pushing
    _, both = _naturals(4)
    assert house_wins - naturals_only == pytest.approx(both, abs=1e-12)
    assert naturals_only > 0.05  # losing every other tie is worth several percent


@pytest.mark.parametrize("name", available_profiles())
def test_every_shipped_profile_has_a_sane_edge(name: str) -> None:
    rep = house_edge(load_rules(name))
    assert -0.01 < rep.house_edge < 0.02
    assert rep.house_edge >= rep.house_edge_optimal - 1e-12
