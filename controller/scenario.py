"""The scenario runner: one round from a stacked shoe, settled by the table's own engine.

A test lab's check of the rules (DESIGN.md "Scenario runner", a contract). The
runner plays the parts the table's devices play: it opens the table, reports a
full shuffle, draws the shoe's cards whenever the procedure calls for one, and
answers the peek reader from the hole card it dealt. Every refusal of the
engine becomes a :class:`ScenarioError` whose text names the spot, the action
and the rule; the CLI prints it on one line and exits 2. :func:`decode_scenario` turns a file's
bytes into the input the same way: whatever a lab hands in is refused in one line, never a traceback.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any

from controller.contract.phases import Phase
from controller.game import events as ev
from controller.game.cards import CardError, parse_card
from controller.game.croupier import Croupier
from controller.game.effects import Effect, Record
from controller.game.errors import GameError
from controller.game.money import MoneyError, format_money, parse_money
from controller.game.rules import Rules
from controller.game.table import Table
from controller.game.view import TableView
from controller.nesting import MAX_DEPTH, depth
from controller.profiles import ProfileError, load_rules

ALLOWED_KEYS = {"profile", "rules", "bets", "shoe", "actions", "description", "expect", "name", "clauses"}
ACTIONS = ("hit", "stand", "double", "split", "surrender", "insurance", "even_money")


class ScenarioError(ValueError):
    """Bad or illegal scenario input: one line naming what and why."""


_SPOT_KEY = re.compile("[0-9]+")


class JsonObject(dict[str, Any]):
    """A decoded JSON object that remembers the names given more than once (``json`` keeps the last)."""

    repeated: tuple[str, ...] = ()


def _json_object(pairs: list[tuple[str, Any]]) -> JsonObject:
    obj = JsonObject(pairs)
    if len(obj) != len(pairs):
        counts = Counter(name for name, _ in pairs)
        obj.repeated = tuple(sorted(name for name, n in counts.items() if n > 1))
    return obj


def _repeated(data: Any) -> str | None:
    """Where a name is given twice in ``data`` (JSON keeps the last, silently), as the refusal says it; None if
    nowhere. ``bets`` at the top is left to :func:`_parse`, which names the spot."""
    stack: list[tuple[Any, str]] = [(data, "")]
    while stack:
        item, where = stack.pop()
        if isinstance(item, JsonObject):
            if item.repeated and not (where == "bets: " and item is data.get("bets")):  # data: a JsonObject
                return f"{where}key {item.repeated[0]!r} is given twice (a scenario names each key once)"
            stack.extend((v, f"{where.removesuffix(': ')}{'.' if where else ''}{k}: ") for k, v in item.items())
        elif isinstance(item, list):
            stack.extend((v, f"{where.removesuffix(': ')}[{i}]: ") for i, v in enumerate(item))
    return None


def decode_scenario(raw: bytes) -> Any:
    """A scenario file's bytes as JSON values, or :class:`ScenarioError` in one line: the file is not UTF-8
    (DESIGN's files are UTF-8 JSON; a decoding error would otherwise escape as a traceback), not JSON, or
    nested absurdly deep. Objects are :class:`JsonObject`, so a name given twice can be refused."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ScenarioError(f"not UTF-8: byte 0x{raw[e.start]:02x} at offset {e.start} "
                            "(a scenario is UTF-8 JSON)") from None
    too_deep = ScenarioError(f"nested too deeply: more than {MAX_DEPTH} levels of lists and objects")
    try:
        data = json.loads(text, object_pairs_hook=_json_object)
    except json.JSONDecodeError as e:
        raise ScenarioError(f"not valid JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    except ValueError as e:  # a number of more digits than Python converts (sys.get_int_max_str_digits)
        raise ScenarioError(f"not valid JSON: {e}") from None
    except RecursionError:
        raise too_deep from None
    if depth(data) > MAX_DEPTH:
        raise too_deep
    twice = _repeated(data)
    if twice is not None:
        raise ScenarioError(twice)
    return data


class _Shoe:
    """The scenario's stacked shoe: its cards in order, no cut card, and an error when it runs out."""

    def __init__(self, cards: list[str], rules: Rules) -> None:
        self.cards = cards
        self.pos = 0
        self.rules = rules

    def draw(self, why: str) -> str:
        if self.pos >= len(self.cards):
            raise ScenarioError(f"the shoe ran out: {len(self.cards)} cards given, another needed for {why}")
        card = self.cards[self.pos]
        self.pos += 1
        return card

    def cut_card_next(self) -> bool:
        return False

    def empty(self) -> bool:
        return False  # a stacked shoe that runs out is the scenario's error (draw), not a reshuffle

    def shuffle(self) -> ev.ShuffleDone:
        return ev.ShuffleDone(count=self.rules.cards_in_shoe)

    def shuffle_discards(self, count: int) -> None:  # pragma: no cover - empty() is never true
        raise ScenarioError("a stacked shoe is not reshuffled")


def _parse(data: Any) -> tuple[str, dict[str, Any], dict[int, int], list[str], list[dict[str, Any]]]:
    if not isinstance(data, Mapping):
        raise ScenarioError("a scenario is a JSON object with profile, bets, shoe and actions")
    unknown = set(data) - ALLOWED_KEYS
    if unknown:
        raise ScenarioError(f"unknown key(s) {', '.join(sorted(unknown))} (allowed: {', '.join(sorted(ALLOWED_KEYS))})")
    profile = data.get("profile")
    if not isinstance(profile, str) or not profile:
        raise ScenarioError("profile: a profile name or path is required")
    overrides = data.get("rules", {})
    if not isinstance(overrides, Mapping):
        raise ScenarioError("rules: must be an object of profile keys")
    raw_bets = data.get("bets")
    if not isinstance(raw_bets, Mapping) or not raw_bets:
        raise ScenarioError("bets: an object of spot -> wager with at least one wager is required")
    bets: dict[int, int] = {}
    given: dict[int, str] = {}  # spot -> the key that named it
    for key, amount in raw_bets.items():
        text = str(key)
        # ASCII digits only: str.isdigit() also takes "٣" (int() reads it as 3) and "²" (int() fails)
        if _SPOT_KEY.fullmatch(text) is None or not 1 <= int(text) <= 7:
            raise ScenarioError(f"bets: spot {key!r} must be a number from 1 to 7 in plain digits")
        spot = int(text)
        if spot in given:  # "3" and "03": which wager stands would depend on the order of the keys
            raise ScenarioError(f"bets: spot {spot} is given twice ({given[spot]!r} and {text!r})")
        given[spot] = text
        try:
            cents = parse_money(amount)
        except MoneyError as e:
            raise ScenarioError(f"bets: spot {key}: {e}") from None
        if cents <= 0:  # the table reads a zero wager as the bet taken off: the spot would silently not play
            raise ScenarioError(f"bets: spot {spot}: a wager of {format_money(cents)} is no bet "
                                "(a wager is more than zero)")
        bets[spot] = cents
    repeated: tuple[str, ...] = getattr(raw_bets, "repeated", ())  # the same name twice: JSON keeps the last
    if repeated:
        text = repeated[0]
        raise ScenarioError(f"bets: spot {int(text)} is given twice ({text!r} and {text!r})")
    raw_shoe = data.get("shoe")
    if not isinstance(raw_shoe, list) or not raw_shoe:
        raise ScenarioError("shoe: a list of cards in the order they leave the shoe is required")
    shoe: list[str] = []
    for i, card in enumerate(raw_shoe):
        try:
            shoe.append(parse_card(card))
        except CardError as e:
            raise ScenarioError(f"shoe[{i}]: {e}") from None
    actions = data.get("actions", [])
    if not isinstance(actions, list):
        raise ScenarioError("actions: must be a list")
    for i, a in enumerate(actions):
        if not isinstance(a, Mapping):
            raise ScenarioError(f"actions[{i}]: must be an object with spot and action")
        extra = set(a) - {"spot", "action", "amount"}
        if extra:
            raise ScenarioError(f"actions[{i}]: unknown key(s) {', '.join(sorted(extra))}")
        if not isinstance(a.get("spot"), int) or isinstance(a.get("spot"), bool):
            raise ScenarioError(f"actions[{i}]: spot must be a number")
        if a.get("action") not in ACTIONS:
            raise ScenarioError(f"actions[{i}]: spot {a.get('spot')}: action {a.get('action')!r} is not one of "
                                f"{', '.join(ACTIONS)}")
        if "amount" in a and a["action"] == "hit":  # a hit is a card, not a wager (the engine refuses the rest)
            raise ScenarioError(f"actions[{i}]: spot {a['spot']}: hit takes no amount")
    clauses = data.get("clauses", [])
    if not isinstance(clauses, list) or not all(isinstance(c, str) and c.strip() for c in clauses):
        raise ScenarioError("clauses: a list of the clauses the scenario exercises, as the profile cites them")
    return profile, dict(overrides), bets, shoe, [dict(a) for a in actions]


def run_scenario(data: Any) -> dict[str, Any]:
    """Play the scenario; return the settlement as DESIGN.md specifies, or raise :class:`ScenarioError`."""
    profile, overrides, bets, cards, actions = _parse(data)
    try:
        rules = load_rules(profile, overrides)
    except ProfileError as e:
        raise ScenarioError(str(e)) from None
    _check_shoe_fits(cards, rules)
    table = Table(rules)
    records: list[dict[str, Any]] = []

    def feed(event: ev.Event) -> list[Effect]:
        effects = table.handle(event)
        records.extend({"type": e.type, **e.data} for e in effects if isinstance(e, Record))
        return effects

    croupier = Croupier(table, _Shoe(cards, rules), feed)
    pump = croupier.play  # the dealer and the shoe: every card the procedure requires, the peek

    try:
        feed(ev.TableOpened(now=0.0))
        feed(ev.ShuffleDone(count=rules.cards_in_shoe))
        for spot, amount in sorted(bets.items()):
            try:
                feed(ev.BetPlaced(spot=spot, amount=amount))
            except GameError as e:
                text = str(e) if str(e).startswith("spot ") else f"spot {spot}: bet refused: {e}"
                raise ScenarioError(text) from None
        pump()
        feed(ev.NoMoreBets())
        pump()
        for action in actions:
            _apply(croupier, action)
            pump()
        croupier.close_insurance()
        pump()
    except GameError as e:
        raise ScenarioError(str(e)) from None
    if table.phase != Phase.SETTLED:
        raise ScenarioError(_incomplete(table))
    return _settlement(table, records)


def _check_shoe_fits(cards: list[str], rules: Rules) -> None:
    """Refuse a stacked shoe the profile's decks cannot hold, wherever the extra copy lies.

    The table would halt on such a card only when it is dealt (a foreign card); a lab's shoe with
    one in a part the round never reaches would otherwise pass as a shoe the table could deal.
    """
    counts = Counter(cards)
    for card in cards:
        if counts[card] > rules.decks:
            decks = f"{rules.decks} deck{'s' if rules.decks > 1 else ''}"
            holds = "hold" if rules.decks > 1 else "holds"
            raise ScenarioError(f"shoe: {card} is given {counts[card]} times: {decks} ({rules.name}, "
                                f"decks = {rules.decks}) {holds} {rules.decks}")


def _apply(croupier: Croupier, action: dict[str, Any]) -> None:
    spot, name = action["spot"], action["action"]
    amount = action.get("amount")
    cents = None
    if amount is not None:
        try:
            cents = parse_money(amount)
        except MoneyError as e:
            raise ScenarioError(f"spot {spot}: {name}: {e}") from None
    croupier.before_decision(name)
    if name == "hit":
        croupier.hit(spot)
        return
    croupier.feed(ev.Decision(spot=spot, action=name, amount=cents))


def _incomplete(table: TableView) -> str:
    if table.phase == Phase.PLAYERS and table.active is not None:
        return f"round incomplete: spot {table.active[0]} hand {table.active[1] + 1} awaits a decision"
    return f"round incomplete: the table is in the {table.phase} phase"


def _settlement(table: TableView, records: list[dict[str, Any]]) -> dict[str, Any]:
    spots: dict[str, Any] = {}
    for s in table.order:
        spots[str(s.number)] = {
            "hands": [
                {
                    "cards": list(h.cards),
                    "total": h.total,
                    "wager": format_money(h.wager),
                    "outcome": h.outcome,
                    "payout": format_money(h.payout or 0),
                }
                for h in s.hands
            ],
            "insurance": None
            if s.insurance is None
            else {"wager": format_money(s.insurance), "payout": format_money(s.insurance_payout or 0)},
            "net": format_money(s.net),
        }
    total, _ = table.dealer_total()
    return {
        "profile": table.rules.name,
        "spots": spots,
        "dealer": {"cards": list(table.dealer), "total": total, "blackjack": bool(table.dealer_blackjack)},
        "burned": list(table.burned),
        "house_net": format_money(table.house_net),
        "events": records,
    }


def _mismatches(expected: Any, actual: Any, where: str = "") -> list[str]:
    """Differences between ``expected`` (a subset: objects by the keys given, lists element by element and of
    the same length) and ``actual``."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{where or '.'}: expected an object, got {actual!r}"]
        out: list[str] = []
        for key, value in expected.items():
            if key not in actual:
                out.append(f"{where}.{key}: missing")
            else:
                out.extend(_mismatches(value, actual[key], f"{where}.{key}"))
        return out
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [f"{where}: expected {expected!r}, got {actual!r}"]
        out = []
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            out.extend(_mismatches(e, a, f"{where}[{i}]"))
        return out
    if type(expected) is not type(actual) or expected != actual:
        return [f"{where}: expected {expected!r}, got {actual!r}"]
    return []


def _events_in_order(wanted: list[Any], events: list[Any]) -> list[str]:
    pos = 0
    for want in wanted:
        while pos < len(events) and _mismatches(want, events[pos]):
            pos += 1
        if pos == len(events):
            return [f"events: {want!r} not found in order"]
        pos += 1
    return []


def expect_mismatches(expect: Mapping[str, Any], result: Mapping[str, Any]) -> list[str]:
    """How a settlement differs from a golden file's ``expect`` (empty: it matches). ``expect`` is a subset
    of the runner's output; ``expect["events"]`` an ordered subsequence of its events, each matched by the
    fields given; ``expect["spots"]`` names every spot that played."""
    problems: list[str] = []
    for key, value in expect.items():
        if key == "events":
            problems.extend(_events_in_order(value, result["events"]))
        elif key not in result:
            problems.append(f"{key}: missing from the output")
        else:
            problems.extend(_mismatches(value, result[key], key))
    if "spots" in expect and set(expect["spots"]) != set(result["spots"]):
        problems.append(f"spots: expected {sorted(expect['spots'])}, got {sorted(result['spots'])}")
    return problems


def iter_scenario_files(root: str) -> Iterator[str]:
    """Golden scenario files under ``root`` (sorted), for tests and the docs."""
    from pathlib import Path

    yield from (str(p) for p in sorted(Path(root).rglob("*.json")))
