"""The shuffle-quality scorer and monitor on their own (controller/analytics/shuffle_quality.py): pure, seeded shoes.

A good shuffle passes and leaves z-scores centred on 0 with unit spread (the null moments are exact for a
shoe of several full decks, duplicates included); a one-pass riffle fails on every trace; the table seeing
only part of each shoe (the cut card, a hole card never turned) still tells them apart.
"""

from __future__ import annotations

import random
import statistics
from dataclasses import replace

import pytest

from cardnotation import DECK, shoe_of
from controller.analytics.shuffle_quality import (
    MIN_CARDS,
    THRESHOLD,
    ShuffleMonitor,
    ShuffleScore,
    binomial_z,
    score_shoe,
    shuffle_figures,
)
from simulators.shuffler import clumpy, one_pass, shuffle_with


def _shuffled(decks: int, rng: random.Random) -> list[str]:
    return shuffle_with("good", shoe_of(decks), rng)


def _judge(prev: list[str], new: list[str], decks: int, seen: int | None = None) -> ShuffleScore:
    seen = int(52 * decks * 0.75) if seen is None else seen
    score = score_shoe(prev[:seen], new[:seen], decks)
    assert score is not None
    return score


@pytest.mark.parametrize("decks", [1, 2, 6, 8])
def test_good_shuffles_pass_and_their_z_scores_are_centred_with_unit_spread(decks: int) -> None:
    rng = random.Random(100 + decks)
    prev = _shuffled(decks, rng)
    scores = []
    for _ in range(300):
        new = shuffle_with("good", prev, rng)
        scores.append(_judge(prev, new, decks))
        prev = new
    assert sum(not s.passed for s in scores) == 0
    for name in ("rising_z", "pairs_z", "correlation_z"):
        values = [getattr(s, name) for s in scores]
        # exact null moments: a statistic that ignored the duplicate cards would sit far off 0 or spread wide
        assert abs(statistics.fmean(values)) < 0.25, (name, statistics.fmean(values))
        assert 0.75 < statistics.stdev(values) < 1.25, (name, statistics.stdev(values))


@pytest.mark.parametrize("decks", [1, 6, 8])
def test_a_one_pass_riffle_fails_on_its_rising_sequences_and_neighbour_pairs(decks: int) -> None:
    rng = random.Random(7 + decks)
    for _ in range(30):
        prev = _shuffled(decks, rng)
        score = _judge(prev, one_pass(prev, rng), decks)
        assert not score.passed
        assert score.rising_z > THRESHOLD and score.pairs_z > THRESHOLD, score
        assert score.rising_forward > 2 * score.rising_backward


def test_a_shoe_not_shuffled_at_all_fails_on_all_three_traces() -> None:
    prev = _shuffled(6, random.Random(3))
    score = _judge(prev, list(prev), 6)
    assert min(score.rising_z, score.pairs_z, score.correlation_z) > THRESHOLD, score
    assert score.correlation_r > 0.2


def test_partial_observation_short_prefixes_and_unturned_hole_cards() -> None:
    rng = random.Random(11)
    for _ in range(20):
        prev = _shuffled(6, rng)
        weak, good = one_pass(prev, rng), shuffle_with("good", prev, rng)
        # a shoe left after 80 cards (the table closed), judged against a previous one seen to its cut card
        short = score_shoe(prev[:234], weak[:80], 6)
        assert short is not None and not short.passed
        # every 9th card dealt face down and never turned: unknown in both shoes
        hidden_prev: list[str | None] = [None if i % 9 == 4 else c for i, c in enumerate(prev[:234])]
        hidden_weak: list[str | None] = [None if i % 9 == 4 else c for i, c in enumerate(weak[:234])]
        hidden_good: list[str | None] = [None if i % 9 == 4 else c for i, c in enumerate(good[:234])]
        weak_score = score_shoe(hidden_prev, hidden_weak, 6)
        good_score = score_shoe(hidden_prev, hidden_good, 6)
        assert weak_score is not None and not weak_score.passed
        assert good_score is not None and good_score.passed
        assert weak_score.cards <= 234 - 26
    prev = _shuffled(6, rng)
    assert score_shoe(prev[:MIN_CARDS - 1], prev[:MIN_CARDS - 1], 6) is None, "too few cards to tell"
    assert score_shoe(prev, [None] * 300, 6) is None


def test_duplicate_cards_only_in_both_shoes_are_matched_by_identity() -> None:
    # a shoe of one card repeated: every neighbour pair "survives", and so it does under any shuffle:
    # the expected count says so, and the score does not call it order
    prev = ["AS"] * 104
    score = score_shoe(prev, list(prev), 2)
    assert score is not None
    assert score.pairs_survived == 103 and score.pairs_expected == pytest.approx(103 * 2 * 1 / (104 * 103))
    # the pair (AS, AS) is likely in a 2-deck shoe only as 1/(104*103)*2 per position: 103 of them is order
    assert score.pairs_z > THRESHOLD


def test_the_milder_fault_raises_the_neighbour_pairs_most() -> None:
    rng = random.Random(5)
    zs = []
    for _ in range(40):
        prev = _shuffled(6, rng)
        zs.append(_judge(prev, clumpy(prev, rng), 6))
    assert statistics.fmean(s.pairs_z for s in zs) > 3.0
    assert statistics.fmean(s.pairs_z for s in zs) > statistics.fmean(s.rising_z for s in zs)


def test_binomial_z_agrees_with_the_normal_approximation_for_large_counts() -> None:
    n, p = 10_000, 0.3
    mean, sd = n * p, (n * p * (1 - p)) ** 0.5
    assert binomial_z(round(mean), n, p) == pytest.approx(0.0, abs=0.02)
    assert binomial_z(round(mean + 3 * sd), n, p) == pytest.approx(3.0, abs=0.05)
    assert binomial_z(n, n, p) == pytest.approx(37.0)  # beyond what a float can hold: clamped
    assert binomial_z(0, 0, 0.5) == 0.0


# -- the monitor ----------------------------------------------------------------------------------------


def _deal(monitor: ShuffleMonitor, cards: list[str], upto: int = 234) -> None:
    for card in cards[:upto]:
        monitor.card(card)


def test_the_monitor_judges_each_shoe_at_its_end_against_the_one_before() -> None:
    rng = random.Random(1)
    monitor = ShuffleMonitor(6)
    _deal(monitor, list(DECK) * 2)  # cards before the first shuffle: a shoe seen in part, ignored
    first = _shuffled(6, rng)
    assert monitor.new_shoe(1) is None
    _deal(monitor, first)
    assert monitor.new_shoe(2) is None, "the first shoe has no previous order"
    second = one_pass(first, rng)
    _deal(monitor, second)
    failed = monitor.new_shoe(3)
    assert failed is not None and not failed.passed and failed.shoe == 2 and failed.deck_set == "A"
    third = shuffle_with("good", second, rng)
    _deal(monitor, third)
    passed = monitor.new_shoe(4)
    assert passed is not None and passed.passed and passed.shoe == 3
    assert monitor.recent(1) == [passed] and monitor.recent() == [failed, passed] and monitor.recent(0) == []
    assert passed == replace(_judge(second, third, 6), shoe=3), "the same figures as the scorer on the two orders"


def test_a_face_down_card_takes_its_place_in_the_order_at_its_reveal() -> None:
    rng = random.Random(2)
    first = _shuffled(6, rng)
    second = one_pass(first, rng)
    plain, hidden = ShuffleMonitor(6), ShuffleMonitor(6)
    for m in (plain, hidden):
        m.new_shoe(1)
        _deal(m, first)
        m.new_shoe(2)
    for i, card in enumerate(second[:230]):  # every hole card turned before the cut card
        plain.card(card)
        if i % 10 == 3:
            hidden.card(None)  # the hole card leaves the shoe face down
        elif i % 10 == 7:
            hidden.card(card)
            hidden.reveal(second[i - 4])  # turned a few cards later
        else:
            hidden.card(card)
    assert plain.new_shoe(3) == hidden.new_shoe(3)


def test_a_discard_reshuffle_and_new_decks_break_the_chain_of_orders() -> None:
    rng = random.Random(4)
    first = _shuffled(6, rng)
    second = one_pass(first, rng)
    third = one_pass(second, rng)
    m = ShuffleMonitor(6)
    m.new_shoe(1)
    _deal(m, first)
    m.new_shoe(2)
    _deal(m, second, 100)
    m.interrupt()  # the discards were shuffled into the shoe: what follows is not the shoe's order
    _deal(m, second[100:])
    judged = m.new_shoe(3)
    assert judged is not None and judged.cards <= 100, "judged on the cards before the reshuffle"
    _deal(m, third)
    assert m.new_shoe(4) is None, "the reshuffled shoe is no previous order"
    fourth = one_pass(third, rng)
    _deal(m, fourth)
    m.forget()  # new decks come in at the next shuffle: the shoe being dealt is still judged
    judged = m.new_shoe(5)
    assert judged is not None and judged.shoe == 4 and not judged.passed
    _deal(m, one_pass(fourth, rng))
    assert m.new_shoe(6) is None, "the new decks' first shoe has no previous order"
    m.reset(2)
    assert m.decks == 2 and m.new_shoe(7) is None


def test_deck_sets_keep_their_own_previous_order() -> None:
    rng = random.Random(6)
    a1, b1 = _shuffled(6, rng), _shuffled(6, rng)
    a2 = one_pass(a1, rng)
    m = ShuffleMonitor(6)
    m.new_shoe(1, "A")
    _deal(m, a1)
    m.new_shoe(2, "B")
    _deal(m, b1)
    m.new_shoe(3, "A")
    _deal(m, a2)
    judged = m.new_shoe(4, "B")
    assert judged is not None and judged.deck_set == "A" and not judged.passed, "A judged against A's last order"


def test_the_score_s_json_and_the_analytics_figures() -> None:
    rng = random.Random(8)
    prev = _shuffled(6, rng)
    score = _judge(prev, one_pass(prev, rng), 6)
    body = score.to_json()
    assert body["passed"] is False and body["threshold"] == THRESHOLD and body["score"] == round(score.score, 2)
    assert set(body["components"]) == {"rising_sequences", "neighbour_pairs", "position_correlation"}
    assert body["components"]["neighbour_pairs"]["survived"] == score.pairs_survived
    assert body["cards"] == score.cards > 200
    assert shuffle_figures([score]) == {"threshold": THRESHOLD, "shoes": [body]}
    assert ShuffleMonitor(6, threshold=9.5).threshold == 9.5
    with pytest.raises(ValueError):
        ShuffleMonitor(9)
