"""A JSON snapshot of the round engine, so recovery is "latest snapshot + the inputs after it".

:func:`export_state` turns a :class:`~controller.game.table.Table` into plain JSON values (ints,
strings, lists, dicts, bools, floats, None: no pickle, nothing executable) and
:func:`restore_state` builds a table that behaves exactly like the original from then on: the same
effects for every later event, the same :meth:`~controller.game.table.Table.snapshot`, the same
refusals. It works on the pure engine and on the mypyc-compiled one (a snapshot of one restores
into the other).

What is saved: every attribute of ``Table.__init__`` that a later event reads (listed in
:data:`SAVED_ATTRIBUTES`; a test fails when the engine gains one that is not), the betting layout,
the round's spots with every field of their hands, the dealer's cards, the deal plan (spot numbers,
``None`` for the dealer), the shoe counters and the cards seen, the deck set, the clock, devices,
alarms and totals. Object identity is rebuilt: ``order`` and ``deal_plan`` refer to the very
``Spot`` objects of ``spots``, and the dealer's ``Hand`` wraps the ``dealer`` list.

Secrecy: a snapshot holds the dealer's hole card once it has been read by the shoe (the engine
needs it to continue) and the burnt cards. It is meant for the table's private journal only (mode
0600, like the journaled inputs that hold every card anyway), never for publication: the public
view is :meth:`Table.snapshot`.

Compatibility: a snapshot names its format version, the profile and a digest of its rules;
:func:`restore_state` refuses (:class:`SnapshotError`) one of another version, another profile, or
of a profile whose rules have changed since, and any malformed one. The caller then replays the
journal from the start.
"""

from __future__ import annotations

from typing import Any, Final

from controller.game.alarms import Alarm
from controller.game.cards import VALUE
from controller.game.hand import Hand, Spot
from controller.game.rules import Rules, RulesFormatError, rules_digest, rules_from_json, rules_to_json
from controller.game.table import Table
from controller.game.transitions import PHASES

__all__ = ["FORMAT", "SAVED_ATTRIBUTES", "VERSION", "SnapshotError", "export_state", "restore_state", "rules_digest",
           "snapshot_rules"]

#: what a snapshot says it is
FORMAT: Final = "tablectl-engine-snapshot"
#: bump on any change to the layout below (an old snapshot is then refused and the journal replayed)
VERSION: Final = 4  # 3: the rules in force saved with the state; 4: a close asked during the round (close_asked)

#: Every ``Table`` attribute the snapshot carries.
SAVED_ATTRIBUTES: Final = (
    "phase", "round", "round_open", "_dealer_play", "min_bet", "max_bet", "next_limits", "close_asked", "close_by",
    "bets", "spots", "order", "dealer", "_dealer_hand", "hole_revealed", "hole_face_down", "hole_at", "awaiting_reveal",
    "dealer_blackjack", "deal_plan", "deal_pos", "active", "awaiting_peek", "insurance_open", "insurance_declined",
    "third_card_dealt", "burned",
    "cards_dealt", "shuffles", "cards_before_round", "burn_pending", "cut_card_reached", "shuffle_due",
    "shuffle_reason", "awaiting_discards", "reshuffle_after_round", "seen",
    "deck_set", "deck_opened_at", "now", "devices", "alarms", "next_alarm_id", "rounds_settled", "handle_cents",
    "house_net",
)
#: ``Table`` attributes deliberately not saved, and why.
NOT_SAVED: Final = {
    "rules": "saved beside the state (rules_to_json) and given back to restore_state by snapshot_rules",
    "narrate": "given to restore_state",
    "_out": "the effects of the event being handled: rebuilt by each handle()",
    "_event": "the event being handled: set by each handle()",
    "_leads_to": "where the event being handled may lead: set by each handle()",
    "_dispatch_phase": "which phase _dispatch_now is for: handle() looks it up again when the phase is another",
    "_dispatch_now": "the dispatch of _dispatch_phase",
}

_HAND_FIELDS: Final = (
    "cards", "doubled", "from_split", "outcome", "payout", "soft", "split_aces", "status", "total", "wager",
)


class SnapshotError(ValueError):
    """A snapshot that cannot be taken or restored (the reason is in the message)."""


# ---------------------------------------------------------------------------------------------- export


def _hand_out(hand: Hand) -> dict[str, Any]:
    return {
        "cards": list(hand.cards),
        "wager": hand.wager,
        "doubled": hand.doubled,
        "from_split": hand.from_split,
        "split_aces": hand.split_aces,
        "status": hand.status,
        "outcome": hand.outcome,
        "payout": hand.payout,
        "total": hand.total,
        "soft": hand.soft,
    }


def _spot_out(spot: Spot) -> dict[str, Any]:
    return {
        "number": spot.number,
        "wager": spot.wager,
        "player": spot.player,
        "insurance": spot.insurance,
        "insurance_payout": spot.insurance_payout,
        "hands": [_hand_out(h) for h in spot.hands],
    }


def export_state(table: Table) -> dict[str, Any]:
    """The engine's full state as plain JSON values (see the module docstring: it holds the hole card)."""
    t = table
    for n, s in t.spots.items():
        if s.number != n:
            raise SnapshotError(f"spot {s.number} is filed under {n}")
    for s in t.order:
        if t.spots.get(s.number) is not s:
            raise SnapshotError(f"spot {s.number} of the deal order is not a spot of the round")
    for s2 in t.deal_plan:
        if s2 is not None and t.spots.get(s2.number) is not s2:
            raise SnapshotError(f"spot {s2.number} of the deal plan is not a spot of the round")
    if t._dealer_hand.cards is not t.dealer:
        raise SnapshotError("the dealer's hand does not hold the dealer's cards")
    for key, alarm in t.alarms.items():
        if alarm.id != key:
            raise SnapshotError(f"alarm {alarm.id} is filed under {key}")
    state: dict[str, Any] = {
        "phase": t.phase,
        "round": t.round,
        "round_open": t.round_open,
        "dealer_play": t._dealer_play,
        "min_bet": t.min_bet,
        "max_bet": t.max_bet,
        "next_limits": None if t.next_limits is None else list(t.next_limits),
        "close_asked": t.close_asked,
        "close_by": t.close_by,
        "bets": [[n, amount, player] for n, (amount, player) in t.bets.items()],
        "spots": [_spot_out(s) for s in t.spots.values()],
        "order": [s.number for s in t.order],
        "dealer_hand": _hand_out(t._dealer_hand),
        "hole_revealed": t.hole_revealed,
        "hole_face_down": t.hole_face_down,
        "hole_at": t.hole_at,
        "awaiting_reveal": t.awaiting_reveal,
        "dealer_blackjack": t.dealer_blackjack,
        "deal_plan": [None if s is None else s.number for s in t.deal_plan],
        "deal_pos": t.deal_pos,
        "active": None if t.active is None else [t.active[0], t.active[1]],
        "awaiting_peek": t.awaiting_peek,
        "insurance_open": t.insurance_open,
        "insurance_declined": sorted(t.insurance_declined),
        "third_card_dealt": t.third_card_dealt,
        "burned": list(t.burned),
        "cards_dealt": t.cards_dealt,
        "shuffles": t.shuffles,
        "cards_before_round": t.cards_before_round,
        "burn_pending": t.burn_pending,
        "cut_card_reached": t.cut_card_reached,
        "shuffle_due": t.shuffle_due,
        "shuffle_reason": t.shuffle_reason,
        "awaiting_discards": t.awaiting_discards,
        "reshuffle_after_round": t.reshuffle_after_round,
        "seen": [[card, n] for card, n in t.seen.items()],
        "deck_set": t.deck_set,
        "deck_opened_at": t.deck_opened_at,
        "now": t.now,
        "devices": [[name, status] for name, status in t.devices.items()],
        "alarms": [[a.id, a.code, a.message, a.halts] for a in t.alarms.values()],
        "next_alarm_id": t.next_alarm_id,
        "rounds_settled": t.rounds_settled,
        "handle_cents": t.handle_cents,
        "house_net": t.house_net,
    }
    return {
        "format": FORMAT,
        "version": VERSION,
        "profile": t.rules.name,
        "rules_digest": rules_digest(t.rules),
        "rules": rules_to_json(t.rules),
        "table": state,
    }


# ---------------------------------------------------------------------------------------------- restore
# Every value is checked for its type: the pure engine would take anything and fail later, the compiled
# one would raise a bare TypeError; a snapshot that does not check out is refused as a whole.


def _fail(what: str, value: Any) -> SnapshotError:
    return SnapshotError(f"{what}: unexpected value {value!r}")


def _int(v: Any, what: str) -> int:
    if type(v) is not int:
        raise _fail(what, v)
    return v


def _opt_int(v: Any, what: str) -> int | None:
    return None if v is None else _int(v, what)


def _bool(v: Any, what: str) -> bool:
    if type(v) is not bool:
        raise _fail(what, v)
    return v


def _opt_bool(v: Any, what: str) -> bool | None:
    return None if v is None else _bool(v, what)


def _str(v: Any, what: str) -> str:
    if type(v) is not str:
        raise _fail(what, v)
    return v


def _opt_str(v: Any, what: str) -> str | None:
    return None if v is None else _str(v, what)


def _opt_time(v: Any, what: str) -> float | None:
    if v is None:
        return None
    if type(v) not in (int, float):
        raise _fail(what, v)
    kept: float | None = v  # as stored (int or float): the restored clock is exactly the original's
    return kept


def _list(v: Any, what: str) -> list[Any]:
    if type(v) is not list:
        raise _fail(what, v)
    return v


def _pair(v: Any, what: str, size: int) -> list[Any]:
    items = _list(v, what)
    if len(items) != size:
        raise _fail(what, v)
    return items


def _dict(v: Any, what: str) -> dict[str, Any]:
    if type(v) is not dict:
        raise _fail(what, v)
    return v


def _cards(v: Any, what: str) -> list[str]:
    cards = [_str(c, what) for c in _list(v, what)]
    for c in cards:
        if c not in VALUE:
            raise _fail(what, c)
    return cards


def _hand_in(data: Any, what: str) -> Hand:
    d = _dict(data, what)
    if set(d) != set(_HAND_FIELDS):
        raise SnapshotError(f"{what}: fields {sorted(d)}, expected {sorted(_HAND_FIELDS)}")
    hand = Hand(_int(d["wager"], f"{what} wager"), _cards(d["cards"], f"{what} cards"),
                from_split=_bool(d["from_split"], f"{what} from_split"))
    if (hand.total, hand.soft) != (d["total"], d["soft"]):
        raise SnapshotError(f"{what}: total {d['total']!r} (soft {d['soft']!r}) does not match cards {hand.cards}")
    hand.doubled = _bool(d["doubled"], f"{what} doubled")
    hand.split_aces = _bool(d["split_aces"], f"{what} split_aces")
    hand.status = _str(d["status"], f"{what} status")
    hand.outcome = _opt_str(d["outcome"], f"{what} outcome")
    hand.payout = _opt_int(d["payout"], f"{what} payout")
    return hand


def _spot_in(data: Any) -> Spot:
    d = _dict(data, "spot")
    number = _int(d["number"], "spot number")
    what = f"spot {number}"
    spot = Spot(number, _int(d["wager"], f"{what} wager"), _opt_str(d["player"], f"{what} player"))
    spot.insurance = _opt_int(d["insurance"], f"{what} insurance")
    spot.insurance_payout = _opt_int(d["insurance_payout"], f"{what} insurance_payout")
    spot.hands = [_hand_in(h, f"{what} hand {i}") for i, h in enumerate(_list(d["hands"], f"{what} hands"))]
    if not spot.hands:
        raise SnapshotError(f"{what}: no hand")
    return spot


def _check_header(rules: Rules, data: Any) -> dict[str, Any]:
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise SnapshotError("not an engine snapshot")
    if data.get("version") != VERSION:
        raise SnapshotError(f"snapshot format version {data.get('version')!r}; this engine reads version {VERSION}")
    if data.get("profile") != rules.name:
        raise SnapshotError(f"snapshot of profile {data.get('profile')!r}; this table plays {rules.name!r}")
    if data.get("rules_digest") != rules_digest(rules):
        raise SnapshotError(f"the rules of profile {rules.name!r} have changed since the snapshot")
    return _dict(data.get("table"), "table")


def snapshot_rules(data: Any) -> Rules:
    """The rules a snapshot was taken under (saved in it, checked against its digest): the rules in force
    then, which may not be the table's configured ones (a journal's rules change between shoes)."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise SnapshotError("not an engine snapshot")
    if data.get("version") != VERSION:
        raise SnapshotError(f"snapshot format version {data.get('version')!r}; this engine reads version {VERSION}")
    try:
        rules = rules_from_json(data.get("rules"))
    except RulesFormatError as exc:
        raise SnapshotError(f"its rules: {exc}") from None
    if rules_digest(rules) != data.get("rules_digest"):
        raise SnapshotError("its rules do not match their digest")
    return rules


def restore_state(rules: Rules, data: dict[str, Any], *, narrate: bool = True) -> Table:
    """A new table in exactly the state :func:`export_state` saved; :class:`SnapshotError` if it cannot be."""
    s = _check_header(rules, data)
    try:
        return _restore(rules, s, narrate)
    except SnapshotError:
        raise
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise SnapshotError(f"malformed snapshot: {type(exc).__name__}: {exc}") from exc


def _restore(rules: Rules, s: dict[str, Any], narrate: bool) -> Table:
    expected = set(_STATE_KEYS)
    if set(s) != expected:
        raise SnapshotError(f"unexpected fields {sorted(set(s) - expected)}, missing {sorted(expected - set(s))}")
    t = Table(rules, narrate=narrate)
    phase = _str(s["phase"], "phase")
    if phase not in PHASES:
        raise _fail("phase", phase)
    t.phase = phase
    t.round = _int(s["round"], "round")
    t.round_open = _bool(s["round_open"], "round_open")
    t._dealer_play = _str(s["dealer_play"], "dealer_play")
    t.min_bet = _int(s["min_bet"], "min_bet")
    t.max_bet = _int(s["max_bet"], "max_bet")
    if s["next_limits"] is not None:
        low, high = _pair(s["next_limits"], "next_limits", 2)
        t.next_limits = (_int(low, "next_limits"), _int(high, "next_limits"))
    t.close_asked = _bool(s["close_asked"], "close_asked")
    t.close_by = _opt_str(s["close_by"], "close_by")
    bets: dict[int, tuple[int, str | None]] = {}
    for item in _list(s["bets"], "bets"):
        n, amount, player = _pair(item, "bet", 3)
        bets[_int(n, "bet spot")] = (_int(amount, "bet amount"), _opt_str(player, "bet player"))
    t.bets = bets

    spots: dict[int, Spot] = {}
    for item in _list(s["spots"], "spots"):
        spot = _spot_in(item)
        if spot.number in spots:
            raise SnapshotError(f"spot {spot.number} appears twice")
        spots[spot.number] = spot

    def spot_ref(n: Any, what: str) -> Spot:
        spot = spots.get(_int(n, what))
        if spot is None:
            raise SnapshotError(f"{what}: spot {n} is not in the round")
        return spot

    t.spots = spots
    t.order = [spot_ref(n, "order") for n in _list(s["order"], "order")]
    t.deal_plan = [None if n is None else spot_ref(n, "deal_plan") for n in _list(s["deal_plan"], "deal_plan")]
    dealer_hand = _hand_in(s["dealer_hand"], "dealer hand")
    t._dealer_hand = dealer_hand
    t.dealer = dealer_hand.cards
    t.hole_revealed = _bool(s["hole_revealed"], "hole_revealed")
    t.hole_face_down = _bool(s["hole_face_down"], "hole_face_down")
    t.hole_at = _int(s["hole_at"], "hole_at")
    t.awaiting_reveal = _bool(s["awaiting_reveal"], "awaiting_reveal")
    t.dealer_blackjack = _opt_bool(s["dealer_blackjack"], "dealer_blackjack")
    t.deal_pos = _int(s["deal_pos"], "deal_pos")
    if not 0 <= t.deal_pos <= len(t.deal_plan):
        raise _fail("deal_pos", t.deal_pos)
    active = s["active"]
    if active is None:
        t.active = None
    else:
        spot_no, idx = _pair(active, "active", 2)
        if not 0 <= _int(idx, "active hand") < len(spot_ref(spot_no, "active").hands):
            raise _fail("active", active)
        t.active = (spot_no, idx)
    t.awaiting_peek = _bool(s["awaiting_peek"], "awaiting_peek")
    t.insurance_open = _bool(s["insurance_open"], "insurance_open")
    t.insurance_declined = {_int(n, "insurance_declined") for n in _list(s["insurance_declined"], "insurance_declined")}
    t.third_card_dealt = _bool(s["third_card_dealt"], "third_card_dealt")
    t.burned = [_str(c, "burned") for c in _list(s["burned"], "burned")]

    t.cards_dealt = _int(s["cards_dealt"], "cards_dealt")
    t.shuffles = _int(s["shuffles"], "shuffles")
    t.cards_before_round = _int(s["cards_before_round"], "cards_before_round")
    t.burn_pending = _int(s["burn_pending"], "burn_pending")
    t.cut_card_reached = _bool(s["cut_card_reached"], "cut_card_reached")
    t.shuffle_due = _bool(s["shuffle_due"], "shuffle_due")
    t.shuffle_reason = _str(s["shuffle_reason"], "shuffle_reason")
    t.awaiting_discards = _opt_int(s["awaiting_discards"], "awaiting_discards")
    t.reshuffle_after_round = _bool(s["reshuffle_after_round"], "reshuffle_after_round")
    seen: dict[str, int] = {}
    for item in _list(s["seen"], "seen"):
        card, n = _pair(item, "seen", 2)
        seen[_cards([card], "seen")[0]] = _int(n, "seen count")
    t.seen = seen

    t.deck_set = _str(s["deck_set"], "deck_set")
    t.deck_opened_at = _opt_time(s["deck_opened_at"], "deck_opened_at")
    t.now = _opt_time(s["now"], "now")
    devices: dict[str, str] = {}
    for item in _list(s["devices"], "devices"):
        name, status = _pair(item, "device", 2)
        devices[_str(name, "device")] = _str(status, "device status")
    t.devices = devices
    alarms: dict[int, Alarm] = {}
    for item in _list(s["alarms"], "alarms"):
        aid, code, message, halts = _pair(item, "alarm", 4)
        alarm = Alarm(_int(aid, "alarm id"), _str(code, "alarm code"), _str(message, "alarm message"),
                      _bool(halts, "alarm halts"))
        alarms[alarm.id] = alarm
    t.alarms = alarms
    t.next_alarm_id = _int(s["next_alarm_id"], "next_alarm_id")
    t.rounds_settled = _int(s["rounds_settled"], "rounds_settled")
    t.handle_cents = _int(s["handle_cents"], "handle_cents")
    t.house_net = _int(s["house_net"], "house_net")
    return t


_STATE_KEYS: Final = (
    "phase", "round", "round_open", "dealer_play", "min_bet", "max_bet", "next_limits", "close_asked", "close_by",
    "bets", "spots", "order", "dealer_hand",
    "hole_revealed", "hole_face_down", "hole_at", "awaiting_reveal", "dealer_blackjack", "deal_plan", "deal_pos",
    "active", "awaiting_peek", "insurance_open", "insurance_declined", "third_card_dealt", "burned", "cards_dealt",
    "shuffles", "cards_before_round", "burn_pending", "cut_card_reached", "shuffle_due", "shuffle_reason",
    "awaiting_discards", "reshuffle_after_round", "seen", "deck_set", "deck_opened_at", "now", "devices", "alarms",
    "next_alarm_id", "rounds_settled", "handle_cents", "house_net",
)
