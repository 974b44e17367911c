"""Property tests of the round engine (hypothesis): many consecutive rounds over random shoes, profiles, overrides,
wagers and legal decisions, driven the way the table's devices drive it.

Checked after every event: the hole card never shows in a public record or the snapshot before it is turned, and
an illegal event raises and leaves the table exactly as it was. Checked after every round: money is conserved,
the handle is every wager, cards are conserved, every hand is settled, and each payout and the dealer's drawing
agree with an independent reading of the rules.
"""

from __future__ import annotations

import copy
import random
import re
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.game import events as ev
from controller.game.cards import VALUE, shoe_of
from controller.game.croupier import Croupier
from controller.game.effects import Effect, Record, RequestPeek, StartShuffle
from controller.game.errors import GameError
from controller.game.rules import Rules, limits_refusal
from controller.game.snapshot import export_state, restore_state
from controller.game.table import Table
from controller.profiles import PROFILE_DIR, ProfileError, available_profiles, load_rules

PROFILES = available_profiles()
_VARIANTS = Path(tempfile.mkdtemp(prefix="profile-variants-"))
_BOUND = re.compile(r"\s*\[(fixed|at most [^\]]+|at least [^\]]+|[^\]\"]+ to [^\]\"]+)\]\s*$")


def variant_of(profile: str) -> str:
    """A copy of the shipped profile without the bounds its clauses write: the engine is tested on variants
    the rule text would refuse (e.g. one deck of european-6d), so that every combination keeps its invariants."""
    path = _VARIANTS / f"{profile}.toml"
    if not path.exists():
        text = (PROFILE_DIR / f"{profile}.toml").read_text()
        path.write_text("\n".join(_BOUND.sub("", line) for line in text.splitlines()) + "\n")
    return str(path)

OVERRIDES: dict[str, st.SearchStrategy[Any]] = {
    "decks": st.integers(1, 8),
    "spots": st.integers(1, 7),
    "dealer_hits_soft_17": st.booleans(),
    "dealer_blackjack_takes": st.sampled_from(["original", "all"]),
    "natural_pays": st.sampled_from(["3:2", "6:5", "2:1", "1:1"]),
    "ties": st.sampled_from(["push", "push_naturals_only", "house_wins"]),
    "double_on": st.sampled_from(["any", "9-11", "hard-9-11", "10-11"]),
    "double_after_split": st.booleans(),
    "split_by": st.sampled_from(["rank", "value"]),
    "max_hands": st.sampled_from([0, 2, 3, 4, 5]),
    "resplit_aces": st.booleans(),
    "split_aces_one_card": st.booleans(),
    "insurance": st.sampled_from(["none", "half", "up_to_half"]),
    "surrender": st.sampled_from(["none", "late", "european"]),
    "surrender_lost_to_blackjack": st.booleans(),
    "naturals_paid_at_once": st.booleans(),
    "burn": st.integers(0, 3),
    "penetration": st.sampled_from([0.5, 0.6, 0.75, 0.9]),
    "hole_card": st.sampled_from(["peek", "no_peek", "none"]),
}


@st.composite
def table_rules(draw: st.DrawFn) -> Rules:
    profile = draw(st.sampled_from(PROFILES))
    keys = draw(st.lists(st.sampled_from(sorted(OVERRIDES)), max_size=6, unique=True))
    overrides = {k: draw(OVERRIDES[k]) for k in keys}
    if "hole_card" in overrides:
        overrides["peek_on"] = ["A", "T"] if overrides["hole_card"] == "peek" else []
    try:
        return load_rules(variant_of(profile), overrides)
    except ProfileError:
        # a contradiction (e.g. european surrender with a peek): fall back to the profile as shipped
        return load_rules(profile)


# ---------------------------------------------------------------------------------------------------------------
# the driver: plays the shoe, shuffler, peek reader, chip sensors and dealer


class Stalled(Exception):
    pass


class DriverShoe:
    """The driver's shoe for the croupier: a seeded shoe, the cards of each round kept as discards for
    the NJ 19:47-2.15(f) reshuffle, with the engine's state checked at each shuffle."""

    def __init__(self, driver: Driver) -> None:
        self.d = driver

    def draw(self, why: str) -> str:
        d = self.d
        card = d.shoe[d.pos]
        d.pos += 1
        d.round_cards.append(card)
        return card

    def cut_card_next(self) -> bool:
        d = self.d
        return not d.discard_shoe and d.pos >= d.rules.cut_card_index

    def empty(self) -> bool:
        d = self.d
        if d.pos >= len(d.shoe) and not d.discards:
            raise Stalled("no discards to reshuffle")
        return d.pos >= len(d.shoe)

    def shuffle(self) -> ev.ShuffleDone:
        d = self.d
        d.shoe = shoe_of(d.rules.decks)
        d.rng.shuffle(d.shoe)
        d.pos = 0
        d.discards = []
        d.discard_shoe = False
        return ev.ShuffleDone(count=len(d.shoe))

    def shuffle_discards(self, count: int) -> None:
        """NJ 19:47-2.15(f): the discards are shuffled and dealt; one burnt; the round completed."""
        d = self.d
        assert d.table.snapshot()["awaiting"] == "discard_shuffle"
        assert not d.table.wants_card
        assert count == len(d.discards), "the discard reshuffle must take every discard"
        d.shoe = list(d.discards)
        d.rng.shuffle(d.shoe)
        d.pos = 0
        d.discards = []
        d.discard_shoe = True


class Driver:
    def __init__(self, rules: Rules, rng: random.Random, table_cls: type[Table] = Table) -> None:
        self.rules = rules
        self.rng = rng
        self.table = table_cls(rules)
        self.shoe: list[str] = []
        self.pos = 0
        self.cut_fed = False
        self.discards: list[str] = []  # cards of settled rounds since the last full shuffle
        self.round_cards: list[str] = []  # cards drawn in the current round
        self.records: list[Record] = []
        self.peeks_asked = 0
        self.discard_shoe = False
        self.rounds = 0
        self.probes = 0
        self.croupier = Croupier(self.table, DriverShoe(self), self.feed)  # the dealer, the shoe, the peek reader

    # -- feeding, with the per-event checks

    def feed(self, event: ev.Event) -> list[Effect]:
        t = self.table
        hole_hidden_before = len(t.dealer) >= 2 and not t.hole_revealed
        hole = t.dealer[1] if len(t.dealer) >= 2 else None
        effects = t.handle(event)
        recs = [e for e in effects if isinstance(e, Record)]
        self.records.extend(recs)
        self._check_hole_privacy(event, recs, hole if hole_hidden_before else None)
        for e in effects:
            if isinstance(e, RequestPeek):
                self.peeks_asked += 1
            elif isinstance(e, StartShuffle) and e.reason.startswith("insufficient"):
                assert e.cards == len(self.discards), "the discard reshuffle must take every discard"
        return effects

    def _check_hole_privacy(self, event: ev.Event, recs: list[Record], hole_before: str | None) -> None:
        t = self.table
        hole_now = t.dealer[1] if len(t.dealer) >= 2 and not t.hole_revealed else None
        hole = hole_before or hole_now
        drawn = event.card if isinstance(event, ev.CardDrawn) else None
        for r in recs:
            if r.type == "hole_card":
                break  # turned: later records may show it
            if r.type == "card":
                if r.data.get("to") == "dealer" and r.data.get("hole"):
                    assert r.data.get("card") is None, f"hole card published: {r}"
                elif r.data.get("card") is not None:
                    assert r.data["card"] == drawn, f"a card record shows a card not just drawn: {r}"
                continue
            if hole is not None:
                assert hole not in repr(r.data), f"record {r.type} shows the hole card {hole}: {r.data}"
        if hole_now is not None:
            snap = t.snapshot()
            assert snap["dealer"]["cards"][1] is None
            assert snap["dealer"]["blackjack"] in (None, False)
            up = VALUE[t.dealer[0]]
            assert snap["dealer"]["total"] == (11 if up == 1 else up)

    # -- one round

    def play_round(self) -> None:
        t, rng, rules = self.table, self.rng, self.rules
        while t.shuffle_due:  # the shuffle when one is due (its burn comes once the bets are down)
            event = self.croupier.next_event()
            assert event is not None
            self.feed(event)
        if rng.random() < 0.05:  # the pit changes the limits between rounds
            lo = rng.choice([100, 500, 1000, 2500])
            hi = lo * rng.choice([1, 20, 100])
            if limits_refusal(t.rules, lo, hi) is None:  # inside what the rule text allows (else refused)
                self.feed(ev.LimitsSet(min_bet=lo, max_bet=hi))
        before_net, before_handle = t.house_net, t.handle_cents
        spots = rng.sample(range(1, rules.spots + 1), rng.randint(1, rules.spots))
        for n in spots:
            self.feed(ev.BetPlaced(spot=n, amount=self.wager()))
        if rng.random() < 0.1:  # a bet changed then removed before no more bets
            extra = next((n for n in range(1, rules.spots + 1) if n not in spots), None)
            if extra is not None:
                self.feed(ev.BetPlaced(spot=extra, amount=t.min_bet))
                self.feed(ev.BetPlaced(spot=extra, amount=0))
        self.round_cards = []
        burned_before_round = list(t.burned)  # the first bet of a round clears the last round's
        steps = 0
        self.croupier.play()
        self.feed(ev.NoMoreBets())
        while t.phase != "settled":
            steps += 1
            if steps > 2000:
                raise Stalled(f"round does not finish: {t.snapshot()}")
            if rng.random() < 0.15:
                self.probe_illegal()
            if (event := self.croupier.next_event()) is not None:
                self.feed(event)
            elif t.phase == "insurance":
                self.insurance_decisions()
                self.croupier.close_insurance()
            elif t.phase == "players":
                self.decide()
            else:
                raise Stalled(f"engine waits for nothing in phase {t.phase}: {t.snapshot()['awaiting']}")
        self.rounds += 1
        self.check_round(before_net, before_handle, burned_before_round)
        self.discards.extend(self.round_cards)
        if rng.random() < 0.2:
            self.probe_illegal()

    def wager(self) -> int:
        lo, hi = self.table.min_bet, self.table.max_bet
        choice = self.rng.random()
        if choice < 0.3:
            return lo
        if choice < 0.4:
            return hi
        if choice < 0.5:
            return self.rng.randint(lo, hi)  # odd cents too
        return self.rng.randrange(lo, hi + 1, 50) if hi - lo >= 50 else lo

    def insurance_decisions(self) -> None:
        t, rng = self.table, self.rng
        for decision in list(t.legal_actions()):
            spot, action = decision.spot, decision.action
            if decision not in t.legal_actions() or rng.random() < 0.5:
                continue
            amount = None
            s = t.spots[spot]
            if action == "insurance" and t.rules.insurance == "up_to_half":
                lo = max(1, t.min_bet // 2 if t.rules.insurance_min_half_table_min else 1)
                if s.wager // 2 >= lo:
                    amount = rng.randint(lo, s.wager // 2)
            self.feed(ev.Decision(spot=spot, action=action, amount=amount))  # type: ignore[arg-type]

    def decide(self) -> None:
        t, rng = self.table, self.rng
        legal: list[tuple[int, str]] = [(d.spot, d.action) for d in t.legal_actions()]
        if t.active is not None and t.hit_refusal(t.active[0]) is None:
            legal.append((t.active[0], "hit"))
        if not legal:
            raise Stalled(f"no legal action and no card wanted: {t.snapshot()}")
        spot, action = rng.choice(legal)
        if action == "hit":
            self.croupier.hit(spot)
            return
        amount = None
        if action == "double" and t.rules.double_for_less and rng.random() < 0.5:
            assert t.active is not None
            hand = t.spots[spot].hands[t.active[1]]
            lo = t.min_bet if t.rules.double_min_table_min else 1
            if lo <= hand.wager:
                amount = rng.randint(lo, hand.wager)
        self.feed(ev.Decision(spot=spot, action=action, amount=amount))  # type: ignore[arg-type]

    # -- illegal events leave the table as it was

    def probe_illegal(self) -> None:
        t, rng = self.table, self.rng
        legal = t.legal_actions()
        self.check_legal_actions_are_what_handle_takes(legal)
        candidates: list[ev.Event] = [ev.CardDrawn("1X"), ev.Decision(spot=1, action="stand", amount=-5)]
        for spot in range(1, 8):
            for action in ev.ACTIONS:
                decision = ev.Decision(spot=spot, action=action)
                if decision not in legal:
                    candidates.append(decision)
        if t.phase not in ("betting", "settled"):
            candidates += [ev.BetPlaced(spot=1, amount=t.min_bet), ev.NoMoreBets()]
        if not t.awaiting_peek:
            candidates.append(ev.PeekResult(blackjack=bool(rng.getrandbits(1))))
        if not t.insurance_open:
            candidates.append(ev.InsuranceClosed())
        if not t.shuffle_due and t.awaiting_discards is None:
            candidates.append(ev.ShuffleDone(count=t.rules.cards_in_shoe))
        if t.phase != "dealer":
            candidates.append(ev.DealerReveal())
        event = rng.choice(candidates)
        before = copy.deepcopy(t.snapshot())
        legal_before = t.legal_actions()
        dealer_before, seen_before = list(t.dealer), dict(t.seen)
        with pytest.raises(GameError):
            t.handle(event)
        self.probes += 1
        assert t.snapshot() == before, f"{event!r} was refused but changed the table"
        assert t.legal_actions() == legal_before
        assert t.dealer == dealer_before and t.seen == seen_before

    def check_legal_actions_are_what_handle_takes(self, legal: list[ev.Decision]) -> None:
        """python-chess's promise: every decision legal_actions() offers, handle() takes, and every other
        decision (any spot, any action, at its default amount) it refuses. Tried on copies of the table."""
        t = self.table
        state = export_state(t)
        for spot in range(1, 8):
            for action in ev.ACTIONS:
                decision = ev.Decision(spot=spot, action=action)
                if decision in legal:
                    restore_state(t.rules, state).handle(decision)  # must not raise
                else:  # a refusal changes nothing (probe_illegal checks that), so the table itself is asked
                    with pytest.raises(GameError):
                        t.handle(decision)

    # -- the round's invariants

    def check_round(self, before_net: int, before_handle: int, burned_before_round: list[str]) -> None:
        t, rules = self.table, self.rules
        assert t.phase == "settled"
        nets = sum(s.net for s in t.order)
        assert nets == -(t.house_net - before_net), "money: the spots' nets are the house's loss"
        wagered = sum(sum(h.wager for h in s.hands) + (s.insurance or 0) for s in t.order)
        assert t.handle_cents - before_handle == wagered, "handle: every wager, doubles, splits and insurance"
        on_table = Counter(t.dealer)
        for s in t.order:
            for h in s.hands:
                on_table.update(h.cards)
        assert not burned_before_round
        assert on_table + Counter(t.burned) == Counter(self.round_cards), (
            "cards: every card drawn is in a hand, the dealer's hand or burnt"
        )
        for s in t.order:
            for h in s.hands:
                assert h.payout is not None and h.outcome is not None, f"spot {s.number}: hand not settled"
            if s.insurance is not None:
                assert s.insurance_payout is not None
        assert all(n <= rules.decks for n in t.seen.values())
        self.check_settlement()
        self.check_dealer()

    def check_settlement(self) -> None:
        """Each payout from the rule texts, computed independently of the engine."""
        t, r = self.table, self.rules
        d = t.dealer
        dealer_bj = len(d) == 2 and sorted((VALUE[d[0]], VALUE[d[1]])) == [1, 10]
        dtotal = _total(d)
        num, den = r.natural_pays
        for s in t.order:
            if s.insurance is not None:
                assert s.insurance_payout == (2 * s.insurance if dealer_bj else -s.insurance)
            original_only_loss = 0
            for h in s.hands:
                natural = len(s.hands) == 1 and len(h.cards) == 2 and _total(h.cards) == 21
                if h.outcome == "surrender":
                    assert len(h.cards) == 2 and len(s.hands) == 1
                    lost = h.wager if dealer_bj and r.surrender_lost_to_blackjack else h.wager - h.wager // 2
                    expected: int | None = -lost
                elif h.outcome == "even_money":
                    assert natural and r.even_money and VALUE[d[0]] == 1
                    expected = h.wager
                elif natural and dealer_bj:
                    expected = -h.wager if r.ties == "house_wins" else 0
                elif natural:
                    expected = h.wager * num // den
                elif dealer_bj:
                    if r.dealer_blackjack_takes == "original" and r.hole_card != "peek":
                        original_only_loss += h.payout or 0
                        expected = None
                    else:
                        expected = -h.wager
                elif _total(h.cards) > 21:
                    expected = -h.wager
                elif dtotal > 21 or _total(h.cards) > dtotal:
                    expected = h.wager
                elif _total(h.cards) < dtotal or r.ties != "push":
                    expected = -h.wager
                else:
                    expected = 0
                if expected is not None:
                    assert h.payout == expected, (
                        f"spot {s.number} {h.cards} v dealer {d}: payout {h.payout}, rules say {expected}"
                    )
                if h.doubled:
                    assert len(h.cards) == 3 or _total(h.cards[:2]) > 21
                assert len(h.cards) >= 2
            if original_only_loss:
                assert original_only_loss == -s.wager, "dealer blackjack takes the original wager only"

    def check_dealer(self) -> None:
        """The dealer draws to 17 (and on soft 17 where the house hits it), and only while a hand stands."""
        t, r = self.table, self.rules
        d = t.dealer
        live = False
        for s in t.order:
            for h in s.hands:
                natural = len(s.hands) == 1 and len(h.cards) == 2 and _total(h.cards) == 21
                if h.outcome not in ("surrender", "even_money") and not natural and _total(h.cards) <= 21:
                    live = True
        if not live:
            assert len(d) <= 2, f"dealer drew {d} with no hand standing"
            return
        assert len(d) >= 2
        for n in range(2, len(d) + 1):
            total, soft = _total_soft(d[:n])
            must_hit = total < 17 or (total == 17 and soft and r.dealer_hits_soft_17)
            if n == 2 and total == 21:
                must_hit = False
            if n < len(d):
                assert must_hit, f"dealer drew on {d[:n]} where the rule says stand"
            else:
                assert not must_hit, f"dealer stood on {d} where the rule says draw"


def _total_soft(cards: list[str]) -> tuple[int, bool]:
    total = sum(VALUE[c] for c in cards)
    if any(VALUE[c] == 1 for c in cards) and total <= 11:
        return total + 10, True
    return total, False


def _total(cards: list[str]) -> int:
    return _total_soft(cards)[0]


def play(rules: Rules, seed: int, rounds: int, table_cls: type[Table] = Table) -> Driver:
    driver = Driver(rules, random.Random(seed), table_cls)
    driver.feed(ev.TableOpened(now=0.0))
    try:
        for _ in range(rounds):
            driver.play_round()
    except Stalled as e:
        if "no discards" not in str(e):
            raise
    return driver


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rules=table_rules(), seed=st.integers(0, 2**32 - 1), rounds=st.integers(1, 25))
def test_rounds_keep_every_invariant(rules: Rules, seed: int, rounds: int) -> None:
    driver = play(rules, seed, rounds)
    assert driver.rounds >= 1 or not driver.discards


@settings(max_examples=80, deadline=None)
@given(profile=st.sampled_from(PROFILES), seed=st.integers(0, 2**32 - 1))
def test_many_rounds_through_reshuffles(profile: str, seed: int) -> None:
    """Small shoes so every example crosses cut cards, full reshuffles and the insufficient-cards procedure."""
    overrides = {"decks": 1, "penetration": 0.9, "second_cut_card": False, "max_bet": load_rules(profile).min_bet * 4}
    rules = load_rules(variant_of(profile), overrides)
    driver = play(rules, seed, 40)
    assert driver.rounds >= 10
    assert driver.probes > 0


def test_insufficient_cards_procedure_is_exercised() -> None:
    """The driver really crosses the NJ 19:47-2.15(f) path somewhere in a few seeds."""
    seen = False
    for seed in range(40):
        driver = play(load_rules("nj-shoe", {"decks": 1, "penetration": 0.9, "spots": 7}), seed, 30)
        if any(r.type == "shuffle_done" and r.data.get("discards") for r in driver.records):
            seen = True
            break
    assert seen


# ---------------------------------------------------------------------------------------------------------------
# the checks themselves can fail


class _OverpayingTable(Table):
    def _pay(self, spot: Any, idx: int, hand: Any, outcome: str, payout: int) -> None:
        super()._pay(spot, idx, hand, outcome, payout + 1 if outcome == "win" else payout)


class _LeakyTable(Table):
    def _deal(self, card: str) -> None:
        super()._deal(card)
        if len(self.dealer) == 2 and self.deal_pos == len(self.deal_plan) and self.narrate:
            self._record("dealer_debug", cards=list(self.dealer))


class _GreedyDealerTable(Table):
    def _dealer_wants_card(self) -> bool:
        return len(self.dealer) < 2 or (self.dealer_total()[0] < 18 and self._dealer_play == "full")


@pytest.mark.parametrize("cls", [_OverpayingTable, _LeakyTable, _GreedyDealerTable])
def test_invariant_checks_catch_a_broken_engine(cls: type[Table]) -> None:
    with pytest.raises(AssertionError):
        for seed in range(10):
            play(load_rules("nj-shoe", {"decks": 2}), seed, 20, cls)
