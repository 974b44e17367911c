"""One player's rating at one table, and its JSON (DESIGN "Rated play").

A :class:`Rating` accumulates as rounds settle; money is integer cents, the theoretical losses are
kept exact (float cents) and rounded to the cent only when written. In JSON, money is a decimal
string and times are epoch seconds with an ISO 8601 twin (``started_at``), as ``recall`` writes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from controller.game.money import format_money

#: the departures a rating lists (its latest; ``departures_count`` and the skill theo count every one): a rating
#: open for days would otherwise hold, journal and publish an ever-growing list (about one departure in seven
#: rounds of a poor player: 250 is some 1,700 rounds, a day and a half of play at one spot)
DEPARTURES_KEPT: Final = 250
#: the departures each running rating shows on the retained ``ratings/open`` (its latest): what a tracking screen
#: needs; the whole list comes on ``ratings`` when the rating ends
OPEN_DEPARTURES: Final = 10


def masked(number: str) -> str:
    """The card number as a dashboard may show it: the last characters only (at most 4, and at most a
    third of the number, so a short number is not given away), the rest as ``*``: ``******4567``."""
    shown = min(4, len(number) // 3)
    return "*" * (len(number) - shown) + (number[-shown:] if shown else "")


def iso(ts: float) -> str:
    """``2026-11-22T08:00:00.125Z`` for epoch seconds ``ts``."""
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True, slots=True)
class Departure:
    """A decision that departed from basic strategy, and what it cost at that moment."""

    round: int
    spot: int
    hand: int
    cards: tuple[str, ...]
    dealer_up: str
    action: str
    basic: str
    ev_action: float
    ev_basic: float
    wager: int
    cost: float  # cents, exact
    ts: float

    def to_state(self) -> list[Any]:
        """Every field, exact (floats as Python writes them: they read back the same), for a checkpoint."""
        return [self.round, self.spot, self.hand, list(self.cards), self.dealer_up, self.action, self.basic,
                self.ev_action, self.ev_basic, self.wager, self.cost, self.ts]

    @classmethod
    def from_state(cls, data: list[Any]) -> Departure:
        """The departure :meth:`to_state` wrote."""
        rnd, spot, hand, cards, up, action, basic, ev_action, ev_basic, wager, cost, ts = data
        return cls(int(rnd), int(spot), int(hand), tuple(str(c) for c in cards), str(up), str(action), str(basic),
                   float(ev_action), float(ev_basic), int(wager), float(cost), float(ts))

    def to_json(self) -> dict[str, Any]:
        return {
            "round": self.round, "spot": self.spot, "hand": self.hand, "cards": list(self.cards),
            "dealer_up": self.dealer_up, "action": self.action, "basic": self.basic,
            "ev_action": round(self.ev_action, 6), "ev_basic": round(self.ev_basic, 6),
            "wager": format_money(self.wager), "cost": format_money(round(self.cost)), "ts": self.ts,
        }


@dataclass(slots=True)
class Rating:
    """A player's play from card in to card out (or idle rounds, or the table closing)."""

    rating_id: str
    player: str
    spot: int  # where the card was first read
    started: float
    edge: float  # the basic-strategy house edge of the rules in force when it opened (tablectl edge)
    spots: list[int] = field(default_factory=list)  # every spot it played or held, in order
    ended: float | None = None
    ended_by: str | None = None  # card_out, idle, table_closed
    rounds: int = 0
    hands: int = 0  # initial hands: one per spot and round with a wager
    initial_wagers: int = 0
    max_bet: int = 0
    house_net: int = 0
    #: the latest departures (at most :data:`DEPARTURES_KEPT`: :meth:`add_departure`)
    departures: list[Departure] = field(default_factory=list)
    #: every departure so far, and their cost (cents, exact, in the order made): the list may hold fewer
    departures_count: int = 0
    departures_cost: float = 0.0
    last_played: float | None = None  # when its last round with a wager settled
    last_seen: float = 0.0  # the latest event time the book has seen (minutes of an open rating)
    #: initial wagers (cents) per basic-strategy edge of the rules they were played under (a profile changed
    #: between shoes mid-rating: each round's theo takes its own rules' edge)
    wagers_by_edge: dict[float, int] = field(default_factory=dict)
    #: :meth:`public_json`'s figures but the minutes, and what they were made from (made again when that changes)
    _public: tuple[tuple[int, int, int, float], dict[str, Any]] | None = field(default=None, init=False,
                                                                               compare=False, repr=False)

    def add_wager(self, cents: int, edge: float) -> None:
        """One initial wager, played under rules of basic-strategy edge ``edge``."""
        self.initial_wagers += cents
        self.wagers_by_edge[edge] = self.wagers_by_edge.get(edge, 0) + cents

    def add_departure(self, departure: Departure) -> None:
        """One more departure: counted and costed, and listed among the latest :data:`DEPARTURES_KEPT`."""
        self.departures_count += 1
        self.departures_cost += departure.cost
        self.departures.append(departure)
        if len(self.departures) > DEPARTURES_KEPT:
            del self.departures[0]

    @property
    def theoretical_loss(self) -> float:
        """Initial wagers x the basic-strategy edge of the rules each was played under (cents, exact): what the
        industry computes."""
        return sum(cents * edge for edge, cents in self.wagers_by_edge.items())

    @property
    def theoretical_edge(self) -> float:
        """The edge the theoretical loss comes to per unit of initial wager (the profile's edge while the rules
        never changed; weighted by the wagers when they did)."""
        return self.theoretical_loss / self.initial_wagers if self.initial_wagers else self.edge

    @property
    def skill_cost(self) -> float:
        """What the departures from basic strategy cost at the moment each was made (cents, exact): kept as they
        come (a state's view reads it after every event: never a sum over the list)."""
        return self.departures_cost

    @property
    def skill_theoretical_loss(self) -> float:
        """The theoretical loss plus the cost of each departure (cents, exact)."""
        return self.theoretical_loss + self.skill_cost

    @property
    def open(self) -> bool:
        return self.ended is None

    def public_json(self) -> dict[str, Any]:
        """What a pit screen may see of a running rating (``state``: ``rated: true``, the number masked):
        no card number, no departures (they name cards and times a screen could match to the player)."""
        # built apart from to_json(), without the departures, and made again after each event the table takes: only
        # the minutes change at every event, the money figures at a settlement or a departure
        end = self.ended if self.ended is not None else max(self.last_seen, self.started)
        key = (self.rounds, self.hands, self.initial_wagers, self.departures_cost)
        if self._public is None or self._public[0] != key:
            self._public = key, {
                "average_bet": format_money(round(self.initial_wagers / self.hands) if self.hands else 0),
                "theoretical_loss": format_money(round(self.theoretical_loss)),
                "skill_theoretical_loss": format_money(round(self.skill_theoretical_loss))}
        return {"rated": True, "player": masked(self.player), "rating_id": self.rating_id, "started": self.started,
                "minutes": round((end - self.started) / 60.0, 2), "rounds": self.rounds, **self._public[1]}

    def to_json(self, *, departures: int = DEPARTURES_KEPT) -> dict[str, Any]:
        """The published rating: DESIGN "Rated play"'s fields, money as decimal strings; its latest ``departures``
        (``departures_count``: all of them; ``ratings/open`` shows :data:`OPEN_DEPARTURES`)."""
        end = self.ended if self.ended is not None else max(self.last_seen, self.started)
        average = round(self.initial_wagers / self.hands) if self.hands else 0
        return {
            "rating_id": self.rating_id,
            "spot": self.spot,
            "spots": list(self.spots),
            "player": self.player,
            "started": self.started,
            "ended": self.ended,
            "started_at": iso(self.started),
            "ended_at": None if self.ended is None else iso(self.ended),
            "ended_by": self.ended_by,
            "open": self.open,
            "minutes": round((end - self.started) / 60.0, 2),
            "rounds": self.rounds,
            "hands": self.hands,
            "initial_wagers": format_money(self.initial_wagers),
            "average_bet": format_money(average),
            "max_bet": format_money(self.max_bet),
            "house_net": format_money(self.house_net),
            "theoretical_edge": round(self.theoretical_edge, 6),
            "theoretical_loss": format_money(round(self.theoretical_loss)),
            "skill_theoretical_loss": format_money(round(self.skill_theoretical_loss)),
            "departures_count": self.departures_count,
            "departures": [d.to_json() for d in self.departures[max(0, len(self.departures) - departures):]],
        }

    def to_state(self) -> dict[str, Any]:
        """Every field, exact, for the book's checkpoint (:meth:`from_state` reads it back to the same rating)."""
        return {"rating_id": self.rating_id, "player": self.player, "spot": self.spot, "started": self.started,
                "edge": self.edge, "spots": list(self.spots), "ended": self.ended, "ended_by": self.ended_by,
                "rounds": self.rounds, "hands": self.hands, "initial_wagers": self.initial_wagers,
                "max_bet": self.max_bet, "house_net": self.house_net,
                "departures": [d.to_state() for d in self.departures], "departures_count": self.departures_count,
                "departures_cost": self.departures_cost, "last_played": self.last_played,
                "last_seen": self.last_seen, "wagers_by_edge": [[e, c] for e, c in self.wagers_by_edge.items()]}

    @classmethod
    def from_state(cls, data: dict[str, Any]) -> Rating:
        """The rating :meth:`to_state` wrote."""
        def opt(value: Any) -> float | None:
            return None if value is None else float(value)

        departures = [Departure.from_state(d) for d in data["departures"]]
        # a checkpoint of before the list was bounded holds every departure: its count and cost are the list's
        count = int(data.get("departures_count", len(departures)))
        cost = float(data["departures_cost"]) if "departures_cost" in data else float(sum(d.cost for d in departures))
        if count < len(departures):
            raise ValueError(f"{len(departures)} departures listed of {count}")
        departures = departures[max(0, len(departures) - DEPARTURES_KEPT):]
        return cls(
            str(data["rating_id"]), str(data["player"]), int(data["spot"]), float(data["started"]), float(data["edge"]),
            spots=[int(s) for s in data["spots"]], ended=opt(data["ended"]),
            ended_by=None if data["ended_by"] is None else str(data["ended_by"]), rounds=int(data["rounds"]),
            hands=int(data["hands"]), initial_wagers=int(data["initial_wagers"]), max_bet=int(data["max_bet"]),
            house_net=int(data["house_net"]), departures=departures, departures_count=count, departures_cost=cost,
            last_played=opt(data["last_played"]), last_seen=float(data["last_seen"]),
            wagers_by_edge={float(e): int(c) for e, c in data["wagers_by_edge"]})
