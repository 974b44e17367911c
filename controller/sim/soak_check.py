"""The soak's invariants over what a pit subscriber sees: sans-I/O, fed one MQTT message at a time.

:class:`PitChecker` is told every message of ``<prefix>/#`` (``on_message``) and, now and then,
the time (``check_progress``). It raises :class:`InvariantBroken` naming the table and what broke:

* every ``seq`` of a table's ``events`` reaches the subscriber once, in order (a repeat after a
  crash or an outage is allowed with the same body; a gap or another body is not). With
  ``reorder_s`` (the soak on a NATS cluster: a publish the cluster did not take as it lost its
  quorum comes again after later ones it took, see docs/floor.md) a seq may come after later
  ones if it comes within ``reorder_s``: the later ones wait and are checked in seq order, each
  such delivery is counted (``reordered``), and a gap not filled in time breaks the invariant;
* money is conserved: at each ``round_settled`` the house's net moved by exactly minus what the
  spots netted, and the handle by at least the round's wagers;
* cards are conserved: within a shoe no card shows more often than the decks hold it, and no
  more cards come out than the shoe holds;
* the hole card is never published before it is turned: while the players play (phases
  ``dealing``, ``insurance``, ``players``) no dealer card past the first has a value;
* progress: a table that is online, open, not halted, with every device ok and rounds left
  settles a round within ``bound_s`` of the last moment it could not (a fault, an outage, a
  close, a restart: the driver calls :meth:`PitChecker.pause` for those it causes itself).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from controller.contract.phases import Phase
from controller.game.money import parse_money

__all__ = ["InvariantBroken", "PitChecker"]

#: phases in which the hole card (any dealer card after the first) must have no value
_HOLE_HIDDEN = frozenset({"dealing", "insurance", "players"})


class InvariantBroken(AssertionError):
    """An invariant failed: ``invariant`` names it, the message says where and how."""

    def __init__(self, invariant: str, detail: str) -> None:
        super().__init__(f"{invariant}: {detail}")
        self.invariant = invariant
        self.detail = detail


@dataclass
class _TableView:
    """What the subscriber knows of one table."""

    bodies: dict[int, bytes] = field(default_factory=dict)  # recent seq -> body (for repeats)
    top: int = 0  # the highest seq seen (all below it seen once)
    house_net: int = 0  # at the last round_settled (0 after table_opened)
    handle: int = 0
    wagers: int = 0  # the current round's wagers at no more bets
    shoe: Counter[str] = field(default_factory=Counter)
    shoe_cards: int = 0
    rounds_settled: int = 0  # round_settled events seen
    last_progress: float = 0.0
    online: bool = False
    state: dict[str, Any] = field(default_factory=dict)
    ahead: dict[int, bytes] = field(default_factory=dict)  # seqs come before the one after ``top`` (reorder_s)
    gap_since: float | None = None  # when the first seq past a gap came


class PitChecker:
    """Checks a pit's MQTT stream against the invariants of the module docstring."""

    def __init__(self, prefix: str, *, decks: int, rounds: int | None, bound_s: float, now: float,
                 reorder_s: float | None = None) -> None:
        self.prefix = prefix
        self.decks = decks
        self.cards_in_shoe = 52 * decks
        self.rounds = rounds
        self.bound_s = bound_s
        self.tables: dict[str, _TableView] = {}
        self.events = 0
        self.repeats = 0
        self.reorder_s = reorder_s
        self.reordered = 0  # seqs that came after later ones (reorder_s)
        self.stale_states = 0  # states older than one already seen (a broker's retained copy sent again)
        self._started = now

    def _view(self, table: str, now: float) -> _TableView:
        view = self.tables.get(table)
        if view is None:
            view = self.tables[table] = _TableView(last_progress=now)
        return view

    def pause(self, now: float, table: str | None = None) -> None:
        """Progress could not be made until ``now`` (an outage, a restart, a close): its clock restarts."""
        for name, view in self.tables.items():
            if table is None or name == table:
                view.last_progress = max(view.last_progress, now)

    # -- messages -------------------------------------------------------------------------------

    def on_message(self, topic: str, payload: bytes, now: float) -> None:
        if not topic.startswith(self.prefix + "/"):
            return
        table, _, kind = topic[len(self.prefix) + 1:].partition("/")
        view = self._view(table, now)
        if kind == "status":
            view.online = payload == b"online"
            view.last_progress = max(view.last_progress, now)
        elif kind == "state":
            self._on_state(table, view, payload, now)
        elif kind == "events":
            self._on_event(table, view, payload, now)

    def _on_state(self, table: str, view: _TableView, payload: bytes, now: float) -> None:
        state = json.loads(payload)
        if int(state.get("seq", 0)) >= int(view.state.get("seq", 0)):
            view.state = state
            if not self._healthy(state):
                view.last_progress = max(view.last_progress, now)
        else:  # an older retained copy a broker sent again (a cluster's, stored late): not the table's news
            self.stale_states += 1
        if state.get("phase") in _HOLE_HIDDEN:
            cards = state.get("dealer", {}).get("cards", [])
            shown = [c for c in cards[1:] if c is not None]
            if shown:
                raise InvariantBroken("hole card secret", f"{table} seq {state.get('seq')}: dealer cards {cards} "
                                      f"published in phase {state['phase']}")

    @staticmethod
    def _healthy(state: dict[str, Any]) -> bool:
        devices = state.get("devices", {})
        return (state.get("phase") != Phase.CLOSED and state.get("halted") is None
                and all(v == "ok" for v in devices.values()))

    def _on_event(self, table: str, view: _TableView, payload: bytes, now: float) -> None:
        event = json.loads(payload)
        seq = int(event["seq"])
        if seq <= view.top:
            first = view.bodies.get(seq)
            if first is not None and first != payload:
                raise InvariantBroken("every seq once, in order", f"{table} seq {seq} repeated with another body")
            self.repeats += 1
            return
        if seq != view.top + 1:
            if self.reorder_s is None:
                raise InvariantBroken("every seq once, in order", f"{table}: seq {seq} after {view.top} (a gap)")
            first = view.ahead.setdefault(seq, payload)
            if first != payload:
                raise InvariantBroken("every seq once, in order", f"{table} seq {seq} repeated with another body")
            if view.gap_since is None:
                view.gap_since = now
            return
        if view.ahead:
            self.reordered += 1
        self._take(table, view, seq, payload, event, now)
        while view.top + 1 in view.ahead:  # the seqs that came before this one, now in order
            body = view.ahead.pop(view.top + 1)
            self._take(table, view, view.top + 1, body, json.loads(body), now)
        view.ahead = {s: b for s, b in view.ahead.items() if s > view.top}
        view.gap_since = now if view.ahead else None

    def _take(self, table: str, view: _TableView, seq: int, payload: bytes, event: dict[str, Any], now: float) -> None:
        view.top = seq
        view.bodies[seq] = payload
        if len(view.bodies) > 4096:
            for old in sorted(view.bodies)[:1024]:
                del view.bodies[old]
        self.events += 1
        self._apply(table, view, event, now)

    def _apply(self, table: str, view: _TableView, event: dict[str, Any], now: float) -> None:
        etype = event.get("type")
        if etype == "table_opened":
            view.house_net = view.handle = 0
        elif etype == "no_more_bets":
            view.wagers = sum(parse_money(v) for v in event.get("wagers", {}).values())
        elif etype == "shuffle_done" and not event.get("discards"):
            view.shoe.clear()
            view.shoe_cards = 0
        elif etype in ("card", "hole_card"):
            self._on_card(table, view, event)
        elif etype == "round_settled":
            self._on_settled(table, view, event, now)

    def _on_card(self, table: str, view: _TableView, event: dict[str, Any]) -> None:
        card = event.get("card")
        if event["type"] == "card":
            view.shoe_cards += 1
            if view.shoe_cards > self.cards_in_shoe:
                raise InvariantBroken("cards conserved", f"{table} seq {event['seq']}: card {view.shoe_cards} out "
                                      f"of a {self.cards_in_shoe}-card shoe")
        if card is not None:
            view.shoe[card] += 1
            if view.shoe[card] > self.decks:
                raise InvariantBroken("cards conserved", f"{table} seq {event['seq']}: {card} shown "
                                      f"{view.shoe[card]} times in one {self.decks}-deck shoe")

    def _on_settled(self, table: str, view: _TableView, event: dict[str, Any], now: float) -> None:
        totals = event["totals"]
        house_net, handle = parse_money(totals["house_net"]), parse_money(totals["handle"])
        nets = sum(parse_money(v) for v in event.get("nets", {}).values())
        if house_net - view.house_net != -nets:
            raise InvariantBroken("money conserved", f"{table} round {event.get('round')} (seq {event['seq']}): "
                                  f"house net moved {house_net - view.house_net} cents, the spots netted {nets}")
        if handle - view.handle < view.wagers:
            raise InvariantBroken("money conserved", f"{table} round {event.get('round')}: handle moved "
                                  f"{handle - view.handle} cents, less than the {view.wagers} wagered")
        view.house_net, view.handle, view.wagers = house_net, handle, 0
        view.rounds_settled += 1
        view.last_progress = now

    # -- progress -------------------------------------------------------------------------------

    def check_progress(self, now: float, *, done: frozenset[str] = frozenset()) -> None:
        """Raise when a table that could play settled nothing for longer than the bound, or left a gap open
        longer than ``reorder_s``."""
        for table, view in self.tables.items():
            if view.gap_since is not None and self.reorder_s is not None and now - view.gap_since > self.reorder_s:
                raise InvariantBroken("every seq once, in order", f"{table}: seq {view.top + 1} missing, "
                                      f"{min(view.ahead)} and on came {now - view.gap_since:.0f} s ago (a gap)")
            if table in done or not view.online or not view.state:
                continue
            if not self._healthy(view.state):
                view.last_progress = max(view.last_progress, now)
                continue
            if now - view.last_progress > self.bound_s:
                st = view.state
                raise InvariantBroken(
                    "progress", f"{table} settled no round for {now - view.last_progress:.0f} s while open and "
                    f"unhalted (phase {st.get('phase')}, awaiting {st.get('awaiting')}, round {st.get('round')}, "
                    f"seq {st.get('seq')})")
