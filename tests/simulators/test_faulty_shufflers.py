"""The faulty simulated shufflers (simulators/shuffler.py) and the demo's shoes made with them.

``weak`` is one cut and one riffle (at most two rising sequences of the previous order); ``clumpy`` a
uniform shuffle of clumps of 2-3 cards. The demo's shoe ``n`` is the machine's shuffle of shoe ``n - 1``,
the same whether worked out in one go (a resumed demo) or shoe after shoe (a demo that never stopped).
"""

from __future__ import annotations

import asyncio
import itertools
import random
from collections import Counter

import pytest

from cardnotation import DECK
from controller.cli import main
from controller.profiles import load_rules
from controller.sim.dealer import SimulatedDealer
from drivers import shuffler as proto
from simulators import SimShuffler
from simulators.shuffler import SHUFFLERS, clumpy, one_pass, shuffle_with
from tests.simulators.conftest import capture_sends


def _rising_sequences(before: list[str], after: list[str]) -> int:
    """Bayer-Diaconis rising sequences of ``after`` against ``before`` (distinct cards)."""
    where = {card: i for i, card in enumerate(after)}
    return 1 + sum(1 for a, b in itertools.pairwise(before) if where[b] < where[a])


def test_one_pass_is_a_cut_and_one_riffle() -> None:
    rng = random.Random(1)
    deck = list(DECK)
    for _ in range(200):
        out = one_pass(deck, rng)
        assert sorted(out) == sorted(deck)
        assert _rising_sequences(deck, out) <= 2
    uniform = [_rising_sequences(deck, shuffle_with("good", deck, rng)) for _ in range(200)]
    assert min(uniform) > 10, "a good shuffle leaves about 26 rising sequences of 52 cards"


def test_clumpy_keeps_clumps_of_two_or_three_in_their_order() -> None:
    rng = random.Random(2)
    deck = list(DECK) * 6
    labels = [f"{i:03d}" for i in range(312)]  # 312 cards told apart
    out = [int(c) for c in clumpy(labels, rng)]
    assert sorted(out) == list(range(312))
    kept = sum(1 for a, b in itertools.pairwise(out) if b == a + 1)
    assert 25 < kept < 75, kept  # ~10 % of the cards start a clump of 2-3: ~47 neighbour pairs kept
    assert Counter(clumpy(deck, rng)) == Counter(deck)


def test_an_unknown_machine_is_refused() -> None:
    with pytest.raises(ValueError, match="one of good, weak, clumpy"):
        shuffle_with("sloppy", list(DECK), random.Random(1))
    with pytest.raises(ValueError):
        SimShuffler(shuffler="sloppy")
    with pytest.raises(ValueError):
        SimulatedDealer(load_rules("house-h17"), seed=1, table_id="t01", shuffler="sloppy")
    assert SHUFFLERS == ("good", "weak", "clumpy")


async def test_the_weak_simulated_shuffler_riffles_its_deck_set_s_previous_order() -> None:
    sim = SimShuffler(decks=1, seed=3, shuffle_time=0.0, shuffler="weak")
    capture_sends(sim)
    before = list(sim.sets["B"])
    sim._on_message(proto.START, b"B\x01")
    for _ in range(20):
        await asyncio.sleep(0)
    assert sim.shuffles == 1
    assert sorted(sim.sets["B"]) == sorted(before) and sim.sets["B"] != before
    assert _rising_sequences(before, sim.sets["B"]) <= 2


def test_the_demo_s_good_shoes_are_the_ones_a_seed_always_gave() -> None:
    rules = load_rules("house-h17")
    dealer = SimulatedDealer(rules, seed=9, table_id="t01")
    for n in (1, 2, 7):
        expected = list(DECK) * rules.decks
        random.Random(f"9:t01:shoe:{n}").shuffle(expected)
        assert dealer.shoe(n) == expected


@pytest.mark.parametrize("machine", ["weak", "clumpy"])
def test_a_faulty_machine_s_shoes_chain_and_are_the_same_resumed_or_not(machine: str) -> None:
    rules = load_rules("house-h17")
    straight = SimulatedDealer(rules, seed=5, table_id="t01", shuffler=machine)
    shoes = [list(straight.shoe(n)) for n in range(1, 8)]
    resumed = SimulatedDealer(rules, seed=5, table_id="t01", shuffler=machine)
    assert resumed.shoe(7) == shoes[6], "worked out in one go after a restart: the same seventh shoe"
    assert resumed.shoe(3) == shoes[2], "and back again"
    good = SimulatedDealer(rules, seed=5, table_id="t01")
    assert shoes[0] == good.shoe(1), "the first shoe is the seed's well-shuffled one"
    assert shoes[1] != good.shoe(2)
    for before, after in itertools.pairwise(shoes):
        assert Counter(before) == Counter(after)
    other_table = SimulatedDealer(rules, seed=5, table_id="t02", shuffler=machine)
    assert other_table.shoe(4) != shoes[3]
    if machine == "weak":
        single = SimulatedDealer(load_rules("house-h17", {"decks": 1}), seed=5, table_id="t01", shuffler="weak")
        assert _rising_sequences(single.shoe(3), single.shoe(4)) <= 2


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["demo", "--shuffler", "sloppy"], "--shuffler 'sloppy': one of good, weak, clumpy"),
        (["simulate", "shuffler", "--shuffler", "bogus"], "--shuffler 'bogus': one of good, weak, clumpy"),
        (["simulate", "shoe", "--shuffler", "weak"], "--shuffler: only the shuffler shuffles, not the shoe"),
    ],
)
def test_a_bad_shuffler_option_exits_2_with_one_line(argv: list[str], says: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and says in err, err
