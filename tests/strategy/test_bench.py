"""The bench plays the real engine and agrees with the theory; the commands keep their contract."""

from __future__ import annotations

import json
import random

import pytest

from controller import bench
from controller.cli import main
from controller.game.rules import Rules
from controller.profiles import available_profiles, load_rules
from controller.strategy.edge import house_edge
from controller.strategy.player import BenchStats, BenchTable


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
    assert (a.net, a.sum_sq, a.handle) == (b.net, b.sum_sq, b.handle)
    assert (a.net, a.sum_sq) != (c.net, c.sum_sq)


def test_workers_play_independent_streams_and_merge() -> None:
    rules = Rules(decks=6)
    stats, interrupted = bench.run(rules, 6000, seed=3, workers=2)
    assert not interrupted
    assert stats.rounds == 6000
    one = bench.run_inline(rules, 3000, 3, 1)[0]
    assert stats.net != 2 * one.net  # the second worker is not a copy of the first
    assert bench.split_rounds(10, 3) == [4, 3, 3]


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
