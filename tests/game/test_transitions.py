"""The round's transitions are data (controller/game/table.py ``TRANSITIONS``), and the data is honest.

* the table covers every phase, names only phases and event types that exist, and is what the engine accepts:
  an event a phase lists no transition for is refused up front, the table unchanged;
* the engine asserts every transition it takes is listed: planted engines that move (or stay) where the table
  does not say make ``handle()`` raise ``TransitionNotListed``;
* no listed transition is dead: a sweep over tables in every phase (several situations each) and every kind of
  event takes each one;
* docs/state-diagram.md is what controller/game/diagram.py draws from the table now.

Every other engine test (the golden scenarios, the hypothesis invariants) runs through ``handle()`` too, so
none of them takes an unlisted transition either.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from controller.game import events as ev
from controller.game.diagram import REGENERATE, START, edges, mermaid, page
from controller.game.errors import GameError, IllegalAction, TransitionNotListed
from controller.game.rules import rules_to_json
from controller.game.table import Table
from controller.game.transitions import PHASE_EVENTS, PHASES, TRANSITIONS
from controller.profiles import load_rules

DOC = Path(__file__).resolve().parents[2] / "docs" / "state-diagram.md"
T0 = 1_790_000_000.0
LISTED = {(phase, etype, nxt) for (phase, etype), leads_to in TRANSITIONS.items() for nxt in leads_to}


# ---------------------------------------------------------------------------------------------------------------
# the data


def test_the_transitions_cover_every_phase_and_name_only_what_exists() -> None:
    assert {phase for phase, _ in TRANSITIONS} == set(PHASES)
    assert {etype for _, etype in TRANSITIONS} == set(ev.EVENT_TYPES), "every kind of event leads somewhere"
    for (phase, etype), leads_to in TRANSITIONS.items():
        assert leads_to, f"{phase} on {etype} leads nowhere: leave it out (refused) instead"
        assert leads_to <= set(PHASES), f"{phase} on {etype} leads to an unknown phase: {sorted(leads_to)}"


def test_every_listed_transition_is_accepted_by_its_phase() -> None:
    for phase, etype in TRANSITIONS:
        assert etype in PHASE_EVENTS[phase], f"{phase} lists {etype} but refuses it up front"
    assert {(phase, etype) for phase, events in PHASE_EVENTS.items() for etype in events} == set(TRANSITIONS)


def test_a_table_is_closed_only_between_rounds() -> None:
    """Between rounds a close closes; during a round it is asked for the settlement and the phase stays."""
    assert all(TRANSITIONS[phase, "table_closed"] == {"closed"} for phase in ("closed", "betting", "settled",
                                                                               "shuffling"))
    assert all(TRANSITIONS[phase, "table_closed"] == {phase} for phase in ("dealing", "insurance", "players",
                                                                            "dealer"))


# ---------------------------------------------------------------------------------------------------------------
# tables in every phase, in several situations each


def _table(profile: str = "nj-shoe", *, opened: bool = True, shuffled: bool = True) -> Table:
    t = Table(load_rules(profile))
    if opened:
        t.handle(ev.TableOpened(now=T0))
    return _shuffled(t) if opened and shuffled else t


def _feed(t: Table, *events: ev.Event | str) -> Table:
    for e in events:
        t.handle(ev.CardDrawn(e) if isinstance(e, str) else e)
    return t


def _dealing(profile: str = "nj-shoe") -> Table:
    """One wager on spot 1, the burn card out, no more bets: the deal is due."""
    return _feed(_table(profile), ev.BetPlaced(1, 1000), "2C", ev.NoMoreBets())


def _close(t: Table) -> Table:
    return _feed(t, ev.TableClosed(now=T0 + 1))


def _settled() -> Table:
    return _feed(_dealing(), "TS", "9C", "8D", "8H", ev.Decision(1, "stand"))  # 18 against the dealer's 17


def _shuffled(t: Table) -> Table:
    return _feed(t, ev.ShuffleDone(count=t.rules.cards_in_shoe))


def _settled_cut_card_out() -> Table:
    return _feed(_dealing(), "TS", "9C", ev.CutCardReached(), "8D", "8H", ev.Decision(1, "stand"))


SETUPS: dict[str, Callable[[], Table]] = {
    "closed, never opened": lambda: _table(opened=False),
    "closed, shuffled": lambda: _close(_table()),
    "shuffling, the first shuffle": lambda: _table(shuffled=False),
    "betting": lambda: _table(),
    "betting, a wager down": lambda: _feed(_table(), ev.BetPlaced(1, 1000)),
    "betting, cut card out": lambda: _feed(_table(), ev.CutCardReached()),
    "dealing, the burn due": lambda: _feed(_table(), ev.BetPlaced(1, 1000), ev.NoMoreBets()),
    "dealing, the hole card due, nine up": lambda: _feed(_dealing(), "TS", "9C", "7D"),
    "dealing, the hole card due, nine up against a natural": lambda: _feed(_dealing(), "AS", "9C", "KD"),
    "dealing, the hole card due, ace up": lambda: _feed(_dealing(), "TS", "AC", "7D"),
    "dealing, the hole card due, ten up": lambda: _feed(_dealing(), "TS", "TC", "7D"),
    "dealing, no hole card, a spot's second card due, ten up": lambda: _feed(_dealing("european-6d"), "AS", "TC"),
    "dealing, the peek due": lambda: _feed(_dealing(), "TS", "TC", "7D", "7H"),
    "dealing, the peek due, dealer blackjack": lambda: _feed(_dealing(), "TS", "TC", "7D", "AH"),
    "dealing, the peek due, hole face down": lambda: _feed(_dealing(), "TS", "TC", "7D", ev.HoleCardDealt()),
    "dealing, discards being shuffled": lambda: _feed(_dealing(), "TS", "TC", ev.ShoeEmpty()),
    "insurance, the peek to follow": lambda: _feed(_dealing(), "TS", "AC", "7D", "7H"),
    "insurance, no hole card": lambda: _feed(_dealing("european-6d"), "TS", "AC", "7D"),
    "insurance, no hole card, a natural": lambda: _feed(_dealing("european-6d"), "AS", "AC", "KD"),
    "insurance, no hole card, even money taken": lambda: _feed(_dealing("european-6d"), "AS", "AC", "KD",
                                                               ev.Decision(1, "even_money")),
    "insurance, discards being shuffled": lambda: _feed(_dealing(), "TS", "AC", "7D", "7H", ev.ShoeEmpty()),
    "players, sixteen against the dealer's sixteen": lambda: _feed(_dealing(), "TS", "9C", "6D", "7H"),
    "players, sixteen against the dealer's seventeen": lambda: _feed(_dealing(), "TS", "9C", "6D", "8H"),
    "players, discards being shuffled": lambda: _feed(_dealing(), "TS", "9C", "6D", "7H", ev.ShoeEmpty()),
    "dealer, drawing from six": lambda: _feed(_dealing(), "TS", "4C", "8D", "2H", ev.Decision(1, "stand")),
    "dealer, drawing from sixteen": lambda: _feed(_dealing(), "TS", "9C", "8D", "7H", ev.Decision(1, "stand")),
    "dealer, the hole card face down": lambda: _feed(_dealing(), "TS", "9C", "8D", ev.HoleCardDealt(),
                                                     ev.Decision(1, "stand")),
    "dealer, discards being shuffled": lambda: _feed(_dealing(), "TS", "4C", "8D", "2H", ev.Decision(1, "stand"),
                                                     ev.ShoeEmpty()),
    "settled": _settled,
    "settled, cut card out": _settled_cut_card_out,
    "settled, reshuffled": lambda: _shuffled(_settled_cut_card_out()),
}


@pytest.mark.parametrize("setup", SETUPS)
def test_each_situation_is_what_it_says(setup: str) -> None:
    t = SETUPS[setup]()
    assert t.phase == setup.split(",")[0]
    assert t.halted is None


def _samples(t: Table) -> dict[str, list[list[ev.Event]]]:
    """Events of every kind to try on ``t``; in each list, the last is the one tried, those before it set it up
    (an alarm to acknowledge, a device to restore)."""
    count = t.rules.cards_in_shoe
    return {
        "table_opened": [[ev.TableOpened(now=T0 + 5)]],
        "table_closed": [[ev.TableClosed(now=T0 + 5)]],
        "bet": [[ev.BetPlaced(1, 1000)], [ev.BetPlaced(2, 0)]],
        "no_more_bets": [[ev.NoMoreBets()]],
        "card": [[ev.CardDrawn(c)] for c in ("2C", "5H", "TS", "AS", "KD")],
        "hole_card_dealt": [[ev.HoleCardDealt()]],
        "cut_card": [[ev.CutCardReached()]],
        "shoe_empty": [[ev.ShoeEmpty()]],
        "peek": [[ev.PeekResult(blackjack=False)], [ev.PeekResult(blackjack=True)]],
        "decision": [[ev.Decision(1, action)] for action in ev.ACTIONS],
        "insurance_closed": [[ev.InsuranceClosed()]],
        "dealer_reveal": [[ev.DealerReveal()], [ev.DealerReveal(card="7H")], [ev.DealerReveal(card="8H")]],
        "shuffle_started": [[ev.ShuffleStarted()]],
        "shuffle_done": [[ev.ShuffleDone(count=count)]],
        "decks_changed": [[ev.DecksChanged(now=T0 + 5, deck_set="B")]],
        "tick": [[ev.Tick(now=T0 + 5)]],
        "device_fault": [[ev.DeviceFault("shoe", "cable")]],
        "device_restored": [[ev.DeviceFault("shoe", "cable"), ev.DeviceRestored("shoe")]],
        "irregularity": [[ev.Irregularity("console", "a chip moved")]],
        "alarm_ack": [[ev.Irregularity("console", "a chip moved"), ev.AlarmAcknowledged(t.next_alarm_id)]],
        "set_limits": [[ev.LimitsSet(500, 50_000)]],
        "rules_changed": [[ev.RulesChanged(rules_to_json(t.rules))]],
        "dealer_assigned": [[ev.DealerAssigned("d.ames", "badge")], [ev.DealerAssigned(None, "s.jones")]],
        "dealer_required": [[ev.DealerRequired(required=True)]],
    }


def test_the_samples_try_every_kind_of_event() -> None:
    assert set(_samples(_table())) == set(ev.EVENT_TYPES)


@pytest.mark.parametrize("setup", SETUPS)
def test_an_event_its_phase_lists_no_transition_for_is_refused_up_front(setup: str) -> None:
    phase = SETUPS[setup]().phase
    unlisted = [etype for etype in ev.EVENT_TYPES if (phase, etype) not in TRANSITIONS]
    for etype in unlisted:
        for events in _samples(SETUPS[setup]())[etype]:
            t = _feed(SETUPS[setup](), *events[:-1])
            before = t.snapshot()
            with pytest.raises(IllegalAction) as info:
                t.handle(events[-1])
            assert info.value.rule == "procedure", str(info.value)
            assert t.snapshot() == before and t.phase == phase
            if etype == "table_closed":  # the wording pit commands and docs/mqtt.md quote
                assert str(info.value) == "close refused: a round is in progress: finish it first"


def test_every_listed_transition_is_taken() -> None:
    """No dead edge in the table (or the drawing): each listed transition is taken from some situation."""
    taken: set[tuple[str, str, str]] = set()
    phases = set()
    for build in SETUPS.values():
        phases.add(build().phase)
        for etype, variants in _samples(build()).items():
            for events in variants:
                t = _feed(build(), *events[:-1])
                phase = t.phase
                if (phase, etype) not in TRANSITIONS:
                    continue
                try:
                    t.handle(events[-1])  # an unlisted transition raises TransitionNotListed, not a GameError
                except GameError:
                    continue  # refused by the rules, not by the phase
                taken.add((phase, etype, t.phase))
    assert phases == set(PHASES)
    assert taken <= LISTED
    assert sorted(LISTED - taken) == [], "listed, never taken"


def test_a_second_close_mid_round_is_refused_naming_the_round() -> None:
    t = _feed(_dealing(), "TS", "9C", "6D", "7H")
    t.handle(ev.TableClosed(now=T0 + 5))
    with pytest.raises(IllegalAction) as info:
        t.handle(ev.TableClosed(now=T0 + 6))
    assert (info.value.rule, info.value.action, info.value.reason) == (
        "procedure", "close", f"a close is already asked: the table closes when round {t.round} settles")


# ---------------------------------------------------------------------------------------------------------------
# the engine asserts each transition it takes


class _WanderingTable(Table):
    """A broken engine: a clock tick hands the table to the dealer."""

    def _check_deck_age(self) -> None:
        self._set_phase("dealer")


class _StuckAtThePeekTable(Table):
    """A broken engine: after a peek without blackjack the players' turn never starts (the phase stays)."""

    def _start_players(self) -> None:
        pass


def test_a_transition_not_listed_raises() -> None:
    t = Table(load_rules("nj-shoe"))
    assert t.handle(ev.Tick(now=T0)) == [] and t.phase == "closed"  # the real engine: a tick leaves it closed
    wandering = _WanderingTable(load_rules("nj-shoe"))
    with pytest.raises(TransitionNotListed) as info:
        wandering.handle(ev.Tick(now=T0))
    assert (info.value.phase, info.value.event, info.value.new_phase) == ("closed", "tick", "dealer")
    assert "engine bug: tick took the table from closed to dealer" in str(info.value)
    assert isinstance(info.value, AssertionError) and not isinstance(info.value, GameError), (
        "an engine bug, never mistaken for a refusal")


def test_the_transition_is_checked_before_the_table_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where TRANSITIONS do not list where an event takes the table, handle() raises before anything changed."""
    import controller.game.table as engine

    t = _shuffled(_feed(Table(load_rules("nj-shoe")), ev.TableOpened(now=T0)))
    _feed(t, ev.BetPlaced(1, 1000), ev.BetPlaced(2, 2000))
    before = (t.snapshot(), dict(t.bets), t.handle_cents, t.deal_plan, t.cards_before_round)
    handler, _ = engine._DISPATCH["betting"][ev.NoMoreBets]
    monkeypatch.setitem(engine._DISPATCH["betting"], ev.NoMoreBets, (handler, frozenset({"betting"})))
    with pytest.raises(TransitionNotListed) as info:
        t.handle(ev.NoMoreBets())
    assert (info.value.phase, info.value.event, info.value.new_phase) == ("betting", "no_more_bets", "dealing")
    assert (t.snapshot(), dict(t.bets), t.handle_cents, t.deal_plan, t.cards_before_round) == before


def test_staying_where_the_table_says_the_event_moves_on_raises() -> None:
    def peek_due(cls: type[Table]) -> Table:
        t = _shuffled(_feed(cls(load_rules("nj-shoe")), ev.TableOpened(now=T0)))
        return _feed(t, ev.BetPlaced(1, 1000), "2C", ev.NoMoreBets(), "TS", "TC", "7D", "7H")

    good = peek_due(Table)
    good.handle(ev.PeekResult(blackjack=False))
    assert good.phase == "players"
    stuck = peek_due(_StuckAtThePeekTable)
    assert stuck.phase == "dealing" and stuck.awaiting_peek
    with pytest.raises(TransitionNotListed, match="from dealing to dealing"):
        stuck.handle(ev.PeekResult(blackjack=False))


# ---------------------------------------------------------------------------------------------------------------
# the drawing


def test_the_diagram_draws_every_transition_and_nothing_else() -> None:
    drawn = set()
    start = None
    for line in mermaid().splitlines()[1:]:
        m = re.fullmatch(r" {4}(\S+) --> (\S+)(?:: (.+))?", line)
        assert m, line
        if m[1] == "[*]":
            start = m[2]
            continue
        drawn |= {(m[1], etype, m[2]) for etype in m[3].split(", ")}
    assert drawn == LISTED
    assert start == START == Table(load_rules("nj-shoe")).phase
    assert len(edges()) == len({(phase, nxt) for phase, _, nxt in LISTED})


def test_docs_state_diagram_is_what_the_code_draws() -> None:
    assert DOC.read_text(encoding="utf-8") == page(), f"docs/state-diagram.md is out of date: run\n  {REGENERATE}"
