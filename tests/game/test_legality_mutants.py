"""Each refusal of controller/game/legality.py in full: its words, the rule it breaks and the profile option it
enforces (the ``refused`` record names both, and the clause the profile cites for that option). The golden
scenarios check the words; these check the rest, at each limit (issue 39)."""

from __future__ import annotations

from controller.game.hand import Hand, Spot
from controller.game.legality import (
    Refusal,
    double_amount,
    double_refusal,
    even_money_refusal,
    hit_refusal,
    insurance_amount,
    split_amount_refusal,
    split_refusal,
    stand_refusal,
    surrender_refusal,
)
from controller.profiles import load_rules

NY, EU, H17 = load_rules("ny-4620"), load_rules("european-6d"), load_rules("house-h17")
SHOE, NJ_HAND, NJ_SHOE = load_rules("house-shoe-surrender"), load_rules("nj-hand-dealt"), load_rules("nj-shoe")


def spot(*cards: str, wager: int = 500, number: int = 1) -> Spot:
    s = Spot(number, wager)
    for c in cards:
        s.hands[0].add(c)
    return s


def hand(*cards: str, **flags: bool | str) -> Hand:
    h = Hand(500, list(cards))
    for name, value in flags.items():
        setattr(h, name, value)
    return h


def test_stand_and_hit() -> None:
    assert stand_refusal(hand("TC")) == Refusal("a split hand takes its second card first", "split")
    assert stand_refusal(hand("TC", "5D", doubled=True)) == Refusal("a doubled hand takes its one card", "double")
    assert stand_refusal(hand("TC", "5D")) is None
    assert hit_refusal(NY, hand("TC", "5D", "3H", doubled=True)) == Refusal("a doubled hand receives one card only",
                                                                           "double")
    assert hit_refusal(NY, hand("AC", "5D", split_aces=True)) == Refusal("split aces receive one card each", "split",
                                                                        "split_aces_one_card")
    assert hit_refusal(NY, hand("TC", "5D", "6H")) == Refusal("the hand stands on 21", "hit")
    assert hit_refusal(NY, hand("TC", "5D", status="active")) is None


def test_double() -> None:
    first_two = Refusal("doubling is allowed on the first two cards of a hand only", "double")
    assert double_refusal(NY, hand("5C", "5D", "AH")) == first_two
    assert double_refusal(NY, hand("5C", "5D", doubled=True)) == first_two
    assert double_refusal(NY, hand("AC", "KD")) == Refusal("no double on blackjack or a two-card 21 (NJ 19:47-2.10(a))",
                                                          "double")
    assert double_refusal(NY, hand("5C", "5D", from_split=True)) == Refusal(
        "ny-4620 does not allow doubling after a split", "double", "double_after_split")
    assert double_refusal(H17, hand("AC", "9D", from_split=True, split_aces=True)) == Refusal(
        "split aces receive one card each", "double", "split_aces_one_card")
    assert double_refusal(NY, hand("5C", "4D")) == Refusal("ny-4620 allows doubling only on 10 or 11", "double",
                                                           "double_on")
    assert double_refusal(NY, hand("6C", "4D")) is None and double_refusal(NY, hand("6C", "5D")) is None
    assert double_refusal(NY, hand("AC", "9D")) is None, "A9 is 10 with the ace as one"
    assert double_refusal(NJ_HAND, hand("AC", "8D")) == Refusal("nj-hand-dealt allows doubling only on a hard 9, 10 "
                                                                "or 11", "double", "double_on")
    assert double_refusal(SHOE, hand("4C", "4D")) == Refusal("house-shoe-surrender allows doubling only on 9, 10 or "
                                                             "11", "double", "double_on")
    assert double_refusal(SHOE, hand("4C", "5D")) is None


def test_double_amount() -> None:
    assert double_amount(NY, 500, None, 100) == 500 and double_amount(NY, 500, 500, 100) == 500
    assert double_amount(NY, 500, 200, 100) == Refusal("ny-4620 requires the double to equal the wager (5)", "double",
                                                       "double_for_less")
    assert double_amount(EU, 500, 600, 100) == Refusal("a double may not exceed the wager (5)", "double",
                                                       "double_for_less")
    assert double_amount(EU, 500, 99, 100) == Refusal("a double for less must be at least the table minimum (1)",
                                                      "double", "double_min_table_min")
    assert double_amount(EU, 500, 100, 100) == 100, "exactly the table minimum"
    assert double_amount(NJ_SHOE, 500, 1, 100) == 1, "no minimum for a double for less there"


def test_split() -> None:
    assert split_amount_refusal(500, 500) is None
    assert split_amount_refusal(500, 400) == Refusal("a split wagers an amount equal to the original wager (5), not 4",
                                                     "split")
    assert split_refusal(NY, spot("8C", "8D", "2H"), spot("8C", "8D", "2H").hands[0]) == Refusal(
        "only a two-card hand can be split", "split")
    s = spot("KC", "QD")
    assert split_refusal(EU, s, s.hands[0]) == Refusal("european-6d splits identical ranks only", "split", "split_by")
    assert split_refusal(NY, s, s.hands[0]) is None
    s = spot("KC", "9D")
    assert split_refusal(NY, s, s.hands[0]) == Refusal("not a pair", "split")
    s = spot("8C", "8D")
    s.hands.extend([Hand(500, ["8H", "2C"], from_split=True), Hand(500, ["8S"], from_split=True)])
    assert split_refusal(SHOE, s, s.hands[0]) == Refusal("house-shoe-surrender allows at most 3 hands per spot",
                                                         "split", "max_hands")
    s.hands.pop()
    assert split_refusal(SHOE, s, s.hands[0]) is None, "a third hand is within the limit"
    s = spot("AC", "AD")
    s.hands[0].split_aces = True
    assert split_refusal(H17, s, s.hands[0]) == Refusal("house-h17 does not allow resplitting aces", "split",
                                                        "resplit_aces")
    assert split_refusal(NY, s, s.hands[0]) is None


def test_surrender() -> None:
    s = spot("TC", "6D")
    assert surrender_refusal(NY, s, up_card="TD", third_card_dealt=False, active=(1, 0)) == Refusal(
        "ny-4620 does not offer surrender", "surrender", "surrender")
    assert surrender_refusal(SHOE, s, up_card="TD", third_card_dealt=False, active=(1, 0)) is None
    assert surrender_refusal(SHOE, s, up_card="TD", third_card_dealt=False, active=(2, 0)) == Refusal(
        "not this spot's turn", "surrender")
    assert surrender_refusal(SHOE, s, up_card="TD", third_card_dealt=False, active=(1, 1)) == Refusal(
        "not this spot's turn", "surrender")
    three = spot("TC", "3D", "3H")
    assert surrender_refusal(SHOE, three, up_card="TD", third_card_dealt=False, active=(1, 0)) == Refusal(
        "surrender is allowed on the first two cards only, before any other decision", "surrender")
    natural = spot("AC", "KD")
    natural.hands[0].status = "blackjack"
    assert surrender_refusal(SHOE, natural, up_card="TD", third_card_dealt=False, active=(1, 0)) == Refusal(
        "a natural is not surrendered", "surrender")
    assert surrender_refusal(EU, s, up_card="AD", third_card_dealt=False, active=None) == Refusal(
        "no surrender against a dealer ace (European rules)", "surrender", "surrender")
    assert surrender_refusal(EU, s, up_card="TD", third_card_dealt=True, active=None) == Refusal(
        "surrender closes when the first player receives a third card (European rules)", "surrender", "surrender")
    assert surrender_refusal(EU, s, up_card="TD", third_card_dealt=False, active=None) is None
    played = spot("TC", "6D")
    played.hands[0].status = "stood"
    assert surrender_refusal(EU, played, up_card="TD", third_card_dealt=False, active=None) == Refusal(
        "this hand has already been played", "surrender")


def test_even_money_and_insurance() -> None:
    assert even_money_refusal(H17, hand("AC", "KD")) == Refusal("house-h17 does not offer even money", "even_money",
                                                               "even_money")
    assert even_money_refusal(NJ_SHOE, hand("AC", "9D")) == Refusal("even money is offered on a natural only",
                                                                    "even_money")
    assert even_money_refusal(NJ_SHOE, hand("AC", "KD")) is None
    assert insurance_amount(NY, 500, None, 100) == 250 and insurance_amount(NY, 500, 250, 100) == 250
    assert insurance_amount(NY, 500, 200, 100) == Refusal(
        "ny-4620 requires insurance of exactly half the wager (2.50)", "insurance", "insurance")
    assert insurance_amount(NY, 501, None, 100) == Refusal("half of this wager is not a whole number of cents",
                                                          "insurance", "insurance")
    assert insurance_amount(NJ_SHOE, 500, 251, 100) == Refusal("insurance may be at most half the wager (2.50)",
                                                              "insurance", "insurance")
    assert insurance_amount(NJ_SHOE, 500, 1, 100) == 1 and insurance_amount(NJ_SHOE, 500, 250, 100) == 250
    assert insurance_amount(NJ_SHOE, 500, 0, 100) == Refusal("insurance must be at least half the table minimum "
                                                            "(0.01)", "insurance", "insurance_min_half_table_min")
    assert insurance_amount(EU, 500, 49, 100) == Refusal("insurance must be at least half the table minimum (0.50)",
                                                         "insurance", "insurance_min_half_table_min")
    assert insurance_amount(EU, 500, 50, 100) == 50
    assert insurance_amount(NY, 0, None, 100) == Refusal("insurance must be more than zero", "insurance", "insurance")


def test_doubling_ranges_at_their_ends() -> None:
    for rules, low, high in ((NY, ("5C", "5D"), ("6C", "5D")), (NJ_HAND, ("5C", "4D"), ("6C", "5D")),
                             (SHOE, ("5C", "4D"), ("6C", "5D"))):
        assert double_refusal(rules, hand(*low)) is None and double_refusal(rules, hand(*high)) is None
        refused = double_refusal(rules, hand("7C", "5D"))  # hard 12: one past the top
        assert refused is not None and refused.option == "double_on"


def test_a_hand_at_21_or_not_in_play_takes_no_card() -> None:
    assert hit_refusal(NY, hand("TC", "5D", "6H", status="active")) == Refusal("the hand stands on 21", "hit")
    assert hit_refusal(NY, hand("TC", "5D", status="stood")) == Refusal("the hand stands on 15", "hit")
    assert hit_refusal(NY, hand("TC", "5D", "5H", status="active")) is None, "20 may still hit"
