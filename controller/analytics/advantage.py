"""Advantage-play signals: how each spot's bets and decisions followed the Hi-Lo count, judged at shoe end.

A card counter raises his bet when the cards left favour him (a high true count) and departs from basic
strategy where the count says to (the index plays). The table sees every card, so it can count along and
see whose bets follow the count. From the rounds of one shoe (as :mod:`controller.records` rebuilds them
from the journal's public records), per spot:

* each initial wager against the count **before** it: the Hi-Lo running count of the cards seen since the
  shuffle (a hole card once turned; the burn card never) and the true count, running count / decks left
  (decks left = cards not yet out of the shoe, burn included, / 52; at least half a deck);
* ``spread`` = largest wager / smallest, and ``correlation``: Pearson's r between wager and true count;
* the same over the spot's **window**, this shoe and the :attr:`FlagRule.window` - 1 shoes before it
  (``window_bets``, ``window_spread``, ``window_correlation``) and ``z`` = window r x sqrt(window bets - 1):
  for bets unrelated to the count r is about normal with variance 1 / (n - 1) (any order of the same bets
  is as likely), so ``z`` says how many standard deviations the bets follow the count beyond chance;
* the decisions in a situation of the Illustrious 18 where the index play departs from basic strategy
  (:data:`controller.strategy.counter.ILLUSTRIOUS_18`): how often the count called for the play and the
  spot made it (``index_taken`` of ``index_due``), and how often it made it when the count did not call for
  it (``index_against``, what a player who merely slips does as often);
* the flag (:func:`flag`): the documented rule ``docs/analytics.md`` measures.

Reported, never acted on live: nothing here changes play (preferential shuffling is itself a regulatory
risk). Pure: no I/O, no clock, no randomness. The report (:func:`journal_signals`) and the live
``analytics`` topic (:func:`shoe_signals` at each shoe end) share it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import Any

from controller.game.cards import VALUE, hand_total
from controller.game.money import format_money
from controller.game.rules import Rules
from controller.records import RoundBuilder, cents
from controller.strategy.chart import BasicStrategy
from controller.strategy.counter import INSURANCE, decks_remaining, index_play, tag


@dataclass(frozen=True, slots=True)
class FlagRule:
    """The flag rule's thresholds (:func:`flag`), over a spot's window of shoes: enough bets, a bet spread,
    and bets that follow the true count beyond chance: ``z >= min_z`` with index plays to back it (at least
    one taken when the count called for it, none made against the count), else ``z >= min_z_alone`` on the
    bets alone. The defaults are the documented rule (measured by ``benchmarks/advantage_play.py``, which
    tries others): an honest spot's bets cross ``z >= 3`` about once in 740 windows (the normal tail), some
    three times in an hour of the demo's crowd; a counter's index plays back his bets, a crowd's do not."""

    min_bets: int = 8
    min_spread: float = 2.0
    min_z: float = 2.5  # with index plays to back the bets
    window: int = 3  # shoes: this one and the ones before it
    min_z_alone: float = 4.0  # without index plays to back the bets


RULE = FlagRule()

Round = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Bet:
    """One initial wager (cents) against the Hi-Lo count of the shoe's cards seen before it."""

    round: int | None
    amount: int
    running: int
    true: float

    def to_json(self) -> dict[str, Any]:
        return {"round": self.round, "amount": format_money(self.amount), "running": self.running,
                "true": round(self.true, 3)}


@dataclass(frozen=True, slots=True)
class Play:
    """A decision in an index-play situation: ``due`` when the count called for ``play``; ``action`` what the
    spot did (``made``: it was the index play)."""

    round: int | None
    situation: str
    true: float
    due: bool
    play: str
    action: str

    @property
    def made(self) -> bool:
        return self.action == self.play

    def to_json(self) -> dict[str, Any]:
        return {"round": self.round, "situation": self.situation, "true": round(self.true, 3), "due": self.due,
                "play": self.play, "action": self.action}


@dataclass(frozen=True, slots=True)
class SpotSignal:
    """One spot's figures for one shoe, and the flag with the reason (see the module docstring)."""

    shoe: int | None
    spot: int
    bets: int
    min_bet: int  # cents
    max_bet: int
    spread: float | None
    correlation: float | None
    window_shoes: int
    window_bets: int
    window_spread: float | None
    window_correlation: float | None
    z: float | None
    index_due: int
    index_taken: int
    index_against: int
    flagged: bool
    reason: str
    samples: tuple[Bet, ...] = field(default=())
    plays: tuple[Play, ...] = field(default=())
    window_index_taken: int = 0  # the window's index plays made when due
    window_index_against: int = 0  # and made when the count did not call for them

    def to_json(self, *, samples: bool = True) -> dict[str, Any]:
        """JSON-ready (money as decimal strings); ``samples``: with each bet and index-play decision."""
        out = asdict(self)
        out["min_bet"], out["max_bet"] = format_money(self.min_bet), format_money(self.max_bet)
        for key in ("spread", "correlation", "window_spread", "window_correlation", "z"):
            if out[key] is not None:
                out[key] = round(out[key], 4)
        if samples:
            out["samples"] = [b.to_json() for b in self.samples]
            out["plays"] = [p.to_json() for p in self.plays]
        else:
            del out["samples"], out["plays"]
        return out


def correlation(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Pearson's r of two equally long series; None when either does not vary (or fewer than 2 points)."""
    n = len(xs)
    if n < 2 or n != len(ys):
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    if sxx <= 0 or syy <= 0:
        return None
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / math.sqrt(sxx * syy)


def z_score(r: float | None, n: int) -> float | None:
    """How far r lies beyond chance for ``n`` bets unrelated to the count: r x sqrt(n - 1)."""
    return None if r is None or n < 2 else r * math.sqrt(n - 1)


def flag(bets: int, spread: float | None, r: float | None, rule: FlagRule = RULE,
         shoes: int = 1, index_taken: int = 0, index_against: int = 0) -> tuple[bool, str]:
    """The flag rule, on a spot's window (``bets`` over ``shoes`` shoes): at least ``min_bets`` bets, a spread
    (largest / smallest bet) of at least ``min_spread``, and ``z`` = r x sqrt(bets - 1) of at least ``min_z``
    with the window's index plays to back it (``index_taken`` >= 1 made when due, ``index_against`` 0 made
    when not), or of at least ``min_z_alone`` without. Returns (flagged, why)."""
    in_shoes = f"in {shoes} shoe{'s' if shoes != 1 else ''}"
    where = f"over {bets} bets {in_shoes}"
    if bets < rule.min_bets:
        return False, f"too few bets to judge: {bets} {in_shoes}, under {rule.min_bets}"
    if spread is None or spread < rule.min_spread:
        return False, f"bet spread {spread or 1:.1f} under {rule.min_spread:g} {where}"
    z = z_score(r, bets)
    if r is None or z is None or z < rule.min_z:
        why = "the bets do not vary with it" if z is None else f"r {r:.2f}, z {z:.1f} < {rule.min_z:g}"
        return False, f"bets do not follow the true count ({why}) {where}"
    plays = f"index plays {index_taken} taken, {index_against} against the count"
    if z >= rule.min_z_alone:
        return True, f"bets follow the true count: r {r:.2f}, z {z:.1f}, spread {spread:.1f} {where}"
    if index_taken >= 1 and index_against == 0:
        return True, f"bets follow the true count: r {r:.2f}, z {z:.1f}, spread {spread:.1f} {where}; {plays}"
    return False, (f"bets follow the count by chance or not (r {r:.2f}, z {z:.1f} < {rule.min_z_alone:g} and no "
                   f"index play backs them: {plays}) {where}")


# -- counting along with the table ------------------------------------------------------------------------------


class _Hand:
    __slots__ = ("cards", "doubling")

    def __init__(self, cards: list[str] | None = None) -> None:
        self.cards: list[str] = cards if cards is not None else []
        self.doubling = False  # doubled: its next card is the double's, not a hit


class ShoeCounter:
    """Counts a shoe's cards as its rounds are fed in order (:meth:`add`), keeping each spot's bets and
    index-play decisions. ``burn``: the cards burnt face down at the shoe's start (out, never seen)."""

    def __init__(self, rules: Rules, strategy: BasicStrategy, *, burn: int | None = None) -> None:
        self.rules = rules
        self.strategy = strategy
        self.running = 0
        self.out = rules.burn if burn is None else burn
        self.bets: dict[int, list[Bet]] = {}
        self.plays: dict[int, list[Play]] = {}
        self._keep = True

    @property
    def true(self) -> float:
        return self.running / decks_remaining(self.out, self.rules.cards_in_shoe)

    def add(self, round_: Round, *, keep: bool = True) -> None:
        """One settled round of the shoe (a :mod:`controller.records` round, its ``events`` in order).
        ``keep`` False: its cards are counted, its bets and decisions not judged (a round outside a shift)."""
        number = round_.get("round") if isinstance(round_.get("round"), int) else None
        wagers = round_.get("wagers") or {}
        self._keep = keep
        running, true = self.running, self.true
        for key, value in wagers.items():
            amount = cents(value)
            if amount > 0 and str(key).isdigit() and keep:
                self.bets.setdefault(int(key), []).append(Bet(number, amount, running, true))
        self._walk(number, round_.get("events") or [], [int(k) for k in wagers if str(k).isdigit()])

    def _play(self, spot: int, play: Play) -> None:
        if self._keep:
            self.plays.setdefault(spot, []).append(play)

    def _walk(self, number: int | None, events: Iterable[Mapping[str, Any]], spots: list[int]) -> None:
        hands: dict[int, list[_Hand]] = {}
        up: int | None = None
        active: tuple[int, int] | None = None
        insured: dict[int, str] = {}
        insurance_true: float | None = None
        for e in events:
            kind = e.get("type")
            if kind == "card":
                card = e.get("card")
                if e.get("to") == "spot" and isinstance(e.get("spot"), int):
                    spot_hands = hands.setdefault(e["spot"], [_Hand()])
                    index = e.get("hand")
                    i = index if isinstance(index, int) else 0
                    while len(spot_hands) <= i:
                        spot_hands.append(_Hand())
                    hand = spot_hands[i]
                    if (active == (e["spot"], i) and len(hand.cards) >= 2 and not hand.doubling
                            and isinstance(card, str)):
                        self._decided(number, e["spot"], hand, up, "hit", len(spot_hands))
                    if isinstance(card, str):
                        hand.cards.append(card)
                elif e.get("to") == "dealer" and up is None and isinstance(card, str) and not e.get("hole"):
                    up = VALUE.get(card)
                self.out += 1
                if isinstance(card, str) and card in VALUE:
                    self.running += tag(card)
            elif kind == "hole_card" and isinstance(e.get("card"), str) and e["card"] in VALUE:
                self.running += tag(e["card"])
            elif kind == "active":
                spot, index = e.get("spot"), e.get("hand")
                active = (spot, index) if isinstance(spot, int) and isinstance(index, int) else None
            elif kind == "hand_done":
                active = None
            elif kind == "insurance_open":
                insurance_true = self.true
            elif kind == "decision":
                self._decision(number, e, hands, up, insured)
            elif kind == "insurance_closed" and insurance_true is not None:
                for spot in spots:  # offered to every spot; a silent decline leaves no record
                    action = insured.get(spot, "no_insurance")
                    due = INSURANCE.applies(insurance_true)
                    self._play(spot, Play(number, INSURANCE.name, insurance_true, due, INSURANCE.play,
                                          "insurance" if action in ("insurance", "even_money") else "no_insurance"))
                insurance_true = None

    def _decision(self, number: int | None, e: Mapping[str, Any], hands: dict[int, list[_Hand]], up: int | None,
                  insured: dict[int, str]) -> None:
        action, spot, i = e.get("action"), e.get("spot"), e.get("hand")
        if not isinstance(spot, int) or not isinstance(action, str):
            return
        if action in ("insurance", "even_money", "no_insurance"):
            insured[spot] = action
            return
        spot_hands = hands.get(spot)
        i = i if isinstance(i, int) else 0
        if not spot_hands or i >= len(spot_hands):
            return
        hand = spot_hands[i]
        if action in ("stand", "double", "split", "surrender"):
            self._decided(number, spot, hand, up, action, len(spot_hands))
        if action == "double":
            hand.doubling = True
        elif action == "split" and hand.cards:
            spot_hands.insert(i + 1, _Hand([hand.cards.pop()]))

    def _decided(self, number: int | None, spot: int, hand: _Hand, up: int | None, action: str, n_hands: int) -> None:
        """A decision on ``hand`` (its cards before it): recorded when it is an index-play situation."""
        cards = hand.cards
        if up is None or len(cards) < 2:
            return
        rules = self.rules
        total, soft = hand_total(cards)
        two = len(cards) == 2
        is_pair = two and VALUE[cards[0]] == VALUE[cards[1]]
        can_double = two and (n_hands == 1 or rules.double_after_split)
        basic = self.strategy.decide(total, soft, is_pair, can_double, is_pair,
                                     two and n_hands == 1 and rules.surrender != "none", up)
        play = index_play(cards, up, basic)
        if play is None:
            return
        self._play(spot, Play(number, play.name, self.true, play.applies(self.true), play.play, action))

    def signals(self, shoe: int | None = None, rule: FlagRule = RULE,
                earlier: Sequence[SpotSignal] = ()) -> list[SpotSignal]:
        """Each spot's figures for the shoe so far, and its flag, by spot. ``earlier``: the signals of the shoes
        before (any number, oldest first): each spot's window takes its bets of the last ones (:func:`window`)."""
        out: list[SpotSignal] = []
        for spot in sorted(set(self.bets) | set(self.plays)):
            bets = self.bets.get(spot, [])
            plays = self.plays.get(spot, [])
            amounts = [b.amount for b in bets]
            low, high = (min(amounts), max(amounts)) if amounts else (0, 0)
            before = window([e for e in earlier if e.spot == spot], shoe, rule.window)
            pooled = [b for e in before for b in e.samples] + bets
            n = len(pooled)
            w_low, w_high = (min(b.amount for b in pooled), max(b.amount for b in pooled)) if pooled else (0, 0)
            w_spread = w_high / w_low if w_low > 0 else None
            w_r = correlation([float(b.amount) for b in pooled], [b.true for b in pooled])
            w_plays = [p for e in before for p in e.plays] + plays
            w_taken = sum(p.due and p.made for p in w_plays)
            w_against = sum(not p.due and p.made for p in w_plays)
            flagged, why = flag(n, w_spread, w_r, rule, len(before) + 1, w_taken, w_against)
            out.append(SpotSignal(
                shoe=shoe, spot=spot, bets=len(bets), min_bet=low, max_bet=high,
                spread=high / low if low > 0 else None,
                correlation=correlation([float(a) for a in amounts], [b.true for b in bets]),
                window_shoes=len(before) + 1, window_bets=n, window_spread=w_spread, window_correlation=w_r,
                z=z_score(w_r, n), index_due=sum(p.due for p in plays),
                index_taken=sum(p.due and p.made for p in plays),
                index_against=sum(not p.due and p.made for p in plays), flagged=flagged, reason=why,
                samples=tuple(bets), plays=tuple(plays), window_index_taken=w_taken,
                window_index_against=w_against))
        return out


def window(earlier: Sequence[SpotSignal], shoe: int | None, size: int) -> list[SpotSignal]:
    """Of one spot's ``earlier`` signals (oldest first), those in the window of ``size`` shoes ending at
    ``shoe``: the shoes numbered ``shoe - size + 1`` to ``shoe - 1`` (without numbers: the last ``size - 1``)."""
    if size <= 1:
        return []
    if shoe is not None and all(e.shoe is not None for e in earlier):
        return [e for e in earlier if e.shoe is not None and shoe - size < e.shoe < shoe]
    return list(earlier[-(size - 1):])


def shoe_signals(rounds: Iterable[Round], rules: Rules, *, shoe: int | None = None,
                 earlier: Sequence[SpotSignal] = (), strategy: BasicStrategy | None = None,
                 rule: FlagRule = RULE) -> list[SpotSignal]:
    """The signals of one shoe at its end: ``rounds`` are its settled rounds, oldest first (the live
    ``analytics`` topic calls this at each shoe end with the table's ``shuffles`` as ``shoe``, and the
    signals of the shoes before as ``earlier``: the flag judges each spot over a window of shoes).
    ``strategy``: the rules' basic strategy (worked out here when not given: a second or two, once)."""
    counter = ShoeCounter(rules, strategy if strategy is not None else _basic(rules))
    for r in rounds:
        counter.add(r)
    return counter.signals(shoe, rule, earlier)


@lru_cache(maxsize=8)
def _basic(rules: Rules) -> BasicStrategy:
    """The rules' basic strategy (exact EVs: a second or two), worked out once per process and set of rules."""
    from controller.strategy.chart import basic_strategy

    return basic_strategy(rules)


def flagged_json(signals: Iterable[SpotSignal]) -> list[dict[str, Any]]:
    """The flagged spots as the ``analytics`` topic's ``flagged_spots`` carries them: each spot's figures
    (``spot``, ``shoe``, ``reason``, ``z``...), without the bets one by one."""
    return [s.to_json(samples=False) for s in signals if s.flagged]


# -- a journal's shoes ------------------------------------------------------------------------------------------


@dataclass(slots=True)
class ShoeRounds:
    """The settled rounds dealt from one shoe: ``shoe`` is its number (full shuffles so far), ``complete``
    once the next shuffle was asked for (the shoe ended)."""

    shoe: int
    rounds: list[dict[str, Any]] = field(default_factory=list)
    complete: bool = False


def shoes(events: Iterable[Mapping[str, Any]]) -> Iterator[ShoeRounds]:
    """The shoes among a journal's public records (in ``seq`` order), each with its settled rounds.

    A shoe starts at a ``shuffle_done`` (a discard reshuffle, ``discards``, starts a new count too) and ends
    at the next ``shuffle_requested``/``shuffle_done``; records before the first shuffle belong to no shoe."""
    builder = RoundBuilder()
    shuffles = 0
    current: ShoeRounds | None = None
    for e in events:
        kind = e.get("type")
        if kind == "shuffle_done":
            if current is not None:
                current.complete = True
                yield current
            if not e.get("discards"):
                shuffles += 1
            current = ShoeRounds(shuffles)
        elif kind == "shuffle_requested" and current is not None and not builder.in_round:
            current.complete = True
        done = builder.add(e)
        if done is not None and current is not None:
            current.rounds.append(done)
    if current is not None and current.rounds:
        yield current


def journal_signals(events: Iterable[Mapping[str, Any]], rules: Rules, *, complete_only: bool = True,
                    keep: Iterable[int] | None = None, rule: FlagRule = RULE) -> list[SpotSignal]:
    """Every shoe's signals from a journal's public records, oldest first (the report's figures).
    ``complete_only``: shoes that ended; ``keep``: only the bets and decisions of the rounds with these
    numbers are judged (a shift's; the other rounds' cards are counted all the same)."""
    strategy = _basic(rules)
    wanted = set(keep) if keep is not None else None
    out: list[SpotSignal] = []
    for shoe in shoes(events):
        if complete_only and not shoe.complete:
            continue
        counter = ShoeCounter(rules, strategy)
        for r in shoe.rounds:
            counter.add(r, keep=wanted is None or r.get("round") in wanted)
        recent = out[max(0, len(out) - (rule.window - 1) * rules.spots):] if rule.window > 1 else []
        out.extend(counter.signals(shoe.shoe, rule, recent))
    return out


# -- the report ---------------------------------------------------------------------------------------------------


def rule_json(rule: FlagRule = RULE) -> dict[str, Any]:
    """The flag rule as the report gives it."""
    return {"min_bets": rule.min_bets, "min_spread": rule.min_spread, "min_z": rule.min_z,
            "min_z_alone": rule.min_z_alone, "window": rule.window, "count": "Hi-Lo",
            "index_plays": "Illustrious 18"}


def report_json(signals: Sequence[SpotSignal], rule: FlagRule = RULE) -> dict[str, Any]:
    """The report's ``advantage`` section: the rule, the spots flagged (figures only) and every spot's signals
    per shoe with its bets against the count and its index-play decisions."""
    return {
        "rule": rule_json(rule),
        "shoes": len({s.shoe for s in signals}),
        "flagged": flagged_json(signals),
        "signals": [s.to_json() for s in signals],
    }


def _num(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def report_lines(signals: Sequence[SpotSignal]) -> list[str]:
    """The report's text: one line a spot and shoe, the flagged ones marked."""
    lines = [f"advantage play (Hi-Lo, judged at shoe end over {RULE.window} shoes; {sum(s.flagged for s in signals)} "
             f"flagged of {len(signals)} spot-shoes):"]
    for s in signals:
        lines.append(
            f"  shoe {s.shoe if s.shoe is not None else '?':>3} spot {s.spot}: {s.bets:>2} bets "
            f"{format_money(s.min_bet)}-{format_money(s.max_bet)} spread {_num(s.spread, 1)} r {_num(s.correlation)}; "
            f"window {s.window_bets} bets r {_num(s.window_correlation)} z {_num(s.z, 1)}; index plays "
            f"{s.index_taken}/{s.index_due} ({s.index_against} against)"
            + (f"  FLAGGED: {s.reason}" if s.flagged else ""))
    return lines
