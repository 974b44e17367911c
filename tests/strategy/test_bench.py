"""The bench plays the real engine and agrees with the theory; the commands keep their contract."""

from __future__ import annotations

import dataclasses
import json
import os
import pickle
import random
import signal

import pytest

from controller import bench
from controller.cli import main
from controller.game.rules import Rules
from controller.profiles import available_profiles, load_rules
from controller.strategy.chart import basic_strategy
from controller.strategy.edge import house_edge
from controller.strategy.player import BenchStats, BenchTable, shuffle


def _figures(s: BenchStats) -> tuple[object, ...]:
    """Everything a run reports except its duration."""
    return (s.rounds, s.hands, s.wagered, s.net, s.sum_sq, s.handle, s.house_net, s.shuffles, s.unit, s.spots)


@pytest.mark.parametrize("name", available_profiles())
def test_every_profile_plays_legally_on_the_engine_and_lands_near_the_theory(name: str) -> None:
    rules = load_rules(name)
    table = BenchTable(rules, random.Random(7), spots=min(3, rules.spots))
    stats = table.play(4000)  # the engine refuses any illegal decision: none may happen
    assert stats.rounds == 4000 and stats.hands == 4000 * stats.spots
    theory = house_edge(rules).house_edge
    assert abs(stats.house_edge - theory) < 5 * stats.stderr
    assert stats.handle >= stats.wagered
    assert stats.house_net == -stats.net  # no insurance taken: the house wins what the players lose


def test_same_seed_same_result_and_different_seeds_differ() -> None:
    rules = Rules(decks=6)
    a = bench.run(rules, 3000, seed=5)[0]
    b = bench.run(rules, 3000, seed=5)[0]
    c = bench.run(rules, 3000, seed=6)[0]
    assert _figures(a) == _figures(b)
    assert (a.net, a.sum_sq) != (c.net, c.sum_sq)


def test_the_figures_depend_on_the_seed_not_on_the_workers() -> None:
    rules = Rules(decks=6)
    rounds = 2 * bench.BLOCK + 2000
    assert bench.blocks(rounds) == [bench.BLOCK, bench.BLOCK, 2000]
    assert bench.useful_workers(rounds, 8) == 3 and bench.useful_workers(10, 4) == 1
    one = bench.run(rules, rounds, seed=3, workers=1)[0]
    two, interrupted = bench.run(rules, rounds, seed=3, workers=2)
    again = bench.run(rules, rounds, seed=3, workers=2)[0]
    three = bench.run(rules, rounds, seed=3, workers=3)[0]
    assert not interrupted and two.rounds == rounds
    assert _figures(one) == _figures(two) == _figures(again) == _figures(three)


@pytest.mark.parametrize(("rules", "rounds", "seed", "spots", "figures"), [
    (Rules(name="6D S17 DAS peek, 1 spot", decks=6), 20_000, 1, 1,
     (20_000, 20_000, 20_000_000, 68_500, 26_861.75, 22_706_000, -68_500, 463)),
    (load_rules("european-6d"), 6000, 4, 3, (6000, 18_000, 18_000_000, -130_000, 37_426.0, 19_899_000, 130_000, 273)),
    (load_rules("house-shoe-surrender"), 6000, 5, 2,
     (6000, 12_000, 12_000_000, -177_000, 20_607.0, 13_408_000, 177_000, 233)),
], ids=["reference", "european-6d", "house-shoe-surrender"])
def test_the_figures_of_a_seed_stay_what_they_were(
    rules: Rules, rounds: int, seed: int, spots: int, figures: tuple[object, ...]
) -> None:
    """Pinned: what the bench played before it was compiled and its shuffle rewritten (same engine, same cards)."""
    s = bench.run(rules, rounds, seed=seed, spots=spots)[0]
    assert (s.rounds, s.hands, s.wagered, s.net, s.sum_sq, s.handle, s.house_net, s.shuffles) == figures


def test_the_shoe_shuffles_as_random_shuffle_does() -> None:
    """player.shuffle is random.Random.shuffle, card for card, the generator left in the same state; a subclass
    of Random shuffles with its own method."""
    for seed in range(40):
        for n in (0, 1, 2, 3, 7, 8, 9, 31, 32, 33, 52, 255, 256, 257, 312, 416):
            ours, theirs = random.Random(seed * 1000 + n), random.Random(seed * 1000 + n)
            cards = [f"c{i}" for i in range(n)]
            expected = list(cards)
            shuffle(ours, cards)
            theirs.shuffle(expected)
            assert cards == expected and ours.getstate() == theirs.getstate(), (seed, n)

    class Reversing(random.Random):
        def shuffle(self, x: list[str]) -> None:  # type: ignore[override]
            x.reverse()

    cards = ["a", "b", "c"]
    shuffle(Reversing(1), cards)
    assert cards == ["c", "b", "a"]


def test_a_strategy_pickles_with_its_chart() -> None:
    """The bench hands the strategy to spawned workers pickled (compiled too), the chart not computed again."""
    strategy = basic_strategy(Rules(decks=6, surrender="late"))
    again = pickle.loads(pickle.dumps(strategy))
    assert again.rules == strategy.rules and again.cells == strategy.cells and again.chart() == strategy.chart()
    hand = (16, False, False, True, False, True, 10)  # hard 16 against a ten: surrender
    assert again.decide(*hand) == strategy.decide(*hand) == "surrender"


def test_each_block_plays_its_own_stream() -> None:
    rules = Rules(decks=6)
    strategy = basic_strategy(rules)
    a, b = BenchStats(unit=1000, spots=1), BenchStats(unit=1000, spots=1)
    bench.play_block(rules, strategy, 3, 1, 0, 2000, a)
    bench.play_block(rules, strategy, 3, 1, 1, 2000, b)
    assert a.rounds == b.rounds == 2000
    assert (a.net, a.sum_sq) != (b.net, b.sum_sq)  # the second block is not a copy of the first


def test_ctrl_c_keeps_the_blocks_finished_so_far() -> None:
    rules = Rules(decks=6)
    rounds = 10 * bench.BLOCK
    handler = signal.getsignal(signal.SIGINT)

    sent: list[int] = []

    def ctrl_c(n: int) -> None:  # at the first block reported, SIGINT as a terminal sends it
        if not sent:
            sent.append(n)
            os.kill(os.getpid(), signal.SIGINT)

    stats, interrupted = bench.run(rules, rounds, seed=4, workers=2, progress=ctrl_c)
    assert interrupted and 0 < stats.rounds < rounds
    assert stats.rounds % bench.BLOCK == 0  # whole blocks only, each in the merged figures
    assert signal.getsignal(signal.SIGINT) is handler  # the parent's own handler is back

    def ctrl_c_inline(n: int) -> None:  # in one process Ctrl-C is a KeyboardInterrupt
        raise KeyboardInterrupt

    stats, interrupted = bench.run(rules, rounds, seed=4, workers=1, progress=ctrl_c_inline)
    assert interrupted and stats.rounds == bench.BLOCK and stats.hands == bench.BLOCK


def test_stderr_of_a_constant_is_zero_and_merge_adds_up() -> None:
    s = BenchStats(unit=100, spots=1)
    s.rounds, s.net, s.sum_sq, s.wagered = 4, -400, 4.0, 400
    assert s.house_edge == 1.0 and s.stderr == 0.0
    t = BenchStats(unit=100, spots=1)
    t.merge(s)
    t.merge(s)
    assert (t.rounds, t.net, t.wagered) == (8, -800, 800)


def test_bench_json_contract(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--profile", "nj-shoe", "--rounds", "2000", "--seed", "2", "--spots", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("rounds", "rounds_per_s", "house_edge", "stderr", "hold", "theoretical_edge", "difference_in_se"):
        assert key in out
    assert out["rounds"] == 2000 and out["spots"] == 2 and out["interrupted"] is False


def test_edge_and_strategy_json_contract(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["edge", "--profile", "ny-4620", "--json"]) == 0
    edge = json.loads(capsys.readouterr().out)
    assert 0.0 < edge["house_edge"] < 0.02
    assert main(["strategy", "--profile", "ny-4620", "--json"]) == 0
    chart = json.loads(capsys.readouterr().out)
    assert chart["columns"] == ["2", "3", "4", "5", "6", "7", "8", "9", "10", "A"]
    assert set(chart) >= {"hard", "soft", "pairs", "surrender"}
    assert main(["strategy", "--profile", "european-6d"]) == 0
    text = capsys.readouterr().out
    assert "Hard totals" in text and "Pairs" in text and "Surrender" in text


@pytest.mark.parametrize(
    "argv",
    [
        ["edge", "--profile", "no-such-profile"],
        ["strategy", "--profile", "/nonexistent/x.toml"],
        ["bench", "--profile", "nj-shoe", "--rounds", "0"],
        ["bench", "--profile", "nj-shoe", "--rounds", "10", "--spots", "8"],
        ["bench", "--profile", "nj-shoe", "--rounds", "10", "--workers", "0"],
    ],
)
def test_bad_input_exits_2_with_one_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"tablectl {argv[0]}:")


@pytest.mark.slow
def test_a_few_million_rounds_agree_with_the_calculation_within_three_standard_errors() -> None:
    rules = load_rules("nj-shoe")
    stats, interrupted = bench.run(rules, 3_000_000, seed=2026, workers=2)
    assert not interrupted and stats.rounds == 3_000_000
    theory = house_edge(rules).house_edge
    assert abs(stats.house_edge - theory) < 3 * stats.stderr, (stats.house_edge, theory, stats.stderr)


def test_a_ci_sized_bench_is_tight_enough_to_catch_a_natural_paid_even_money() -> None:
    """180,000 hands (60,000 rounds of three spots, about 3 s compiled): one standard error is about 0.36
    points of edge, and the bench must land within three of the calculation. An engine paying naturals 1:1
    while the profile says 3:2 moves the edge by about 2.2 points, more than five standard errors
    (measured: 5.5 to 6.3 over seeds 11 to 13), so it cannot pass."""
    rules = load_rules("house-h17")
    theory = house_edge(rules).house_edge
    stats = bench.run(rules, 60_000, seed=12, spots=3)[0]
    assert stats.stderr < 0.004 and abs(stats.house_edge - theory) < 3 * stats.stderr, (stats.house_edge, theory)
    paid_even = bench.run(dataclasses.replace(rules, natural_pays=(1, 1)), 60_000, seed=12, spots=3)[0]
    assert paid_even.house_edge - theory > 4 * paid_even.stderr, (paid_even.house_edge, theory)
