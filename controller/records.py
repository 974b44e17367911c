"""Game recall: the table's rounds rebuilt from its public records (DESIGN, "Journal integrity and game recall").

The reading of a journal's records, below both the table service (``history``, ``tablectl recall``) and the
analytics (the live topic, ``tablectl report``), which import it from here; it imports only the game's cards
and money.

How it works
------------
Everything here reads the **public** records only: the outbox bodies of the journal, in ``seq``
order, which are exactly the ``events`` published on MQTT. So a recalled round can never show
more than the pit saw (the hole card stays ``null`` until its ``hole_card`` event), and the same
pure code serves ``tablectl recall`` and the retained ``<root>/history`` topic.

A round starts with the first ``bet`` after the previous round's ``round_settled`` (or with its
``no_more_bets`` if no ``bet`` came first) and ends with its own ``round_settled``; the records in
between that belong to no round (the next shuffle, a ``limits`` change between rounds) are left
out, as are wagers put out and taken back before a ``table_closed``. Only settled rounds are
listed: the round in play is on the ``events`` topic.

Each round (:func:`rounds`) is a JSON-ready dict, oldest first::

    {"round": 57, "started": 1795334400.125, "ended": 1795334407.002,     # ts of its first / last event
     "started_at": "2026-11-22T08:00:00.125Z", "ended_at": "...", "seq": [1030, 1058],
     "wagers": {"3": "10"},                                               # locked at no_more_bets
     "dealer_id": "d.ames",              # the dealer who dealt it (null: none on duty, or journaled before dealers)
     "relieved_by": "d.brun",            # only for a round dealt across a relief: the incoming dealer (null: sign-out)
     "cards": [{"seq": 1041, "to": "spot", "spot": 3, "hand": 0, "card": "7D"},
               {"seq": 1043, "to": "dealer", "card": "KD", "hole": true}, ...],   # deal order
     "dealer": {"cards": ["AS", "KD"], "total": 21, "blackjack": true},
     "spots": {"3": {"wager": "10", "hands": [{"cards": [...], "total": 16, "soft": false, "wager": "10",
                                              "status": "stood", "outcome": "lose", "payout": "-10"}],
                     "insurance": {"wager": "5", "payout": "10"}, "net": "0"}},
     "decisions": [{"seq": 1042, "ts": ..., "spot": 3, "hand": 0, "action": "stand", "by": "console"}],
     "insurance": {"offered": true, "even_money": false},                # null when not offered
     "alarms": [{"seq": ..., "ts": ..., "id": 7, "code": "...", "message": "...", "halts": false}],
     "totals": {...}, "events": [ ...every published body of the round, in seq order... ]}

``by`` is the record's ``operator`` when the record carries one (a command's author), else the
device the decision was keyed on (the dealer's ``console``). Money is a decimal string.

:class:`RoundHistory` keeps the last :data:`HISTORY_ROUNDS` rounds in memory for the table
service: seeded once from the journal (:meth:`RoundHistory.load` reads backwards only as far as
it needs), advanced at each settlement with just the records since the last one
(:meth:`RoundHistory.advance`), its payload made of each round's JSON text, serialised once.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any, Protocol

from controller.contract.topics import compact_json
from controller.game.cards import VALUE, hand_total
from controller.game.money import MoneyError, format_money, parse_money

__all__ = [
    "HISTORY_ROUNDS",
    "PublicLog",
    "RoundBuilder",
    "RoundHistory",
    "last_rounds",
    "rounds",
]

#: settled rounds in the retained ``history`` (and ``tablectl recall``'s default)
HISTORY_ROUNDS = 10
#: outbox records read per step when looking backwards for round boundaries
_WINDOW = 2048

Event = Mapping[str, Any]


class PublicLog(Protocol):
    """What recall needs of a journal: its outbox in ``seq`` order (see :class:`controller.journal.writer.Journal`)."""

    @property
    def last_seq(self) -> int: ...

    def records(self, from_seq: int = 1, to_seq: int | None = None) -> Iterable[Any]:
        """Rows with ``seq`` and ``body`` (the exact JSON text published)."""
        ...


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def cents(value: Any) -> int:
    """A money field of a public record (``"7.50"``, or whole dollars) in cents; 0 when absent or not money
    (the one reading every tool of the records uses: recall, report, the live analytics, the signals)."""
    if isinstance(value, bool) or not isinstance(value, str | int) or value == "":
        return 0
    try:
        return parse_money(value)
    except MoneyError:
        return 0


class _Hand:
    __slots__ = ("cards", "outcome", "payout", "status", "total", "wager")

    def __init__(self, wager: str | None, cards: list[str | None] | None = None) -> None:
        self.cards: list[str | None] = cards if cards is not None else []
        self.wager = wager
        self.status: str | None = None
        self.total: int | None = None
        self.outcome: str | None = None
        self.payout: str | None = None

    def to_json(self) -> dict[str, Any]:
        known = [c for c in self.cards if isinstance(c, str) and c in VALUE]
        total, soft = hand_total(known) if known else (0, False)
        return {"cards": list(self.cards), "total": total, "soft": soft, "wager": self.wager,
                "status": self.status, "outcome": self.outcome, "payout": self.payout}


class _Round:
    """One round being rebuilt from its records."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.number: int | None = None
        self.wagers: dict[str, str] = {}
        self.cards: list[dict[str, Any]] = []
        self.dealer: list[str | None] = []
        self.hole: tuple[int, int] | None = None  # (index in dealer, index in cards) of the face-down card
        self.spots: dict[str, list[_Hand]] = {}
        self.insurance: dict[str, dict[str, Any]] = {}
        self.insurance_offer: dict[str, Any] | None = None
        self.decisions: list[dict[str, Any]] = []
        self.alarms: list[dict[str, Any]] = []
        self.settled: dict[str, Any] | None = None
        self.dealer_id: str | None = None
        self.relieved: tuple[str | None] | None = None  # (the incoming dealer,) of a relief during the round

    def _hands(self, spot: Any) -> list[_Hand]:
        key = str(spot)
        hands = self.spots.get(key)
        if hands is None:
            hands = self.spots[key] = [_Hand(self.wagers.get(key))]
        return hands

    def _hand(self, spot: Any, index: Any) -> _Hand:
        hands = self._hands(spot)
        i = index if isinstance(index, int) and index >= 0 else 0
        while len(hands) <= i:
            hands.append(_Hand(None))
        return hands[i]

    def add(self, e: dict[str, Any]) -> None:
        self.events.append(e)
        kind = e.get("type")
        if kind == "no_more_bets":
            self.number = e.get("round") if isinstance(e.get("round"), int) else self.number
            self.dealer_id = _dealer(e.get("dealer_id"))
            wagers = e.get("wagers")
            if isinstance(wagers, dict):
                self.wagers = {str(k): str(v) for k, v in wagers.items()}
                for spot in sorted(self.wagers, key=_spot_order):
                    self._hands(spot)
        elif kind == "card":
            self._card(e)
        elif kind == "hole_card":
            if self.hole is not None:
                d, c = self.hole
                self.dealer[d] = e.get("card")
                self.cards[c]["card"] = e.get("card")
                self.hole = None
        elif kind == "decision":
            self._decision(e)
        elif kind == "hand_done":
            hand = self._hand(e.get("spot"), e.get("hand"))
            hand.status = e.get("status")
            hand.total = e.get("total")
        elif kind == "payout":
            hand = self._hand(e.get("spot"), e.get("hand"))
            hand.outcome = e.get("outcome")
            hand.payout = e.get("payout")
            if e.get("wager") is not None:
                hand.wager = e.get("wager")
        elif kind == "insurance_open":
            self.insurance_offer = {"offered": True, "even_money": bool(e.get("even_money"))}
        elif kind == "insurance_settled":
            self.insurance[str(e.get("spot"))] = {"wager": e.get("wager"), "payout": e.get("payout")}
        elif kind == "alarm":
            self.alarms.append({"seq": e.get("seq"), "ts": e.get("ts"),
                                **{k: v for k, v in e.items() if k not in ("seq", "ts", "type")}})
        elif kind == "alarm_cleared":
            for alarm in self.alarms:
                if alarm.get("id") == e.get("id") and "cleared" not in alarm:
                    alarm["cleared"] = {"seq": e.get("seq"), "ts": e.get("ts"), "by": e.get("by"),
                                        **({"operator": e["operator"]} if "operator" in e else {})}
        elif kind == "round_settled":
            self.settled = e
            if self.number is None and isinstance(e.get("round"), int):
                self.number = e["round"]
            if "dealer_id" in e:
                self.dealer_id = _dealer(e["dealer_id"])
            if "relieved_by" in e:
                self.relieved = (_dealer(e["relieved_by"]),)

    def _card(self, e: dict[str, Any]) -> None:
        to = e.get("to")
        entry: dict[str, Any] = {"seq": e.get("seq"), "to": to}
        if to == "spot":
            entry.update(spot=e.get("spot"), hand=e.get("hand"), card=e.get("card"))
            self._hand(e.get("spot"), e.get("hand")).cards.append(e.get("card"))
        elif to == "dealer":
            hole = bool(e.get("hole"))
            entry.update(card=e.get("card"), hole=hole)
            if hole and e.get("card") is None:
                self.hole = (len(self.dealer), len(self.cards))
            self.dealer.append(e.get("card"))
        else:  # burn, dead
            entry["card"] = e.get("card")
        self.cards.append(entry)

    def _decision(self, e: dict[str, Any]) -> None:
        operator = e.get("operator")
        self.decisions.append({
            "seq": e.get("seq"), "ts": e.get("ts"),
            **{k: v for k, v in e.items() if k not in ("seq", "ts", "type", "operator")},
            "by": operator if isinstance(operator, str) and operator else "console",
            **({"operator": operator} if operator is not None else {}),
        })
        action = e.get("action")
        spot, index = e.get("spot"), e.get("hand")
        if action == "split":
            hands = self._hands(spot)
            i = index if isinstance(index, int) and 0 <= index < len(hands) else 0
            hand = hands[i]
            moved = [hand.cards.pop()] if hand.cards else []
            wager = e.get("wager") if e.get("wager") is not None else hand.wager
            hands.insert(i + 1, _Hand(wager, moved))
        elif action == "double":
            hand = self._hand(spot, index)
            if hand.wager is not None and e.get("amount") is not None:
                hand.wager = format_money(cents(hand.wager) + cents(e.get("amount")))

    def finish(self) -> dict[str, Any]:
        events = self.events
        settled = self.settled or {}
        nets_value = settled.get("nets")
        nets: dict[str, Any] = nets_value if isinstance(nets_value, dict) else {}
        spots: dict[str, Any] = {}
        for key in sorted(set(self.spots) | set(self.insurance) | set(nets), key=_spot_order):
            hands = [h.to_json() for h in self.spots.get(key, [])]
            insurance = self.insurance.get(key)
            net = sum(cents(h["payout"]) for h in hands) + (cents(insurance["payout"]) if insurance else 0)
            spots[key] = {"wager": self.wagers.get(key), "hands": hands, "insurance": insurance,
                          "net": format_money(net)}
        dealer_known = [c for c in self.dealer if isinstance(c, str) and c in VALUE]
        sd_value = settled.get("dealer")
        sd: dict[str, Any] = sd_value if isinstance(sd_value, dict) else {}
        first_ts = float(events[0].get("ts") or 0.0)
        last_ts = float(events[-1].get("ts") or 0.0)
        return {
            "round": self.number,
            "started": first_ts,
            "ended": last_ts,
            "started_at": _iso(first_ts),
            "ended_at": _iso(last_ts),
            "seq": [events[0].get("seq"), events[-1].get("seq")],
            "wagers": self.wagers,
            "dealer_id": self.dealer_id,
            **({"relieved_by": self.relieved[0]} if self.relieved is not None else {}),
            "cards": self.cards,
            "dealer": {"cards": list(self.dealer),
                       "total": sd.get("total", hand_total(dealer_known)[0] if dealer_known else 0),
                       "blackjack": sd.get("blackjack")},
            "spots": spots,
            "decisions": self.decisions,
            "insurance": self.insurance_offer,
            "alarms": self.alarms,
            "totals": settled.get("totals"),
            "events": events,
        }


def _dealer(value: Any) -> str | None:
    """A record's dealer id as a round names it (anything but a string: none)."""
    return value if isinstance(value, str) else None


def _spot_order(key: str) -> tuple[int, str]:
    return (int(key), key) if key.isdigit() else (1 << 30, key)


#: records about the journal itself (who migrated or adopted it, and why) and the commands the table refused
#: (who tried what: an audit sees attempts as well as acts), kept with the next round's events
JOURNAL_NOTES = frozenset({"journal_migrated", "journal_adopted", "command_refused"})


class RoundBuilder:
    """Feed public records in ``seq`` order (:meth:`add`); each ``round_settled`` gives its round.

    Incremental and pure: no I/O, no clock. :func:`rounds` is the one-shot form.
    """

    def __init__(self) -> None:
        self._round: _Round | None = None
        self._notes: list[dict[str, Any]] = []

    def add(self, event: Event) -> dict[str, Any] | None:
        """Take one record; return the finished round when ``event`` settles one, else None."""
        e = dict(event)
        kind = e.get("type")
        current = self._round
        if current is None:
            if kind in JOURNAL_NOTES:  # said between rounds: shown with the round that follows
                self._notes.append(e)
                return None
            if kind not in ("bet", "no_more_bets"):
                return None
            current = self._round = _Round()
            for note in self._notes:
                current.add(note)
            self._notes.clear()
        elif kind == "table_closed" and current.number is None:
            self._round = None  # wagers given back before the deal: no round (its journal notes wait on)
            self._notes = [n for n in current.events if n.get("type") in JOURNAL_NOTES]
            return None
        current.add(e)
        if kind == "round_settled":
            self._round = None
            return current.finish()
        return None

    @property
    def in_round(self) -> bool:
        """A round has started (its first ``bet`` or ``no_more_bets`` seen) and is not settled."""
        return self._round is not None


def rounds(events: Iterable[Event]) -> Iterator[dict[str, Any]]:
    """The settled rounds of ``events`` (public records in ``seq`` order), oldest first."""
    builder = RoundBuilder()
    for event in events:
        done = builder.add(event)
        if done is not None:
            yield done


def last_rounds(events: Iterable[Event], n: int = HISTORY_ROUNDS) -> list[dict[str, Any]]:
    """The last ``n`` settled rounds of ``events``, oldest first."""
    return list(deque(rounds(events), maxlen=max(n, 0)))


def _bodies(rows: Iterable[Any]) -> Iterator[dict[str, Any]]:
    for row in rows:
        body = json.loads(row.body)
        if isinstance(body, dict):
            yield body


def _is_settle(row: Any) -> bool:
    if '"round_settled"' not in row.body:  # cheap test first; the parse settles it
        return False
    try:
        return bool(json.loads(row.body).get("type") == "round_settled")
    except (ValueError, AttributeError):
        return False


def settle_boundary(log: PublicLog, n: int) -> int:
    """The ``seq`` after which the last ``n`` settled rounds of ``log`` begin (0: from the start).

    Reads backwards from the newest record, a window at a time, only until ``n + 1`` settlements
    are found: the ``n + 1``-th newest one ends the round before them.
    """
    found: list[int] = []
    hi = log.last_seq
    while hi > 0:
        lo = max(1, hi - _WINDOW + 1)
        found = [row.seq for row in log.records(lo, hi) if _is_settle(row)] + found
        if len(found) > n:
            return int(found[-(n + 1)])
        hi = lo - 1
    return 0


class RoundHistory:
    """The last ``keep`` settled rounds of a table, for its retained ``history`` topic."""

    def __init__(self, keep: int = HISTORY_ROUNDS) -> None:
        self.keep = keep
        self._rounds: deque[tuple[dict[str, Any], str]] = deque(maxlen=keep)
        #: the last ``seq`` read (records up to it are in the history); None: not loaded yet
        self.upto: int | None = None
        self._builder = RoundBuilder()

    @property
    def loaded(self) -> bool:
        return self.upto is not None

    def _take(self, rows: Iterable[Any]) -> None:
        for body in _bodies(rows):
            done = self._builder.add(body)
            if done is not None:
                self._rounds.append((done, compact_json(done).decode()))

    def load(self, log: PublicLog) -> None:
        """Seed from the journal: the last ``keep`` settled rounds, and the round in play so far."""
        self._rounds.clear()
        self._builder = RoundBuilder()
        last = log.last_seq
        start = settle_boundary(log, self.keep)
        self._take(log.records(start + 1, last))
        self.upto = last

    def advance(self, log: PublicLog) -> None:
        """Read the records committed since the last call (at a settlement: its round's records)."""
        if self.upto is None:
            self.load(log)
            return
        last = log.last_seq
        if last > self.upto:
            self._take(log.records(self.upto + 1, last))
            self.upto = last

    def rounds(self) -> list[dict[str, Any]]:
        return [r for r, _ in self._rounds]

    def payload(self) -> bytes:
        """The ``history`` message: the rounds as a JSON list, oldest first."""
        return ("[" + ",".join(text for _, text in self._rounds) + "]").encode()
