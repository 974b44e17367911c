"""Engine snapshots: a table restored from :func:`export_state` behaves exactly like the original.

Seeded sessions over every profile are driven by the simulated dealer plus the inputs it never sends
(face-down hole cards and their reveal, clock ticks up to an overdue deck set, device faults, alarms and
their acknowledgement, irregularities, limit changes, dead cards, the table closed and reopened, the
insufficient-cards procedure). At many points the table is exported, the snapshot passed through JSON and
restored; every restored table is then fed the rest of the session and must give the same effects (or the
same refusal) for every event, and end with the same public snapshot and the same engine state.

The in-process tests run on whichever engine ``controller`` loaded (the compiled one when it is current);
two more run the other engine in a subprocess, one of them restoring a snapshot taken by this process.
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import controller.game.table as engine
from controller.game import events as ev
from controller.game.cards import is_natural
from controller.game.effects import Effect, Record
from controller.game.errors import GameError
from controller.game.hand import Hand, Spot
from controller.game.rules import Rules
from controller.game.snapshot import (
    FORMAT,
    NOT_SAVED,
    SAVED_ATTRIBUTES,
    VERSION,
    SnapshotError,
    export_state,
    restore_state,
)
from controller.game.table import Table
from controller.profiles import available_profiles, load_rules
from controller.sim.dealer import SimulatedDealer

ROOT = Path(__file__).resolve().parents[2]
PROFILES = available_profiles()
ENGINE = "so" if (engine.__file__ or "").endswith(".so") else "py"
DEVICES = ("shoe", "shuffler", "chips", "console")


# ---------------------------------------------------------------------------------------------- the session


class Stuck(Exception):
    pass


class Session:
    """The simulated dealer, plus the table inputs it never produces, all decided by one seed."""

    def __init__(self, rules: Rules, seed: int) -> None:
        self.rules = rules
        self.rng = random.Random(f"snapshot:{rules.name}:{seed}")
        self.dealer = SimulatedDealer(rules, seed=seed, table_id="snap")
        self.now = 1_763_798_400.0
        self.hidden: str | None = None  # the face-down hole card the "shoe" withholds
        self.refusals = 0
        self.opened = 0

    def next_event(self, t: Table) -> ev.Event:
        rng = self.rng
        if t.phase == "closed":
            if t.require_dealer != self.opened % 2:  # every other opening needs a dealer on duty
                return ev.DealerRequired(required=bool(self.opened % 2))
            self.opened += 1
            self.now += 900.0
            return ev.TableOpened(now=self.now, deck_set=t.deck_set)
        if t.awaiting_discards is not None:
            return ev.ShuffleDone(count=t.awaiting_discards)
        if t.awaiting_peek and t.hole_face_down:
            assert self.hidden is not None
            return ev.PeekResult(blackjack=is_natural([t.dealer[0], self.hidden]))
        if t.awaiting_reveal:
            return ev.DealerReveal(card=self.hidden)
        if t.phase == "settled" and rng.random() < 0.04:
            self.now += 60.0
            return ev.TableClosed(now=self.now)  # the pit closes the table between rounds
        if self.refusals % 2:  # every other event after a refusal: the floor steps in
            fix = self._unstick(t)
            if fix is not None:
                return fix
        elif rng.random() < 0.07:
            return self._extra(t)
        if (t.phase == "dealing" and not t.awaiting_peek and not t.burn_pending and t.deal_pos < len(t.deal_plan)
                and t.deal_plan[t.deal_pos] is None and len(t.dealer) == 1 and t.round % 3 != 0):
            self.hidden = self._next_card(t)
            return ev.HoleCardDealt()
        if t.card_required and t.cards_dealt >= len(self.dealer.shoe(t.shuffles)):
            return ev.ShoeEmpty()
        event = self.dealer.next_event(t)
        if event is None:
            self.now += 1.0
            return ev.Tick(now=self.now)
        if isinstance(event, ev.CardDrawn) and t.cards_dealt >= len(self.dealer.shoe(t.shuffles)):
            return ev.ShoeEmpty()
        return event

    def _next_card(self, t: Table) -> str:
        shoe = self.dealer.shoe(t.shuffles)
        return shoe[t.cards_dealt % len(shoe)]

    def _between_rounds(self, t: Table) -> bool:
        return t.phase in ("settled", "shuffling") or (t.phase == "betting" and not t.bets)

    def _unstick(self, t: Table) -> ev.Event | None:
        """After a refusal: what a floor supervisor would do to let play go on (None: nothing to do)."""
        if self.refusals > 40:
            raise Stuck(f"the session cannot go on: {t.snapshot()}")
        lost = [d for d, s in t.devices.items() if s == "lost"]
        if lost:
            return ev.DeviceRestored(device=lost[0])
        if t.require_dealer and t.dealer_on_duty is None:
            return ev.DealerAssigned("d.cole", "badge")
        codes = {a.code for a in t.alarms.values()}
        if "deck_change_overdue" in codes and t.phase in ("betting", "settled", "shuffling"):
            self.now += 60.0
            return ev.DecksChanged(now=self.now, deck_set="B" if t.deck_set == "A" else "A")
        for alarm in t.alarms.values():
            if alarm.halts and alarm.code != "deck_change_overdue":
                return ev.AlarmAcknowledged(alarm_id=alarm.id, operator="floor", reason="checked")
        if (t.min_bet, t.max_bet) != (self.rules.min_bet, self.rules.max_bet):  # the simulated players bet these
            if t.phase == "betting" and t.bets:
                return ev.BetPlaced(spot=next(iter(t.bets)), amount=0)
            if t.phase in ("betting", "settled", "shuffling"):
                return ev.LimitsSet(min_bet=self.rules.min_bet, max_bet=self.rules.max_bet)
        return None

    def _extra(self, t: Table) -> ev.Event:
        rng = self.rng
        choice = rng.random()
        if choice < 0.35:
            self.now += rng.choice([2.0, 30.0, 600.0, 3 * 3600.0, 7 * 3600.0])
            return ev.Tick(now=self.now)
        if choice < 0.45:
            lost = [d for d, s in t.devices.items() if s == "lost"]
            if lost:
                return ev.DeviceRestored(device=rng.choice(lost))
            return ev.DeviceFault(device=rng.choice(DEVICES), reason="link silent")
        if choice < 0.6 and t.alarms:
            return ev.AlarmAcknowledged(alarm_id=rng.choice([*t.alarms, t.next_alarm_id]))
        if choice < 0.65:
            return ev.Irregularity(source=rng.choice(["chips", "shoe"]), detail="chips moved after no more bets",
                                   halts=rng.random() < 0.3)
        if choice < 0.72:
            low = self.rules.min_bet // rng.choice([1, 2, 5])  # wider than the profile: players still bet
            high = self.rules.max_bet * rng.choice([1, 2])
            if rng.random() < 0.2:
                low = high + 1  # refused
            return ev.LimitsSet(min_bet=low, max_bet=high)
        if choice < 0.8:
            return ev.CardDrawn(self._next_card(t))  # called for or a dead card
        if choice < 0.85 and self._between_rounds(t):
            self.now += 60.0
            return ev.TableClosed(now=self.now)
        if choice < 0.9 and t.phase in ("dealing", "players", "dealer"):
            return ev.ShoeEmpty()
        if choice < 0.93 and self._between_rounds(t):
            self.now += 60.0
            return ev.DecksChanged(now=self.now, deck_set="B" if t.deck_set == "A" else "A")
        if choice < 0.96:
            return ev.ShuffleStarted()
        if choice < 0.97:
            return ev.BetPlaced(spot=rng.randint(1, self.rules.spots), amount=0)
        if choice < 0.98:
            return ev.DealerReveal(card=None)
        # a sign-in, a relief (held during a round) or a sign-out
        return ev.DealerAssigned(rng.choice(["d.ames", "d.brun", None]), rng.choice(["badge", "s.jones"]))


Outcome = list[Effect] | tuple[str, str]


def _apply(table: Table, event: ev.Event) -> Outcome:
    try:
        return table.handle(event)
    except GameError as exc:
        return (type(exc).__name__, str(exc))


def _through_json(state: dict[str, Any]) -> dict[str, Any]:
    decoded: dict[str, Any] = json.loads(json.dumps(state, allow_nan=False))
    return decoded


# ---------------------------------------------------------------------------------------------- deep comparison


def _pure_engine_attributes(rules: Rules) -> list[str]:
    """Every attribute ``Table.__init__`` sets, read off the pure source (the compiled class has no __dict__): its
    slots, each of them set by ``__init__`` (a slot left unset has no value to read)."""
    name = "_snapshot_test_pure_table"
    spec = importlib.util.spec_from_file_location(name, ROOT / "controller" / "game" / "table.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
        table = module.Table(rules)
        names = list(module.Table.__slots__)
        unset = [n for n in names if not hasattr(table, n)]
        assert not unset, f"slots Table.__init__ does not set: {unset}"
        return names
    finally:
        del sys.modules[name]


def _attributes(cls: type[Any]) -> tuple[str, ...]:
    """The attributes of a slotted class: ``__slots__`` in the pure source, ``__mypyc_attrs__`` compiled."""
    names: tuple[str, ...] = getattr(cls, "__mypyc_attrs__", None) or cls.__slots__
    return names


def _value(v: Any) -> Any:
    """A comparable picture of an engine value: types included (1 != 1.0 != True), order included."""
    if isinstance(v, Hand):
        return ("Hand", [(f, _value(getattr(v, f))) for f in sorted(_attributes(Hand))])
    if isinstance(v, Spot):
        return ("Spot", [(f, _value(getattr(v, f))) for f in sorted(_attributes(Spot))])
    if type(v).__name__ == "Alarm":
        return ("Alarm", v.id, v.code, v.message, v.halts)
    if isinstance(v, dict):
        return ("dict", [(_value(k), _value(x)) for k, x in v.items()])
    if isinstance(v, set | frozenset):
        return ("set", sorted(v))
    if isinstance(v, list | tuple):
        return (type(v).__name__, [_value(x) for x in v])
    return (type(v).__name__, v)


def _deep_state(t: Table, names: list[str]) -> dict[str, Any]:
    picture = {name: _value(getattr(t, name)) for name in names if name not in NOT_SAVED}
    picture["#order is spots"] = all(t.spots[s.number] is s for s in t.order)
    picture["#deal plan is spots"] = all(s is None or t.spots[s.number] is s for s in t.deal_plan)
    picture["#dealer hand holds dealer"] = t._dealer_hand.cards is t.dealer
    return picture


# ---------------------------------------------------------------------------------------------- the check


def check_sessions(profile: str, seed: int, events: int = 1200, every: int = 60) -> Counter[str]:
    """Run one session; restore at about every ``every`` events; every restored table must follow."""
    rules = load_rules(profile)
    names = _pure_engine_attributes(rules)
    rng = random.Random(seed)
    session = Session(rules, seed)
    original = Table(rules)
    followers: list[tuple[int, Table, bool]] = []  # (restored before event n, table, narrated)
    seen: Counter[str] = Counter()
    next_point = 0
    for n in range(events):
        if n == next_point:
            state = export_state(original)
            narrate = rng.random() < 0.8
            restored = restore_state(rules, _through_json(state), narrate=narrate)
            assert export_state(restored) == state, f"event {n}: a restored table exports another state"
            assert _deep_state(restored, names) == _deep_state(original, names), f"event {n}: engine state differs"
            assert restored.snapshot() == original.snapshot()
            followers.append((n, restored, narrate))
            next_point = n + rng.randint(1, 2 * every)
        event = session.next_event(original)
        expected = _apply(original, event)
        if isinstance(expected, tuple):
            session.refusals += 1
            seen["refused"] += 1
        else:
            session.refusals = 0
            seen["rounds"] += any(isinstance(e, Record) and e.type == "round_settled" for e in expected)
        seen[event.TYPE] += 1
        seen["hole face down"] += original.hole_face_down
        seen["discard shuffle"] += original.awaiting_discards is not None
        seen["device lost"] += "lost" in original.devices.values()
        seen["alarms"] += bool(original.alarms)
        seen[f"phase {original.phase}"] += 1
        for start, table, narrated in followers:
            got = _apply(table, event)
            if narrated or isinstance(expected, tuple):
                assert got == expected, f"restored before event {start}, event {n} {event}: {got} != {expected}"
            else:
                assert got == [e for e in expected if not isinstance(e, Record)], f"event {n} {event}"
    final = export_state(original)
    for start, table, _ in followers:
        assert export_state(table) == final, f"restored before event {start}: state differs at the end"
        assert table.snapshot() == original.snapshot()
        assert table.legal_actions() == original.legal_actions()
        assert table.alarm_list() == original.alarm_list()
        assert _deep_state(table, names) == _deep_state(original, names)
    seen["followers"] = len(followers)
    return seen


# ---------------------------------------------------------------------------------------------- tests


@pytest.mark.parametrize("profile", PROFILES)
def test_restored_tables_continue_exactly_like_the_original(profile: str) -> None:
    seen: Counter[str] = Counter()
    for seed in (1, 2):
        seen += check_sessions(profile, seed)
    assert seen["followers"] >= 30 and seen["rounds"] >= 20, seen
    # the session reached the states a snapshot must carry
    rules = load_rules(profile)
    features = ["alarms", "device lost", "phase closed", "refused", "phase dealer", "discard shuffle"]
    features += ["hole face down"] if rules.hole_card != "none" else []
    features += ["phase insurance"] if rules.insurance != "none" else []
    for feature in features:
        assert seen[feature], f"{feature} never happened: {seen}"


def test_sessions_reach_the_rare_states() -> None:
    seen: Counter[str] = Counter()
    for profile in PROFILES:
        seen += check_sessions(profile, 7, events=600, every=200)
    for feature in ("decks_changed", "dealer_reveal", "shoe_empty", "set_limits", "table_closed", "hole_card_dealt",
                    "dealer_assigned", "dealer_required"):
        assert seen[feature], f"{feature} never happened: {seen}"


def test_snapshot_covers_every_engine_attribute() -> None:
    names = set(_pure_engine_attributes(load_rules("house-h17")))
    covered = set(SAVED_ATTRIBUTES) | set(NOT_SAVED)
    assert names - covered == set(), "Table attributes snapshot.py does not save: add them there"
    assert covered - names == set(), "snapshot.py names attributes the engine no longer has"


def test_snapshot_is_plain_json_and_round_trips() -> None:
    rules = load_rules("ny-4620")
    t = Table(rules)
    session = Session(rules, 5)
    while not t.order or len(t.dealer) < 2:  # mid-round, hole card dealt
        if isinstance(_apply(t, session.next_event(t)), tuple):
            session.refusals += 1
        else:
            session.refusals = 0
    state = export_state(t)
    text = json.dumps(state, allow_nan=False, sort_keys=True)
    assert json.loads(text) == state
    assert (state["format"], state["version"], state["profile"]) == (FORMAT, VERSION, "ny-4620")

    def plain(v: Any) -> bool:
        if isinstance(v, dict):
            return all(isinstance(k, str) and plain(x) for k, x in v.items())
        if isinstance(v, list):
            return all(plain(x) for x in v)
        return v is None or type(v) in (bool, int, float, str)

    assert plain(state)
    restored = restore_state(rules, json.loads(text))
    assert restored.snapshot() == t.snapshot()
    assert restored._dealer_hand.cards is restored.dealer
    assert all(restored.spots[s.number] is s for s in restored.order)


def _mid_round_state(profile: str = "house-h17") -> tuple[Rules, dict[str, Any]]:
    rules = load_rules(profile)
    t = Table(rules)
    session = Session(rules, 3)
    while t.phase != "players":
        if isinstance(_apply(t, session.next_event(t)), tuple):
            session.refusals += 1
        else:
            session.refusals = 0
    return rules, export_state(t)


def test_a_snapshot_of_another_version_is_refused() -> None:
    rules, state = _mid_round_state()
    with pytest.raises(SnapshotError, match=f"version 0; this engine reads version {VERSION}"):
        restore_state(rules, {**state, "version": 0})
    with pytest.raises(SnapshotError, match="not an engine snapshot"):
        restore_state(rules, {**state, "format": "pickle"})


def test_a_snapshot_of_another_profile_is_refused() -> None:
    _, state = _mid_round_state("house-h17")
    with pytest.raises(SnapshotError, match=r"profile 'house-h17'; this table plays 'nj-shoe'"):
        restore_state(load_rules("nj-shoe"), state)
    with pytest.raises(SnapshotError, match=r"rules of profile 'house-h17' have changed"):
        restore_state(load_rules("house-h17", {"decks": 8}), state)


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("phase",), "lunch"),
        (("round",), "7"),
        (("spots", 0, "hands", 0, "total"), 30),
        (("spots", 0, "hands", 0, "cards"), ["XX"]),
        (("order",), [99]),
        (("deal_plan",), [None, 42]),
        (("active",), [1, 9]),
        (("alarms",), [[1, "x"]]),
        (("now",), "noon"),
        (("hole_face_down",), 1),
    ],
)
def test_a_malformed_snapshot_is_refused(path: tuple[str | int, ...], value: Any) -> None:
    rules, state = _mid_round_state()
    broken = _through_json(state)
    target: Any = broken["table"]
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(SnapshotError):
        restore_state(rules, broken)
    missing = _through_json(state)
    del missing["table"]["seen"]
    with pytest.raises(SnapshotError, match="missing"):
        restore_state(rules, missing)


# ---------------------------------------------------------------------------------------------- the other engine

_OTHER_SESSIONS = """
import sys
sys.path.insert(0, "tests/game")
import test_snapshot as m
print(m.ENGINE)
for profile in m.PROFILES:
    seen = m.check_sessions(profile, 11, events=800, every=50)
    print(profile, seen["followers"], seen["rounds"])
"""

_OTHER_RESTORE = """
import json, sys
sys.path.insert(0, "tests/game")
import test_snapshot as m
from controller.game import events as ev
from controller.game.snapshot import export_state, restore_state
from controller.profiles import load_rules
job = json.load(sys.stdin)
table = restore_state(load_rules(job["profile"]), job["state"])
outcomes = [repr(m._apply(table, ev.from_json(e))) for e in job["events"]]
print(json.dumps({"engine": m.ENGINE, "outcomes": outcomes, "snapshot": table.snapshot(),
                  "state": export_state(table)}))
"""


def _other_engine(script: str, stdin: str | None = None) -> str:
    env = {**os.environ, "TABLECTL_PURE_ENGINE": "1" if ENGINE == "so" else "0"}
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", script], env=env, cwd=ROOT, input=stdin,
                         capture_output=True, text=True, check=True, timeout=240)
    return out.stdout


def test_restored_tables_continue_exactly_on_the_other_engine() -> None:
    lines = _other_engine(_OTHER_SESSIONS).splitlines()
    if lines[0] == ENGINE:
        pytest.skip("no current compiled engine in this checkout (run make setup)")
    assert len(lines) == 1 + len(PROFILES)


def test_a_snapshot_moves_between_the_pure_and_the_compiled_engine() -> None:
    rules = load_rules("house-shoe-surrender")
    session = Session(rules, 21)
    t = Table(rules)
    events: list[ev.Event] = []
    state: dict[str, Any] | None = None
    outcomes: list[str] = []
    for n in range(700):
        if n == 350:
            state = export_state(t)
        event = session.next_event(t)
        outcome = _apply(t, event)
        session.refusals = session.refusals + 1 if isinstance(outcome, tuple) else 0
        if state is not None:
            events.append(event)
            outcomes.append(repr(outcome))
    job = {"profile": rules.name, "state": state, "events": [ev.to_json(e) for e in events]}
    result = json.loads(_other_engine(_OTHER_RESTORE, json.dumps(job)))
    if result["engine"] == ENGINE:
        pytest.skip("no current compiled engine in this checkout (run make setup)")
    assert result["outcomes"] == outcomes
    assert result["snapshot"] == json.loads(json.dumps(t.snapshot()))
    assert result["state"] == _through_json(export_state(t))

