"""A JSON snapshot of the round engine, so recovery is "latest snapshot + the inputs after it".

:func:`export_state` turns a :class:`~controller.game.table.Table` into plain JSON values (ints,
strings, lists, dicts, bools, floats, None: no pickle, nothing executable) and
:func:`restore_state` builds a table that behaves exactly like the original from then on: the same
effects for every later event, the same :meth:`~controller.game.table.Table.snapshot`, the same
refusals. It works on the pure engine and on the mypyc-compiled one (a snapshot of one restores
into the other).

What is saved: every attribute of ``Table.__init__`` that a later event reads (each once, with how it is
written and read back, in :data:`FIELDS`; a test fails when the engine gains one that is not), the betting layout,
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

from collections.abc import Callable
from typing import Any, Final

from controller.contract.dealers import check_dealer
from controller.game.alarms import Alarm
from controller.game.cards import VALUE
from controller.game.hand import Hand, Spot
from controller.game.rules import Rules, RulesFormatError, rules_digest, rules_from_json, rules_to_json
from controller.game.table import Table
from controller.game.transitions import PHASES

__all__ = ["ADDED_FIELDS", "FIELDS", "FORMAT", "SAVED_ATTRIBUTES", "VERSION", "SnapshotError", "export_state",
           "restore_state", "rules_digest", "snapshot_rules"]

#: what a snapshot says it is
FORMAT: Final = "tablectl-engine-snapshot"
#: bump on any change to the layout below (an old snapshot is then refused and the journal replayed)
VERSION: Final = 4  # 3: the rules in force saved with the state; 4: a close asked during the round (close_asked);
# since: the dealer on duty (ADDED_FIELDS, optional: a version 4 snapshot without them restores)

#: The table's state, field by field, in the snapshot's order: the ``Table`` attribute and how it is written
#: and read (:data:`_OUT`, :data:`_IN`). Its key in the snapshot is the attribute's name without a leading ``_``.
#: A field read after another may refer to it (the deal order and plan, the active hand: to the round's spots).
FIELDS: Final[tuple[tuple[str, str], ...]] = (
    ("phase", "phase"), ("round", "int"), ("round_open", "bool"), ("_dealer_play", "str"), ("min_bet", "int"),
    ("max_bet", "int"), ("next_limits", "limits"), ("close_asked", "bool"), ("close_by", "opt_str"),
    ("bets", "bets"), ("spots", "spots"), ("order", "order"), ("_dealer_hand", "dealer_hand"),
    ("hole_revealed", "bool"), ("hole_face_down", "bool"), ("hole_at", "int"), ("awaiting_reveal", "bool"),
    ("dealer_blackjack", "opt_bool"), ("deal_plan", "deal_plan"), ("deal_pos", "deal_pos"), ("active", "active"),
    ("awaiting_peek", "bool"), ("insurance_open", "bool"), ("insurance_declined", "spot_set"),
    ("third_card_dealt", "bool"), ("burned", "strs"),
    ("cards_dealt", "int"), ("shuffles", "int"), ("cards_before_round", "int"), ("burn_pending", "int"),
    ("cut_card_reached", "bool"), ("shuffle_due", "bool"), ("shuffle_reason", "str"),
    ("awaiting_discards", "opt_int"), ("reshuffle_after_round", "bool"), ("seen", "seen"),
    ("deck_set", "str"), ("deck_opened_at", "time"), ("now", "time"), ("devices", "devices"), ("alarms", "alarms"),
    ("next_alarm_id", "int"), ("rounds_settled", "int"), ("handle_cents", "int"), ("house_net", "int"),
    ("dealer_on_duty", "dealer"), ("dealer_held", "dealer_held"), ("require_dealer", "bool"),
)
#: Fields added since version 4 without a new version, each with the value a snapshot saved before it holds (an
#: engine of then had no dealer on duty, none held, none required): such a snapshot still restores.
ADDED_FIELDS: Final[dict[str, Any]] = {"dealer_on_duty": None, "dealer_held": None, "require_dealer": False}

#: Every ``Table`` attribute the snapshot carries (``dealer``: the cards of ``_dealer_hand``, saved with it).
SAVED_ATTRIBUTES: Final = (*(attr for attr, _ in FIELDS), "dealer")
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
    state = {attr.lstrip("_"): _OUT.get(codec, _same)(getattr(t, attr)) for attr, codec in FIELDS}
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
    missing = expected - set(s) - set(ADDED_FIELDS)
    if set(s) - expected or missing:
        raise SnapshotError(f"unexpected fields {sorted(set(s) - expected)}, missing {sorted(missing)}")
    t = Table(rules, narrate=narrate)
    for attr, codec in FIELDS:
        key = attr.lstrip("_")
        value = _IN[codec](s[key] if key in s else ADDED_FIELDS[key], key, t)
        setattr(t, attr, value)
        if attr == "_dealer_hand":
            t.dealer = value.cards  # the hand keeps the dealer's total as cards arrive: the very list
    return t


def _same(v: Any) -> Any:
    return v


def _spot_ref(t: Table, n: Any, what: str) -> Spot:
    spot = t.spots.get(_int(n, what))
    if spot is None:
        raise SnapshotError(f"{what}: spot {n} is not in the round")
    return spot


def _phase_in(v: Any, what: str, t: Table) -> str:
    phase = _str(v, what)
    if phase not in PHASES:
        raise _fail(what, phase)
    return phase


def _limits_in(v: Any, what: str, t: Table) -> tuple[int, int] | None:
    if v is None:
        return None
    low, high = _pair(v, what, 2)
    return _int(low, what), _int(high, what)


def _bets_in(v: Any, what: str, t: Table) -> dict[int, tuple[int, str | None]]:
    bets: dict[int, tuple[int, str | None]] = {}
    for item in _list(v, what):
        n, amount, player = _pair(item, "bet", 3)
        bets[_int(n, "bet spot")] = (_int(amount, "bet amount"), _opt_str(player, "bet player"))
    return bets


def _spots_in(v: Any, what: str, t: Table) -> dict[int, Spot]:
    spots: dict[int, Spot] = {}
    for item in _list(v, what):
        spot = _spot_in(item)
        if spot.number in spots:
            raise SnapshotError(f"spot {spot.number} appears twice")
        spots[spot.number] = spot
    return spots


def _deal_pos_in(v: Any, what: str, t: Table) -> int:
    pos = _int(v, what)
    if not 0 <= pos <= len(t.deal_plan):
        raise _fail(what, pos)
    return pos


def _active_in(v: Any, what: str, t: Table) -> tuple[int, int] | None:
    if v is None:
        return None
    spot_no, idx = _pair(v, what, 2)
    if not 0 <= _int(idx, "active hand") < len(_spot_ref(t, spot_no, what).hands):
        raise _fail(what, v)
    return spot_no, idx


def _seen_in(v: Any, what: str, t: Table) -> dict[str, int]:
    seen: dict[str, int] = {}
    for item in _list(v, what):
        card, n = _pair(item, what, 2)
        seen[_cards([card], what)[0]] = _int(n, "seen count")
    return seen


def _dealer_in(v: Any, what: str, t: Table) -> str | None:
    dealer = _opt_str(v, what)
    if dealer is not None and check_dealer(dealer) is not None:
        raise _fail(what, dealer)
    return dealer


def _dealer_held_in(v: Any, what: str, t: Table) -> tuple[str | None, str] | None:
    if v is None:
        return None
    dealer, by = _pair(v, what, 2)
    return _dealer_in(dealer, what, t), _str(by, what)


def _devices_in(v: Any, what: str, t: Table) -> dict[str, str]:
    devices: dict[str, str] = {}
    for item in _list(v, what):
        name, status = _pair(item, "device", 2)
        devices[_str(name, "device")] = _str(status, "device status")
    return devices


def _alarms_in(v: Any, what: str, t: Table) -> dict[int, Alarm]:
    alarms: dict[int, Alarm] = {}
    for item in _list(v, what):
        aid, code, message, halts = _pair(item, "alarm", 4)
        alarm = Alarm(_int(aid, "alarm id"), _str(code, "alarm code"), _str(message, "alarm message"),
                      _bool(halts, "alarm halts"))
        alarms[alarm.id] = alarm
    return alarms


#: How each kind of field is written (the rest as they are: ints, bools, strings, None, times).
_OUT: Final[dict[str, Callable[[Any], Any]]] = {
    "limits": lambda v: None if v is None else list(v),
    "bets": lambda v: [[n, amount, player] for n, (amount, player) in v.items()],
    "spots": lambda v: [_spot_out(s) for s in v.values()],
    "order": lambda v: [s.number for s in v],
    "dealer_hand": _hand_out,
    "deal_plan": lambda v: [None if s is None else s.number for s in v],
    "active": lambda v: None if v is None else [v[0], v[1]],
    "dealer_held": lambda v: None if v is None else [v[0], v[1]],
    "spot_set": sorted,
    "strs": list,
    "seen": lambda v: [[card, n] for card, n in v.items()],
    "devices": lambda v: [[name, status] for name, status in v.items()],
    "alarms": lambda v: [[a.id, a.code, a.message, a.halts] for a in v.values()],
}

#: How each kind of field is read back and checked (``t``: the table restored so far).
_IN: Final[dict[str, Callable[[Any, str, Table], Any]]] = {
    "int": lambda v, what, t: _int(v, what),
    "bool": lambda v, what, t: _bool(v, what),
    "str": lambda v, what, t: _str(v, what),
    "opt_int": lambda v, what, t: _opt_int(v, what),
    "opt_bool": lambda v, what, t: _opt_bool(v, what),
    "opt_str": lambda v, what, t: _opt_str(v, what),
    "time": lambda v, what, t: _opt_time(v, what),
    "phase": _phase_in,
    "limits": _limits_in,
    "bets": _bets_in,
    "spots": _spots_in,
    "order": lambda v, what, t: [_spot_ref(t, n, what) for n in _list(v, what)],
    "dealer_hand": lambda v, what, t: _hand_in(v, "dealer hand"),
    "deal_plan": lambda v, what, t: [None if n is None else _spot_ref(t, n, what) for n in _list(v, what)],
    "deal_pos": _deal_pos_in,
    "active": _active_in,
    "spot_set": lambda v, what, t: {_int(n, what) for n in _list(v, what)},
    "strs": lambda v, what, t: [_str(c, what) for c in _list(v, what)],
    "seen": _seen_in,
    "dealer": _dealer_in,
    "dealer_held": _dealer_held_in,
    "devices": _devices_in,
    "alarms": _alarms_in,
}

_STATE_KEYS: Final = tuple(attr.lstrip("_") for attr, _ in FIELDS)
