"""A simulated table for the bench: a seeded shoe, basic-strategy players, the real engine.

:class:`BenchTable` plays the parts the devices and the dealer play at a real table, around an
ordinary :class:`controller.game.table.Table` (``narrate=False``): it shuffles a shoe with a
``random.Random`` it is given (the engine itself stays free of randomness), reports the shuffle,
draws a card whenever the procedure calls for one (burns, the deal, hits, the dealer's draws),
brings out the cut card at the penetration of the rules, answers the peek reader from the hole
card it dealt, closes insurance (basic strategy never insures) and keys in each player's
basic-strategy decision. Every wager is settled by the engine; the bench only reads the nets.

Event objects are immutable, so the hot loop reuses prebuilt ones (one ``CardDrawn`` per card,
one ``Decision`` per spot and action) instead of building a new object for every step.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from controller.game import events as ev
from controller.game import legality
from controller.game.cards import DECK, VALUE
from controller.game.croupier import Croupier, ListShoe
from controller.game.hand import Hand, Spot
from controller.game.rules import Rules
from controller.game.table import Table
from controller.game.transitions import INSURANCE, SETTLED
from controller.strategy.chart import BasicStrategy, basic_strategy


@dataclass(slots=True)
class BenchStats:
    """Mergeable running totals of a bench run (money in cents)."""

    rounds: int = 0
    hands: int = 0  # spot-rounds: initial wagers
    wagered: int = 0  # initial wagers
    net: int = 0  # player net, all spots
    sum_sq: float = 0.0  # sum over rounds of (round net / unit)^2
    handle: int = 0  # all money wagered: doubles, splits, insurance included
    house_net: int = 0
    unit: int = 0  # the wager per spot
    spots: int = 0
    elapsed: float = 0.0
    shuffles: int = 0
    extra: dict[str, int] = field(default_factory=dict)

    def merge(self, other: BenchStats) -> None:
        self.rounds += other.rounds
        self.hands += other.hands
        self.wagered += other.wagered
        self.net += other.net
        self.sum_sq += other.sum_sq
        self.handle += other.handle
        self.house_net += other.house_net
        self.shuffles += other.shuffles
        self.unit = self.unit or other.unit
        self.spots = self.spots or other.spots
        for k, v in other.extra.items():
            self.extra[k] = self.extra.get(k, 0) + v

    @property
    def house_edge(self) -> float:
        """House win per initial wager (positive when the house wins)."""
        return -self.net / self.wagered if self.wagered else 0.0

    @property
    def stderr(self) -> float:
        """Standard error of :attr:`house_edge`, from the variance of each round's net."""
        n = self.rounds
        if n < 2 or not self.spots:
            return 0.0
        mean = self.net / self.unit / n
        var = (self.sum_sq / n - mean * mean) * n / (n - 1)
        return float((max(var, 0.0) / n) ** 0.5) / self.spots

    @property
    def hold(self) -> float:
        """House net over handle (every wager, doubles, splits and insurance included)."""
        return self.house_net / self.handle if self.handle else 0.0


def bench_wager(rules: Rules) -> int:
    """A wager within the limits that every payout (3:2, 6:5, half for surrender) divides exactly."""
    bet = max(rules.min_bet, 1000) if rules.max_bet >= 1000 else rules.min_bet
    bet = -(-bet // 10) * 10
    return bet if bet <= rules.max_bet else rules.min_bet


_DECISIONS: tuple[ev.Action, ...] = ("stand", "double", "split", "surrender")


def shuffle(rng: random.Random, cards: list[str]) -> None:
    """``rng.shuffle(cards)``: the same order of the cards and the same state of ``rng`` afterwards, about twice as
    fast interpreted and four times compiled (tests/strategy/test_bench.py compares the two).

    :meth:`random.Random.shuffle` is Fisher-Yates from the last position down, each index below ``n`` drawn by
    ``_randbelow_with_getrandbits``: ``getrandbits(k)`` for the bit length ``k`` of ``n``, again until it is below
    ``n``. The same draws here, without its two Python calls per card. A subclass of :class:`random.Random` may
    draw otherwise: it shuffles with its own method.
    """
    if type(rng) is not random.Random:
        rng.shuffle(cards)
        return
    getrandbits = rng.getrandbits
    n = len(cards)  # an index below n for position n - 1, from the last position down to the second
    while n > 1:
        k = n.bit_length()
        low = 1 << (k - 1)  # the least n of bit length k: every n down to it draws k bits
        for i in range(n - 1, low - 2, -1):  # position i, an index below i + 1
            j = getrandbits(k)
            while j > i:
                j = getrandbits(k)
            cards[i], cards[j] = cards[j], cards[i]
        n = low - 1


class BenchShoe(ListShoe):
    """The bench's shoe for the croupier: shuffled by the bench's ``random.Random``, the cut card at the
    profile's penetration, the discards shuffled back in when a round runs it dry (NJ 19:47-2.15(f))."""

    def __init__(self, rules: Rules, rng: random.Random) -> None:
        super().__init__(list(DECK) * rules.decks, rules.cut_card_index)
        self.rng = rng
        self.shuffles = 0

    def shuffle(self) -> ev.ShuffleDone:
        shuffle(self.rng, self.cards)
        self.pos = 0
        self.shuffles += 1
        return ev.ShuffleDone(count=len(self.cards))

    def shuffle_discards(self, count: int) -> None:
        # the cards on the table stay; the discards (the shoe's first ``count``) become the rest of the shoe
        discards = self.cards[:count]
        on_table = self.cards[count:]
        shuffle(self.rng, discards)
        self.cards = on_table + discards
        self.pos = len(on_table)


class BenchTable:
    """One simulated table: ``spots`` basic-strategy players on the real engine, seeded by ``rng``."""

    def __init__(
        self, rules: Rules, rng: random.Random, *, spots: int = 1, strategy: BasicStrategy | None = None
    ) -> None:
        if not 1 <= spots <= rules.spots:
            raise ValueError(f"spots must be 1 to {rules.spots} for {rules.name}")
        self.rules = rules
        self.rng = rng
        self.strategy = strategy or basic_strategy(rules)
        self.table = Table(rules, narrate=False)
        self.unit = bench_wager(rules)
        self.spot_numbers = list(range(1, spots + 1))
        self.shoe = BenchShoe(rules, rng)
        self.croupier = Croupier(self.table, self.shoe)  # the dealer, the shoe, the peek reader, the shuffler
        self._bets = [ev.BetPlaced(spot=n, amount=self.unit) for n in self.spot_numbers]
        self._decisions: dict[str, list[ev.Decision]] = {  # by action, then spot number - 1
            a: [ev.Decision(spot=n, action=a) for n in self.spot_numbers] for a in _DECISIONS
        }
        self._no_more_bets = ev.NoMoreBets()
        self._european = rules.surrender == "european"
        self.table.handle(ev.TableOpened(now=0.0))
        self.croupier.between_rounds()  # the first shuffle

    @property
    def shuffles(self) -> int:
        return self.shoe.shuffles

    # ------------------------------------------------------------------ one round

    def _decide(self, spot: Spot, hand: Hand, up: int) -> str:
        rules = self.rules
        cards = hand.cards
        total = hand.total
        if len(cards) != 2:
            return self.strategy.decide(total, hand.soft, False, False, False, False, up)
        if hand.split_aces and rules.split_aces_one_card:
            # an ace split and paired again: resplit when allowed, else it stands
            return "split" if legality.split_refusal(rules, spot, hand) is None else "stand"
        can_double = legality.double_refusal(rules, hand) is None
        pair = VALUE[cards[0]] == VALUE[cards[1]]
        # the split refusal only for a pair (the chart splits nothing else): a refusal is an object built
        can_split = pair and legality.split_refusal(rules, spot, hand) is None
        can_surrender = rules.surrender == "late" and len(spot.hands) == 1
        return self.strategy.decide(total, hand.soft, pair, can_double, can_split, can_surrender, up)

    def play_round(self) -> int:
        """Play one round to settlement; return the players' net in cents (all spots)."""
        t = self.table
        croupier = self.croupier
        croupier.between_rounds()  # the shuffle, when the last round brought out the cut card
        for bet in self._bets:
            t.handle(bet)
        t.handle(self._no_more_bets)
        euro_surrender = self._european
        euro_done = False
        up = 0  # the dealer's up card's value, once it is out
        while True:
            croupier.play()
            phase = t.phase
            if phase == SETTLED:
                break
            if phase == INSURANCE:
                croupier.close_insurance()  # basic strategy never insures
                continue
            if euro_surrender and not euro_done:
                euro_done = True
                self._european_surrenders()
                continue
            active = t.active
            if active is None:  # pragma: no cover - the engine moves on by itself
                break
            spot = t.spots[active[0]]
            if not up:
                up = VALUE[t.dealer[0]]
            action = self._decide(spot, spot.hands[active[1]], up)
            if action == "hit":
                croupier.hit(active[0])
            else:
                t.handle(self._decisions[action][active[0] - 1])
        net = 0
        for s in t.order:  # Spot.net, without a property read per spot
            net += s.insurance_payout or 0
            for h in s.hands:
                net += h.payout or 0
        return net

    def _european_surrenders(self) -> None:
        """European surrender is declared before the first player's third card: each spot that
        basic strategy surrenders does so as play starts."""
        t = self.table
        up = VALUE[t.dealer[0]]
        if up == 1:
            return
        for s in t.order:
            h = s.hands[0]
            if len(s.hands) != 1 or len(h.cards) != 2 or h.status not in ("waiting", "active"):
                continue
            pair = VALUE[h.cards[0]] == VALUE[h.cards[1]]
            can_double = legality.double_refusal(self.rules, h) is None
            can_split = pair and legality.split_refusal(self.rules, s, h) is None
            if self.strategy.decide(h.total, h.soft, pair, can_double, can_split, True, up) == "surrender":
                t.handle(self._decisions["surrender"][s.number - 1])

    def play(self, rounds: int, stats: BenchStats | None = None) -> BenchStats:
        """Play ``rounds`` rounds, adding to ``stats`` (a new one if None) after each round."""
        st = stats if stats is not None else BenchStats(unit=self.unit, spots=len(self.spot_numbers))
        t = self.table
        unit = self.unit
        k = len(self.spot_numbers)
        shuffles0 = self.shuffles
        handle0, house0 = t.handle_cents, t.house_net
        handle1, house1 = handle0, house0
        net_sum = 0
        sq = 0.0
        done = 0
        try:
            for _ in range(rounds):
                net = self.play_round()
                net_sum += net
                x = net / unit
                sq += x * x
                done += 1
                handle1, house1 = t.handle_cents, t.house_net
        finally:
            st.rounds += done
            st.hands += done * k
            st.wagered += done * k * unit
            st.net += net_sum
            st.sum_sq += sq
            # completed rounds only (an interrupted round is left out)
            st.handle += handle1 - handle0
            st.house_net += house1 - house0
            st.shuffles += self.shuffles - shuffles0
        return st
