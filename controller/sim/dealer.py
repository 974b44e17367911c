"""A simulated dealer and players: what a real table's people and devices would do next.

:meth:`SimulatedDealer.next_event` looks at the engine and returns the next input a
real table would produce: bets (chips on the spots), no more bets, a card out of the
shoe, the peek reader's answer, a player's decision, insurance closed, a shuffle.
It keeps no state of its own: every choice is a function of the seed, the table id
and the engine's state (round, shuffle count, cards dealt, hands), each drawn from a
``random.Random`` seeded by those. So a demo killed at any moment and restarted on
its journal makes exactly the same choices from where the journal left it, and the
same seed gives the same shoes, bets, decisions and settlements.

Players play the profile's basic strategy with occasional deviations the seed
decides, take insurance and surrender where the profile allows, sit at several
spots, and bet between the table limits. Regulars keep one spot and decide for
themselves (:mod:`controller.strategy.counter`): ``counter_spot`` seats a Hi-Lo
card counter, from the cards seen so far in the shoe.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from controller.contract.phases import Phase
from controller.game import events as ev
from controller.game.cards import DECK, VALUE
from controller.game.croupier import Croupier
from controller.game.effects import Record, RequestPeek
from controller.game.rules import Rules
from controller.game.table import Table
from controller.game.view import TableView
from controller.strategy.chart import BasicStrategy, basic_strategy
from controller.strategy.counter import CountingPlayer, Regular, count_in_round, seat_regulars
from simulators.shuffler import SHUFFLERS, shuffle_with

DEVIATION = 0.03  # chance a player departs from basic strategy on a decision


@lru_cache(maxsize=8)
def _strategy(rules: Rules) -> BasicStrategy:
    return basic_strategy(rules)


class _SeededShoe:
    """The simulated dealer's shoe for the croupier: the seeded order of the table's current shuffle,
    read at the table's own count of cards dealt (no state to lose in a restart)."""

    def __init__(self, dealer: SimulatedDealer, table: TableView) -> None:
        self.dealer = dealer
        self.table = table

    def draw(self, why: str) -> str:
        return self.dealer.next_card(self.table)

    def cut_card_next(self) -> bool:
        return self.table.cards_dealt >= self.dealer.rules.cut_card_index

    def empty(self) -> bool:
        return self.table.cards_dealt >= self.dealer.rules.cards_in_shoe

    def shuffle(self) -> ev.ShuffleDone:
        return ev.ShuffleDone(count=self.dealer.rules.cards_in_shoe, composition=self.dealer.composition())

    def shuffle_discards(self, count: int) -> None:  # pragma: no cover - the cut card comes out long before
        raise RuntimeError("the simulated shoe never runs out before its cut card")


class SimulatedDealer:
    """The people and devices at one simulated table (see the module docstring)."""

    def __init__(self, rules: Rules, *, seed: int, table_id: str, shuffler: str = "good",
                 counter_spot: int | None = None, regulars: tuple[Regular, ...] = ()) -> None:
        if shuffler not in SHUFFLERS:
            raise ValueError(f"shuffler must be one of {', '.join(SHUFFLERS)}, not {shuffler!r}")
        self.rules = rules
        self.seed = seed
        self.table_id = table_id
        #: the simulated shuffling machine (simulators/shuffler.py): ``weak`` and ``clumpy`` are faulty ones
        self.shuffler = shuffler
        self._shoe_cache: tuple[int, list[str]] | None = None
        #: players who keep one spot (controller/strategy/counter.py): ``counter_spot`` seats a Hi-Lo counter
        extra = (CountingPlayer(counter_spot),) if counter_spot is not None else ()
        self.regulars: dict[int, Regular] = {p.spot: p for p in (*regulars, *extra)}

    def prepare(self) -> None:
        """Work out the basic strategy now (a second or two), not at the first decision of a live table."""
        _strategy(self.rules)

    def _rng(self, *key: object) -> random.Random:
        return random.Random(f"{self.seed}:{self.table_id}:" + ":".join(map(str, key)))

    def shoe(self, shuffle_no: int) -> list[str]:
        """The order of the ``shuffle_no``-th shuffle (1-based): depends on the seed alone. With a faulty
        machine every shoe after the first is its shuffle of the shoe before (the discards), worked out on
        from the last shoe made: a resumed demo deals the very same shoes as one that never stopped."""
        cached = self._shoe_cache
        if cached is None or cached[0] != shuffle_no:
            if self.shuffler == "good" or shuffle_no <= 1:
                cards = list(DECK) * self.rules.decks
                self._rng("shoe", shuffle_no).shuffle(cards)
            else:
                n, cards = cached if cached is not None and 1 <= cached[0] < shuffle_no else (1, self.shoe(1))
                while n < shuffle_no:
                    n += 1
                    cards = shuffle_with(self.shuffler, cards, self._rng("shuffler", n))
            self._shoe_cache = cached = (shuffle_no, cards)
        return cached[1]

    def next_card(self, table: TableView) -> str:
        return self.shoe(table.shuffles)[table.cards_dealt]

    def composition(self) -> dict[str, int]:
        return {rank: 4 * self.rules.decks for rank in "A23456789TJQK"}

    def next_event(self, table: Table) -> ev.Event | None:
        """The next thing that happens at this table, or None when nothing is left to do: the croupier
        answers for the dealer, the shoe and the shuffler, the seeded players for themselves."""
        event = Croupier(table, _SeededShoe(self, table)).next_event()
        return event if event is not None else self._people(table, devices=False)

    def next_with_devices(self, table: TableView) -> ev.Event | None:
        """What the people do next at a table whose own devices answer the engine (the shuffler
        shuffles, the peek reader answers, the shoe shows the cut card and turns a face-down hole
        card): None also means "the devices are on it, wait", and a player who declines insurance
        simply puts no chips on the insurance line."""
        if table.shuffle_due and table.phase in (Phase.SETTLED, Phase.BETTING, Phase.SHUFFLING):
            return None  # the shuffler is on it
        awaiting = table.awaiting()
        if awaiting.requested(RequestPeek):
            return None  # the shoe's peek reader is on it
        if awaiting.card_required:
            return ev.CardDrawn(self.next_card(table))  # the dealer deals it through the shoe
        return self._people(table, devices=True)

    def _people(self, table: TableView, *, devices: bool) -> ev.Event | None:
        phase = table.phase
        if phase in (Phase.BETTING, Phase.SETTLED):
            return self._bets(table)
        if phase == Phase.INSURANCE:
            return self._insurance(table, silent_decline=devices)
        if phase == Phase.PLAYERS:
            return self._decision(table)
        return None

    # -- players ----------------------------------------------------------------------------

    def _seats(self, round_no: int, min_bet: int, max_bet: int) -> dict[int, tuple[int, str]]:
        """Who bets what on which spot in ``round_no``, within the limits the table shows: spot -> (cents, player)."""
        r = self._rng("bets", round_no)
        rules = self.rules
        players = r.randint(1, max(1, min(rules.spots, 5)))
        free = list(range(1, rules.spots + 1))
        r.shuffle(free)
        seats: dict[int, tuple[int, str]] = {}
        unit = 500 if min_bet >= 500 else 100
        for p in range(players):
            if not free:
                break
            spots = 1
            if rules.multi_spot_max_players == 0 or players < rules.multi_spot_max_players:
                spots = 2 if r.random() < 0.25 and len(free) > 1 else 1
            for _ in range(spots):
                low = max(1, -(-min_bet // unit))
                high = max(low, min(max_bet // unit, low * 20))
                amount = r.randint(low, high) * unit
                seats[free.pop()] = (min(max(amount, min_bet), max_bet), f"p{p + 1}")
        return seats

    def _bets(self, table: TableView) -> ev.Event:
        round_no = table.round + (0 if table.phase == Phase.BETTING and table.round_open else 1)
        seats = self._seats(round_no, table.min_bet, table.max_bet)
        if self.regulars:
            seats = seat_regulars(self.regulars, seats, self.shoe(table.shuffles), table, round_no)
        for spot, (amount, player) in sorted(seats.items()):
            if spot not in table.bets:
                return ev.BetPlaced(spot=spot, amount=amount, player=player)
        return ev.NoMoreBets()

    def _insurance(self, table: TableView, *, silent_decline: bool = False) -> ev.Event:
        legal = {(d.spot, d.action) for d in table.legal_actions()}
        for spot in sorted(s for s, action in legal if action == "no_insurance"):
            regular = self.regulars.get(spot)
            take = None if regular is None else regular.insure(count_in_round(self.shoe(table.shuffles), table))
            if take is not None:
                if take and (spot, "insurance") in legal:
                    return ev.Decision(spot=spot, action="insurance", amount=table.spots[spot].wager // 2)
                if take and (spot, "even_money") in legal:
                    return ev.Decision(spot=spot, action="even_money")
                if silent_decline:
                    continue
                return ev.Decision(spot=spot, action="no_insurance")
            r = self._rng("insurance", table.round, spot)
            if (spot, "even_money") in legal and r.random() < 0.5:
                return ev.Decision(spot=spot, action="even_money")
            if r.random() < 0.1 and (spot, "insurance") in legal:
                return ev.Decision(spot=spot, action="insurance", amount=table.spots[spot].wager // 2)
            if silent_decline:
                continue
            return ev.Decision(spot=spot, action="no_insurance")
        return ev.InsuranceClosed()

    def _decision(self, table: TableView) -> ev.Event | None:
        if table.active is None:
            return None
        spot_no, idx = table.active
        hand = table.spots[spot_no].hands[idx]
        up = VALUE[table.dealer[0]]
        names: set[str] = {d.action for d in table.legal_actions() if d.spot == spot_no}
        if table.hit_refusal(spot_no) is None:
            names.add("hit")
        is_pair = len(hand.cards) == 2 and VALUE[hand.cards[0]] == VALUE[hand.cards[1]]
        choice = _strategy(self.rules).decide(
            hand.total, hand.soft, is_pair, "double" in names, "split" in names, "surrender" in names, up
        )
        regular = self.regulars.get(spot_no)
        own = None if regular is None else regular.play(
            hand.cards, up, choice, names, count_in_round(self.shoe(table.shuffles), table))
        r = self._rng("decide", table.round, spot_no, idx, len(hand.cards))
        if own is not None:
            choice = own  # a regular who plays his own way does not slip
        elif r.random() < DEVIATION and names:  # (none while the round is held: the player tries his usual)
            choice = r.choice(sorted(names))
        if choice not in names:
            choice = "hit" if "hit" in names and hand.total < 17 else "stand"
        if choice == "hit":
            return ev.CardDrawn(self.next_card(table))
        return ev.Decision(spot=spot_no, action=choice)  # type: ignore[arg-type]


def public_records(dealer: SimulatedDealer, table: Table | None = None) -> Iterator[dict[str, Any]]:
    """The public records of a table the simulated dealer plays, numbered as the journal numbers them,
    for as long as the caller reads: what ``tablectl report`` and the live analytics read, without a
    journal (the analytics' tests and benchmarks)."""
    table = table if table is not None else Table(dealer.rules)
    seq = 0
    event: ev.Event | None = ev.TableOpened(now=0.0)
    while event is not None:
        for effect in table.handle(event):
            if isinstance(effect, Record):
                seq += 1
                yield {"seq": seq, "ts": 0.0, "type": effect.type, **effect.data}
        event = dealer.next_event(table)
    raise RuntimeError(f"the simulated table stopped in phase {table.phase}")
