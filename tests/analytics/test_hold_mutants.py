"""The hold figures' counting at the edges a plausible wrong change would pass unseen (issue 39): the engine's
running totals start again at each open, also after an open of a single round; a zero wager is no hand; pace
over the time open; the spread's figure from every hand and each pair of hands in a round.

Pure: :func:`figures` and :class:`Tally` over round dicts as :mod:`controller.records` gives them."""

from __future__ import annotations

import math
from typing import Any

import pytest

from controller.analytics import hold
from controller.analytics.hold import MIN_ROUNDS, NO_TOTALS, Spread, Tally, figures, theoretical_edge, totals_after
from controller.game.money import format_money
from controller.profiles import load_rules

RULES = load_rules("ny-4620")
SIGMA = Spread(1.15, "given")


def rnd(started: float, wagers: dict[int, str], totals: tuple[int, str, str], decisions: int = 0) -> dict[str, Any]:
    """A settled round of ``wagers`` lasting 30 s, the engine's totals after it (rounds, handle, house net)."""
    return {"started": started, "ended": started + 30.0, "decisions": [{}] * decisions,
            "spots": {str(s): {"wager": w} for s, w in wagers.items()},
            "totals": {"rounds": totals[0], "handle": totals[1], "house_net": totals[2]}}


@pytest.mark.parametrize("first_open", [1, 2, 3])
def test_a_table_reopened_counts_each_open_whole_however_few_its_rounds(first_open: int) -> None:
    """Open for ``first_open`` rounds of $10 (the house wins $2 a round), closed, opened again: its totals start
    at zero again, and its first round ($20, the house loses $5) counts in full."""
    rounds = [rnd(100.0 * n, {1: "10"}, (n, f"{10 * n}", f"{2 * n}")) for n in range(1, first_open + 1)]
    rounds.append(rnd(10_000.0, {1: "20"}, (1, "20", "-5")))
    f = figures(rounds, RULES, sigma=SIGMA)
    assert (f.rounds, f.hands, f.handle, f.house_net) == (first_open + 1, first_open + 1, 1000 * first_open + 2000,
                                                          200 * first_open - 500)
    assert f.initial_wagers == f.handle


def test_the_totals_carry_on_within_an_open_and_from_a_baseline() -> None:
    rounds = [rnd(100.0, {1: "10", 2: "5"}, (8, "95", "12")), rnd(200.0, {1: "10"}, (9, "110", "2"))]
    f = figures(rounds, RULES, sigma=SIGMA, baseline=(7, 8000, 1000))
    assert (f.rounds, f.hands, f.handle, f.house_net, f.initial_wagers) == (2, 3, 3000, -800, 2500)
    assert totals_after(rounds[-1]) == (9, 11000, 200)
    assert totals_after({"spots": {}}) == NO_TOTALS


def test_a_zero_or_missing_wager_is_no_hand() -> None:
    f = figures([rnd(100.0, {1: "0", 2: "5", 3: ""}, (1, "5", "5"))], RULES, sigma=SIGMA)
    assert (f.rounds, f.hands, f.initial_wagers) == (1, 1, 500)


def test_pace_is_per_hour_open_and_idle_is_open_time_in_no_round() -> None:
    rounds = [rnd(0.0, {1: "5"}, (1, "5", "5"), decisions=2), rnd(1800.0, {1: "5", 2: "5"}, (2, "15", "0"),
                                                                   decisions=3)]
    f = figures(rounds, RULES, sigma=SIGMA, opened=0.0, now=3600.0)
    assert (f.rounds_per_hour, f.hands_per_hour, f.decisions_per_hour) == (2.0, 3.0, 5.0)
    assert (f.play_s, f.idle_s, f.mean_round_s) == (60.0, 3540.0, 30.0)
    assert (f.started, f.ended) == (0.0, 1830.0)
    f = figures(rounds, RULES, sigma=SIGMA)  # open from the first round's start to the last one's end
    assert f.idle_s == 1830.0 - 60.0
    assert f.hold == pytest.approx(0 / 1500) and f.house_net == 0


def test_a_tally_fed_round_by_round_gives_what_figures_gives() -> None:
    rounds = [rnd(100.0, {1: "10"}, (1, "10", "10")), rnd(200.0, {1: "10"}, (2, "20", "0")),
              rnd(900.0, {1: "30"}, (1, "30", "30"))]
    tally = Tally()
    for r in rounds:
        tally.add(r)
    assert (tally.rounds, tally.hands, tally.handle, tally.house_net, tally.before) == (3, 3, 5000, 3000,
                                                                                          (1, 3000, 3000))
    assert figures(rounds, RULES, sigma=SIGMA).house_net == 3000


def test_no_rounds_give_no_rates() -> None:
    f = figures([], RULES, sigma=SIGMA)
    assert (f.rounds, f.hands, f.hold, f.mean_round_s, f.rounds_per_hour) == (0, 0, None, None, None)


def test_the_theoretical_win_is_the_initial_wagers_at_the_profiles_edge_to_the_cent() -> None:
    from controller.strategy.edge import house_edge

    f = figures([rnd(100.0, {1: "100", 2: "33.33"}, (1, "150", "-20"))], RULES, sigma=SIGMA)
    edge = house_edge(RULES).house_edge
    assert f.theoretical_edge == edge and 0 < edge < 0.02
    assert f.theoretical_win == round(13333 * edge)
    assert f.hold == pytest.approx(-2000 / 15000)
    assert (f.sigma, f.sigma_source) == (1.15, "given")


def test_the_json_gives_money_as_decimal_strings_and_rounds_the_rest() -> None:
    rounds = [rnd(0.0, {1: "10.05"}, (1, "10.05", "-7.5"), decisions=1)]
    data = figures(rounds, RULES, sigma=Spread(1.0 / 3.0, "given"), opened=0.0, now=7.0).to_json()
    assert (data["handle"], data["house_net"], data["initial_wagers"]) == ("10.05", "-7.50", "10.05")
    assert data["theoretical_win"] == format_money(round(1005 * theoretical_edge(RULES)))
    assert data["rounds"] == 1 and data["hands"] == 1 and data["decisions"] == 1
    assert data["sigma"] == 0.333333 and data["hold"] == round(-750 / 1005, 6)
    assert data["rounds_per_hour"] == round(3600 / 7, 6) and data["mean_round_s"] == 30.0
    assert data["idle_s"] == 0.0 and data["play_s"] == 30.0
    assert data["started"] == 0.0 and data["ended"] == 30.0 and data["sigma_source"] == "given"
    empty = figures([], RULES, sigma=SIGMA).to_json()
    assert empty["hold"] is None and empty["win_z"] is None and empty["handle"] == "0"


def test_open_time_runs_from_the_open_given_not_from_the_first_round() -> None:
    rounds = [rnd(600.0, {1: "5"}, (1, "5", "5")), rnd(1200.0, {1: "5"}, (2, "10", "0"))]
    f = figures(rounds, RULES, sigma=SIGMA, opened=300.0, now=2100.0)
    assert f.idle_s == 1800.0 - 60.0 and f.rounds_per_hour == 4.0
    f = figures(rounds, RULES, sigma=SIGMA, opened=300.0)  # to the last round's end
    assert f.idle_s == 930.0 - 60.0
    assert figures([], RULES, sigma=SIGMA, now=100.0).idle_s == 0.0, "no round, no open time given: none"


def test_a_round_of_no_time_gives_no_rate_and_no_play_time() -> None:
    f = figures([{**rnd(50.0, {1: "5"}, (1, "5", "5")), "ended": 50.0}], RULES, sigma=SIGMA)
    assert (f.play_s, f.idle_s, f.rounds_per_hour, f.mean_round_s) == (0.0, 0.0, None, 0.0)


def test_a_one_cent_wager_is_a_hand() -> None:
    f = figures([rnd(0.0, {1: "0.01", 2: "0"}, (1, "0.01", "0.01"))], RULES, sigma=SIGMA)
    assert (f.hands, f.initial_wagers) == (1, 1)


def test_each_set_of_rules_has_its_own_edge() -> None:
    other = load_rules("house-h17")
    from controller.strategy.edge import house_edge

    assert theoretical_edge(RULES) == house_edge(RULES).house_edge
    assert theoretical_edge(other) == house_edge(other).house_edge != theoretical_edge(RULES)


def _settled(n: int, wager: int, net: int) -> list[dict[str, Any]]:
    """``n`` rounds of one ``wager`` (cents), the house netting ``net`` cents each."""
    return [rnd(100.0 * k, {1: format_money(wager)}, (k, format_money(wager * k), format_money(net * k)))
            for k in range(1, n + 1)]


def test_win_z_has_the_sign_of_the_house_win_over_theoretical_and_none_without_wagers() -> None:
    """The sign only (not the spread's figure): ahead of theoretical is above zero, behind it below, level zero;
    none below the minimum sample (MIN_ROUNDS, docs/analytics.md)."""
    edge = theoretical_edge(RULES)
    wager = 100_000  # $1000: theoretical a whole number of cents, level with a net of that many
    theo = round(wager * edge)
    level = figures(_settled(MIN_ROUNDS, wager, theo), RULES, sigma=SIGMA)
    assert level.theoretical_win == round(wager * MIN_ROUNDS * edge) and level.win_z is not None
    assert abs(level.win_z) < 0.001  # a cent of rounding off level
    ahead = figures(_settled(MIN_ROUNDS, wager, 10_000), RULES, sigma=SIGMA)
    behind = figures(_settled(MIN_ROUNDS, wager, -10_000), RULES, sigma=SIGMA)
    assert ahead.win_z is not None and ahead.win_z > 0
    assert behind.win_z is not None and behind.win_z < 0
    assert figures(_settled(MIN_ROUNDS - 1, wager, 10_000), RULES, sigma=SIGMA).win_z is None, "too few rounds"
    assert figures([rnd(0.0, {1: "0"}, (1, "0", "0"))], RULES, sigma=SIGMA).win_z is None
    assert figures([rnd(0.0, {1: "5"}, (1, "5", "5"))], RULES, sigma=Spread(0.0, "none")).win_z is None


def test_the_spread_of_the_house_net_counts_every_hand_and_each_pair_of_hands_in_a_round() -> None:
    """``win_sd`` (cents) = sqrt(sigma^2 x the sum of every hand's wager^2 + covariance x the sum, in each round, of
    its hands' wagers taken two by two): the hands of one round share the dealer's cards (docs/analytics.md), so
    a round's pairs count, and every round's."""
    spread_ = Spread(1.2, "given", covariance=0.5)
    rounds = [rnd(100.0, {1: "10", 2: "20"}, (1, "30", "3")), rnd(200.0, {1: "5", 3: "15", 4: "40"}, (2, "90", "-2"))]
    wagers = [[1000, 2000], [500, 1500, 4000]]
    squares = sum(w * w for r in wagers for w in r)
    pairs = sum(sum(r) ** 2 - sum(w * w for w in r) for r in wagers)
    assert (squares, pairs) == (23_500_000, 21_500_000)
    f = figures(rounds, RULES, sigma=spread_)
    assert f.win_sd == round(math.sqrt(1.2 * 1.2 * squares + 0.5 * pairs)) == 6678
    assert (f.sigma, f.covariance, f.sigma_source, f.min_rounds) == (1.2, 0.5, "given", MIN_ROUNDS)


@pytest.mark.parametrize("sigma, win_sd", [(0.0, None), (0.0005, 0)])
def test_no_spread_is_no_standard_deviation_and_a_small_one_is_a_number(sigma: float, win_sd: int | None) -> None:
    """No variance at all (a spread of 0): ``win_sd`` null, no z; under a cent squared (0.25 here): 0 cents."""
    f = figures([rnd(100.0, {1: "10"}, (1, "10", "10"))], RULES, sigma=Spread(sigma, "given"))
    assert f.win_sd == win_sd and f.win_z is None


def test_without_a_spread_given_the_rules_own_is_measured(monkeypatch: pytest.MonkeyPatch) -> None:
    """No ``sigma`` given: the spread of the rules the figures are for (measured once per process; stood in for here:
    the measurement plays 40,000 rounds)."""
    asked: list[object] = []

    def measured(rules: object) -> Spread:
        asked.append(rules)
        return Spread(1.1, "measured", covariance=0.25)

    monkeypatch.setattr(hold, "spread", measured)
    f = figures([rnd(100.0, {1: "10", 2: "10"}, (1, "20", "0"))], RULES)
    assert asked == [RULES]
    assert (f.sigma, f.covariance, f.sigma_source) == (1.1, 0.25, "measured")
    assert f.win_sd == round(math.sqrt(1.1 * 1.1 * 2_000_000 + 0.25 * 2_000_000))
