"""The ratings of one table, built from its stream of published events (sans-I/O, no clock).

Feed every event body the table publishes (``recall``'s ``events``: ``type``, ``ts``, ``seq`` and the
fields of docs/mqtt.md), plus the card reader's ``card_in`` / ``card_out`` (``spot``, ``player``), in
``seq`` order, to :meth:`RatingBook.handle`; it returns the ratings that ended with that event. The
same stream always gives the same ratings (``rating_id`` is the table id and the ``seq`` of the event
that opened it: ``t01-9`` for a ``card_in``; ``t01-8509.3`` for a rating a round's ``no_more_bets`` opened at
spot 3, as after a close and reopen or idle rounds with the card still in, where one event opens several),
so a table restarted after a crash rebuilds its open ratings from the journal: resumed, neither split nor
lost, and no two ratings of a journal share an id.

How a floor person expects the cases to go:

* **Card in, card out.** A rating opens at the card's ``card_in`` and ends at its ``card_out``; a card
  pulled mid-round still owns that round (the spot's owner is fixed when the wagers lock, at
  ``no_more_bets``). The end takes effect at the next ``no_more_bets`` (or the table closing): a card
  back in before then, at any spot, continues the same rating (``ended`` is the card-out time).
* **A card moved to another spot** (out at 3, in at 5 between two rounds) is one rating; ``spots``
  lists 3 and 5, ``spot`` is where it began.
* **A player on two spots** (the same card number read at two readers: casinos issue more than one card
  per account) is one rating: each round counts once in ``rounds``, each spot's wager is a hand.
* **A card read twice** (the same number at the same spot again: a reader or table PC restarted) changes
  nothing. Another number at a spot that held a card ends that card's hold first (a missed card out).
* **Idle.** ``idle_rounds`` settled rounds in a row without a wager on any of its spots end a rating
  (``ended``: when its last round with a wager settled); the card still in, the next wager opens a new one.
* **No card.** Play on a spot with no card is unrated but still counted, per spot (:meth:`unrated`).
* **The table closing** ends every rating.
* **New rules** (a ``rules_changed`` with the ``rules`` of its journaled input: a profile changed between
  shoes) price every round from then on: its theo takes the new rules' edge, its decisions their EVs.

:meth:`RatingBook.checkpoint` writes the whole book between rounds as JSON and :meth:`RatingBook.restore`
reads it back to the same book, so a table restarted reads its last checkpoint and the events after it, not
its whole journal (controller/service/ratings.py).

Decisions are judged by :class:`controller.ratings.costs.Judge` against basic strategy; the round is
mirrored with the engine's own :class:`~controller.game.hand.Spot` and
:class:`~controller.game.hand.Hand` so the legality of a double or split at that moment is the engine's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from controller.game.cards import VALUE
from controller.game.hand import Hand, Spot
from controller.game.money import format_money, parse_money
from controller.game.rules import Rules, rules_digest, rules_from_json, rules_to_json
from controller.ratings.costs import Judge, Judged
from controller.ratings.rating import Departure, Rating
from controller.strategy.edge import house_edge

#: settled rounds without a wager that end a rating, unless the table's settings say otherwise
DEFAULT_IDLE_ROUNDS = 5
#: the format of :meth:`RatingBook.checkpoint` (a checkpoint of another format is not read: the book is rebuilt)
CHECKPOINT_FORMAT = 1

_PLAY = ("hit", "stand", "double", "split", "surrender")


class RatingInputError(ValueError):
    """An event the book cannot read (a missing or malformed field), named by ``seq`` and type."""


@dataclass(slots=True)
class UnratedPlay:
    """Play on one spot with no card in its reader: counted, not rated."""

    spot: int
    rounds: int = 0
    initial_wagers: int = 0
    max_bet: int = 0
    house_net: int = 0
    skill_cost: float = 0.0
    #: initial wagers (cents) per basic-strategy edge of the rules they were played under
    wagers_by_edge: dict[float, int] = field(default_factory=dict)

    def add_wager(self, cents: int, edge: float) -> None:
        """One initial wager, played under rules of basic-strategy edge ``edge``."""
        self.initial_wagers += cents
        self.wagers_by_edge[edge] = self.wagers_by_edge.get(edge, 0) + cents

    def to_state(self) -> list[Any]:
        """Every field, exact, for a checkpoint."""
        return [self.spot, self.rounds, self.initial_wagers, self.max_bet, self.house_net, self.skill_cost,
                [[e, c] for e, c in self.wagers_by_edge.items()]]

    @classmethod
    def from_state(cls, data: list[Any]) -> UnratedPlay:
        """The play :meth:`to_state` wrote."""
        spot, rounds, wagers, max_bet, net, cost, by_edge = data
        return cls(int(spot), int(rounds), int(wagers), int(max_bet), int(net), float(cost),
                   {float(e): int(c) for e, c in by_edge})

    def to_json(self) -> dict[str, Any]:
        theo = sum(cents * edge for edge, cents in self.wagers_by_edge.items())
        return {
            "spot": self.spot, "rounds": self.rounds, "hands": self.rounds,
            "initial_wagers": format_money(self.initial_wagers),
            "average_bet": format_money(round(self.initial_wagers / self.rounds) if self.rounds else 0),
            "max_bet": format_money(self.max_bet), "house_net": format_money(self.house_net),
            "theoretical_loss": format_money(round(theo)),
            "skill_theoretical_loss": format_money(round(theo + self.skill_cost)),
        }


@dataclass(slots=True)
class _Round:
    number: int
    owners: dict[int, Rating | None]  # spot -> the rating that owns its wager (None: unrated)
    spots: dict[int, Spot]  # the engine's records, mirrored from the events
    judge: Judge  # the rules in force when the wagers locked (rules change only between shoes)
    edge: float
    up: str | None = None
    peeked: bool = False
    unrated_cost: dict[int, float] = field(default_factory=dict)


class RatingBook:
    """Every rating of one table: open ones (:meth:`open_ratings`) and those an event ends."""

    def __init__(self, rules: Rules, *, table_id: str = "t", idle_rounds: int = DEFAULT_IDLE_ROUNDS) -> None:
        if idle_rounds < 1:
            raise ValueError(f"idle_rounds must be 1 or more, got {idle_rounds}")
        self.table_id = table_id
        self.idle_rounds = idle_rounds
        self._priced: dict[str, tuple[float, Judge]] = {}  # rules digest -> (edge, judge): worked out once
        self.rules = rules
        self.edge, self.judge = self._pricing(rules)
        self._cards: dict[int, str] = {}  # spot -> the card number in its reader
        self._open: dict[str, Rating] = {}  # player -> open rating
        self._leaving: dict[str, float] = {}  # player -> when its last card came out
        self._idle: dict[str, int] = {}
        self._round: _Round | None = None
        self._unrated: dict[int, UnratedPlay] = {}
        self._count = 0
        self._now = 0.0

    def _pricing(self, rules: Rules) -> tuple[float, Judge]:
        digest = rules_digest(rules)
        priced = self._priced.get(digest)
        if priced is None:
            priced = self._priced[digest] = (house_edge(rules).house_edge, Judge(rules))
        return priced

    # -- reading --------------------------------------------------------------------------------
    def open_ratings(self) -> list[Rating]:
        """The ratings running now, by the spot each began at."""
        return sorted(self._open.values(), key=lambda r: (r.spot, r.started))

    def spot_view(self) -> dict[int, dict[str, Any]]:
        """Each spot a running rating holds -> what a pit screen may see of it (:meth:`Rating.public_json`:
        the number masked): for ``state.spots[n].rating``."""
        view: dict[int, dict[str, Any]] = {}
        for spot, player in sorted(self._cards.items()):
            rating = self._open.get(player)
            if rating is not None:
                view[spot] = rating.public_json()
        return view

    def unrated(self) -> dict[int, UnratedPlay]:
        """Play on spots with no card, per spot."""
        return dict(sorted(self._unrated.items()))

    @property
    def cards(self) -> dict[int, str]:
        """The card number in each spot's reader, as the events left it."""
        return dict(self._cards)

    # -- the stream --------------------------------------------------------------------------------
    def handle(self, event: dict[str, Any]) -> list[Rating]:
        """Take one event (in ``seq`` order); return the ratings it ended, oldest first."""
        kind = event.get("type")
        ts = event.get("ts")
        if not isinstance(ts, (int, float)) or isinstance(ts, bool):
            raise RatingInputError(f"{_name(event)}: no time (ts)")
        self._now = max(self._now, float(ts))
        for rating in self._open.values():
            rating.last_seen = self._now
        try:
            if kind == "card_in":
                self._card_in(_spot(event), _player(event), event)
            elif kind == "card_out":
                self._card_out(_spot(event), event.get("player"), float(ts))
            elif kind == "no_more_bets":
                return self._no_more_bets(event, float(ts))
            elif kind == "card":
                self._card(event)
            elif kind == "peek":
                if self._round is not None and event.get("blackjack") is False:
                    self._round.peeked = True
            elif kind == "decision":
                self._decision(event, float(ts))
            elif kind == "round_settled":
                return self._settled(event, float(ts))
            elif kind == "table_closed":
                return self.close_all(float(ts))
            elif kind == "rules_changed":
                self._rules_changed(event)
        except RatingInputError:
            raise
        except (KeyError, TypeError, IndexError, AttributeError, ValueError) as e:  # MoneyError is a ValueError
            raise RatingInputError(f"{_name(event)}: {type(e).__name__}: {e}") from None
        return []

    def close_all(self, ts: float) -> list[Rating]:
        """The table closes at ``ts``: every rating ends (a card already out at its card-out time)."""
        self._round = None
        closed = []
        for player in list(self._open):
            left = self._leaving.get(player)
            closed.append(self._close(player, left if left is not None else ts,
                                      "card_out" if left is not None else "table_closed"))
        return sorted(closed, key=lambda r: (r.ended or 0.0, r.rating_id))

    def _rules_changed(self, event: dict[str, Any]) -> None:
        """New rules from the next round on: the event's ``rules`` (its journaled input's, as
        :func:`~controller.game.rules.rules_to_json` writes them). Without them only the rules in force may be
        named (their digest): a book that cannot know the new rules refuses the event rather than price on
        under the old ones unseen."""
        data = event.get("rules")
        if data is None:
            if event.get("digest") != rules_digest(self.rules):
                raise RatingInputError(f"{_name(event)}: new rules without their rules (the journaled input's)")
            return
        rules = rules_from_json(data)  # RulesFormatError (a ValueError): refused, naming the event
        self.rules = rules
        self.edge, self.judge = self._pricing(rules)

    # -- a checkpoint ---------------------------------------------------------------------------------
    def checkpoint(self) -> dict[str, Any] | None:
        """The whole book as JSON-ready data, exact (:meth:`restore` reads it back to the same book), or None while
        a round is in play (a checkpoint is taken between rounds). Its size is the open ratings'."""
        if self._round is not None:
            return None
        return {
            "format": CHECKPOINT_FORMAT, "rules": rules_to_json(self.rules),
            "cards": [[spot, player] for spot, player in self._cards.items()],
            "open": [r.to_state() for r in self._open.values()],
            "leaving": [[p, ts] for p, ts in self._leaving.items()],
            "idle": [[p, n] for p, n in self._idle.items()],
            "unrated": [u.to_state() for u in self._unrated.values()],
            "count": self._count, "now": self._now,
        }

    @classmethod
    def restore(cls, data: dict[str, Any], *, table_id: str = "t",
                idle_rounds: int = DEFAULT_IDLE_ROUNDS) -> RatingBook:
        """The book :meth:`checkpoint` wrote; :class:`RatingInputError` naming what is wrong with it."""
        try:
            if data.get("format") != CHECKPOINT_FORMAT:
                raise ValueError(f"format {data.get('format')!r}, not {CHECKPOINT_FORMAT}")
            book = cls(rules_from_json(data["rules"]), table_id=table_id, idle_rounds=idle_rounds)
            book._cards = {int(spot): str(player) for spot, player in data["cards"]}
            ratings = [Rating.from_state(r) for r in data["open"]]
            book._open = {r.player: r for r in ratings}
            book._leaving = {str(p): float(ts) for p, ts in data["leaving"]}
            book._idle = {str(p): int(n) for p, n in data["idle"]}
            book._unrated = {u.spot: u for u in (UnratedPlay.from_state(x) for x in data["unrated"])}
            book._count = int(data["count"])
            book._now = float(data["now"])
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise RatingInputError(f"ratings checkpoint: {type(e).__name__}: {e}") from None
        return book

    # -- cards in readers ------------------------------------------------------------------------------
    def _card_in(self, spot: int, player: str, event: dict[str, Any]) -> None:
        ts = float(event["ts"])
        held = self._cards.get(spot)
        if held == player:
            return  # read twice
        if held is not None:
            self._card_out(spot, held, ts)
        self._cards[spot] = player
        rating = self._open.get(player)
        if rating is None:
            rating = self._new(player, spot, ts, _seq(event))
        self._leaving.pop(player, None)
        if spot not in rating.spots:
            rating.spots.append(spot)

    def _card_out(self, spot: int, player: object, ts: float) -> None:
        held = self._cards.get(spot)
        if held is None or (player is not None and player != held):
            return  # not the card the book saw there (a duplicate card out)
        del self._cards[spot]
        if held in self._open and held not in self._cards.values():
            self._leaving[held] = ts

    def _new(self, player: str, spot: int, ts: float, suffix: str | None) -> Rating:
        """A rating opened by the event ``suffix`` names (its seq, and the spot when one event opens several)."""
        self._count += 1
        suffix = suffix if suffix is not None else f"r{self._count}"
        rating = Rating(f"{self.table_id}-{suffix}", player, spot, ts, self.edge, spots=[spot], last_seen=ts)
        self._open[player] = rating
        self._idle[player] = 0
        return rating

    def _close(self, player: str, ended: float, by: str) -> Rating:
        rating = self._open.pop(player)
        self._leaving.pop(player, None)
        self._idle.pop(player, None)
        rating.ended = max(ended, rating.started)
        rating.ended_by = by
        return rating

    # -- a round --------------------------------------------------------------------------------------
    def _no_more_bets(self, event: dict[str, Any], ts: float) -> list[Rating]:
        number = int(event["round"])
        wagers = sorted((int(spot), parse_money(amount)) for spot, amount in event["wagers"].items())  # all read first
        closed = [self._close(p, self._leaving[p], "card_out") for p in list(self._leaving)]
        owners: dict[int, Rating | None] = {}
        spots: dict[int, Spot] = {}
        for spot, cents in wagers:
            if cents <= 0:
                continue
            player = self._cards.get(spot)
            rating: Rating | None = None
            if player is not None:
                # one no_more_bets may open a rating at each spot: the spot makes each id its own
                seq = _seq(event)
                rating = self._open.get(player) or self._new(player, spot, ts,
                                                             None if seq is None else f"{seq}.{spot}")
                if spot not in rating.spots:
                    rating.spots.append(spot)
            owners[spot] = rating
            spots[spot] = Spot(spot, cents)
        self._round = _Round(number, owners, spots, self.judge, self.edge)
        return closed

    def _card(self, event: dict[str, Any]) -> None:
        rnd = self._round
        card = event.get("card")
        if rnd is None or not isinstance(card, str) or card not in VALUE:
            return
        if event.get("to") == "dealer":
            if rnd.up is None and not event.get("hole"):
                rnd.up = card
            return
        if event.get("to") != "spot":
            return
        spot = rnd.spots.get(int(event["spot"]))
        if spot is None:
            return
        index = int(event["hand"])
        if index >= len(spot.hands):
            return
        hand = spot.hands[index]
        if len(hand.cards) >= 2 and not hand.doubled:  # a card at the player's say: a hit
            self._judge(spot, index, "hit", None, float(event["ts"]))
        hand.add(card)

    def _decision(self, event: dict[str, Any], ts: float) -> None:
        rnd = self._round
        if rnd is None:
            return
        spot = rnd.spots.get(int(event["spot"]))
        if spot is None:
            return
        action = event["action"]
        index = int(event.get("hand") or 0)
        if action in ("insurance", "even_money"):
            hand = spot.hands[0]
            if len(hand.cards) == 2:
                stake = parse_money(event["amount"]) if action == "insurance" else hand.wager
                self._record(spot.number, index, hand, rnd.judge.insurance(hand, action, stake), ts)
            return
        if action not in _PLAY or index >= len(spot.hands):
            return
        amount = parse_money(event["amount"]) if action == "double" and event.get("amount") else None
        self._judge(spot, index, action, amount, ts)
        hand = spot.hands[index]
        if action == "double":
            hand.wager += amount if amount is not None else hand.wager
            hand.doubled = True
        elif action == "split" and len(hand.cards) == 2:  # as the engine splits: the second card starts a hand
            first, second = hand.cards
            kept, new = Hand(hand.wager, [first], from_split=True), Hand(spot.wager, [second], from_split=True)
            kept.split_aces = new.split_aces = VALUE[second] == 1
            spot.hands[index:index + 1] = [kept, new]

    def _judge(self, spot: Spot, index: int, action: str, amount: int | None, ts: float) -> None:
        rnd = self._round
        if rnd is None or rnd.up is None:
            return
        hand = spot.hands[index]
        judged = rnd.judge.play(spot, hand, rnd.up, action, amount=amount, peeked=rnd.peeked)
        if judged is not None:
            self._record(spot.number, index, hand, judged, ts)

    def _record(self, spot: int, index: int, hand: Hand, judged: Judged, ts: float) -> None:
        rnd = self._round
        if rnd is None or not judged.departed:
            return
        owner = rnd.owners.get(spot)
        if owner is None:
            rnd.unrated_cost[spot] = rnd.unrated_cost.get(spot, 0.0) + judged.cost
            return
        owner.add_departure(Departure(
            rnd.number, spot, index, tuple(hand.cards), rnd.up or "", judged.action, judged.basic,
            judged.ev_action, judged.ev_basic, judged.wager, judged.cost, ts))

    def _settled(self, event: dict[str, Any], ts: float) -> list[Rating]:
        rnd = self._round
        if rnd is None:
            return []
        nets = {spot: parse_money(event["nets"].get(str(spot), "0")) for spot in rnd.owners}  # all read first
        self._round = None
        played: set[str] = set()
        for spot_no, owner in rnd.owners.items():
            wager = rnd.spots[spot_no].wager
            net = nets[spot_no]
            if owner is None:
                play = self._unrated.setdefault(spot_no, UnratedPlay(spot_no))
                play.rounds += 1
                play.add_wager(wager, rnd.edge)
                play.max_bet = max(play.max_bet, wager)
                play.house_net -= net
                play.skill_cost += rnd.unrated_cost.get(spot_no, 0.0)
                continue
            if owner.player not in played:
                owner.rounds += 1
                played.add(owner.player)
            owner.hands += 1
            owner.add_wager(wager, rnd.edge)
            owner.max_bet = max(owner.max_bet, wager)
            owner.house_net -= net
            owner.last_played = ts
        closed = []
        for player, rating in list(self._open.items()):
            if player in played:
                self._idle[player] = 0
                continue
            if player in self._leaving:
                continue  # ends at the next round's wagers (or comes back)
            self._idle[player] = self._idle.get(player, 0) + 1
            if self._idle[player] >= self.idle_rounds:
                closed.append(self._close(player, rating.last_played or rating.started, "idle"))
        return closed



def _name(event: dict[str, Any]) -> str:
    seq = event.get("seq")
    return f"event {seq} ({event.get('type')})" if seq is not None else f"event {event.get('type')!r}"


def _seq(event: dict[str, Any]) -> str | None:
    """The event's ``seq`` as an id's suffix (None for a stream without seqs)."""
    seq = event.get("seq")
    return str(seq) if isinstance(seq, int) and not isinstance(seq, bool) else None


def _spot(event: dict[str, Any]) -> int:
    spot = event.get("spot")
    if not isinstance(spot, int) or isinstance(spot, bool) or not 1 <= spot <= 7:
        raise RatingInputError(f"{_name(event)}: spot must be 1..7, got {spot!r}")
    return spot


def _player(event: dict[str, Any]) -> str:
    player = event.get("player")
    if not isinstance(player, str) or not player:
        raise RatingInputError(f"{_name(event)}: no card number (player)")
    return player
