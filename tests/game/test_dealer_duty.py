"""The dealer on duty in the engine (controller/game/dealer_duty.py; DESIGN, "The dealer on duty"): sign-in, relief
held until the round settles, the round's dealer of record, and ``require_dealer``. Sans-I/O: events in, records out."""

from __future__ import annotations

from typing import Any

import pytest

from controller.game import events as ev
from controller.game.errors import IllegalAction, MalformedEvent
from controller.game.snapshot import export_state, restore_state
from controller.game.table import Table
from tests.game.test_table import cards, feed, new_table, records, refused, start

#: a round on nj-shoe: spot 1 stands on 20 against the dealer's 17 (burn 2C)
BURN = ["2C"]
DEAL = ["TS", "7H", "KD", "TD"]  # spot 1: T K = 20; dealer 7 T = 17


def play_round(t: Table, *between: ev.Event) -> list[Any]:
    """One round; ``between``: inputs taken after the deal, before the player stands (during the round)."""
    out = start(t, {1: 1000}, BURN if t.cards_dealt == 0 else [], DEAL)
    out += feed(t, *between)
    out += feed(t, ev.Decision(spot=1, action="stand"))
    assert t.phase == "settled", t.phase
    return out


def types(effects: list[Any]) -> list[str]:
    return [e.type for e in effects if hasattr(e, "type") and e.type in (
        "no_more_bets", "round_settled", "dealer_changed", "dealer_pending")]


def test_a_sign_in_between_rounds_takes_effect_at_once_and_names_the_rounds() -> None:
    t = new_table()
    out = t.handle(ev.DealerAssigned("d.ames", "badge"))
    assert records(out, "dealer_changed") == [{"dealer": "d.ames", "previous": None, "by": "badge"}]
    assert t.snapshot()["dealer_on_duty"] == {"id": "d.ames"}
    out = play_round(t)
    assert records(out, "no_more_bets")[0]["dealer_id"] == "d.ames"
    settled = records(out, "round_settled")[0]
    assert settled["dealer_id"] == "d.ames" and "relieved_by" not in settled


def test_without_a_dealer_the_rounds_name_none() -> None:
    t = new_table()
    out = play_round(t)
    assert records(out, "no_more_bets")[0]["dealer_id"] is None
    assert records(out, "round_settled")[0]["dealer_id"] is None
    assert t.snapshot()["dealer_on_duty"] is None


def test_a_relief_during_a_round_waits_for_its_settlement_last_change_wins() -> None:
    t = new_table()
    t.handle(ev.DealerAssigned("d.ames", "badge"))
    out = play_round(t, ev.DealerAssigned("d.brun", "badge"), ev.DealerAssigned("d.cole", "s.jones"))
    assert records(out, "dealer_pending") == [{"dealer": "d.brun", "by": "badge", "round": 1},
                                              {"dealer": "d.cole", "by": "s.jones", "round": 1}]
    # the dealer of record stays the one who dealt; the relief comes right after the settlement
    assert types(out) == ["no_more_bets", "dealer_pending", "dealer_pending", "round_settled", "dealer_changed"]
    settled = records(out, "round_settled")[0]
    assert (settled["dealer_id"], settled["relieved_by"]) == ("d.ames", "d.cole")
    assert records(out, "dealer_changed") == [{"dealer": "d.cole", "previous": "d.ames", "by": "s.jones"}]
    assert t.snapshot()["dealer_on_duty"] == {"id": "d.cole"}
    assert records(play_round(t), "no_more_bets")[0]["dealer_id"] == "d.cole"


def test_a_held_change_back_to_the_dealer_on_duty_cancels_the_relief() -> None:
    t = new_table()
    t.handle(ev.DealerAssigned("d.ames", "badge"))
    out = play_round(t, ev.DealerAssigned("d.brun", "badge"), ev.DealerAssigned("d.ames", "badge"))
    settled = records(out, "round_settled")[0]
    assert settled["dealer_id"] == "d.ames" and "relieved_by" not in settled
    assert not records(out, "dealer_changed")
    assert t.dealer_on_duty == "d.ames"


def test_a_sign_out_during_a_round_is_relieved_by_null() -> None:
    t = new_table()
    t.handle(ev.DealerAssigned("d.ames", "badge"))
    out = play_round(t, ev.DealerAssigned(None, "badge"))
    settled = records(out, "round_settled")[0]
    assert settled["dealer_id"] == "d.ames" and settled["relieved_by"] is None
    assert records(out, "dealer_changed") == [{"dealer": None, "previous": "d.ames", "by": "badge"}]
    assert t.dealer_on_duty is None


def test_the_same_dealer_again_is_taken_and_publishes_nothing() -> None:
    t = new_table()
    t.handle(ev.DealerAssigned("d.ames", "badge"))
    assert t.handle(ev.DealerAssigned("d.ames", "s.jones")) == []
    start(t, {1: 1000}, BURN, DEAL)
    assert t.handle(ev.DealerAssigned("d.ames", "badge")) == []  # during the round too


@pytest.mark.parametrize(("dealer", "by", "needle"), [
    ("D.Ames", "badge", "'D'"), ("", "badge", "blank"), ("x" * 65, "badge", "65 characters"),
    ("d.ames", "S.Jones", "by 'S.Jones'"), ("d.ames", "", "by ''"),
])
def test_a_malformed_assignment_is_refused_and_changes_nothing(dealer: str, by: str, needle: str) -> None:
    t = new_table()
    refused(t, ev.DealerAssigned(dealer, by), needle, MalformedEvent)
    assert t.dealer_on_duty is None


def test_a_dealer_is_taken_in_every_phase_closed_included_and_survives_a_close() -> None:
    t = Table(new_table().rules)
    t.handle(ev.DealerAssigned("d.ames", "s.jones"))  # a closed table
    assert t.dealer_on_duty == "d.ames"
    t.handle(ev.TableOpened(now=1.0))
    t.handle(ev.ShuffleDone(count=t.rules.cards_in_shoe))
    t.handle(ev.TableClosed(now=2.0))
    t.handle(ev.TableOpened(now=3.0))
    assert t.dealer_on_duty == "d.ames"


def test_require_dealer_keeps_betting_closed_until_a_dealer_signs_in() -> None:
    t = new_table()
    out = t.handle(ev.DealerRequired(required=True))
    assert records(out, "dealer_required") == [{"required": True}]
    cards(t, *BURN)
    state = t.snapshot()
    assert state["halted"] is not None and "no dealer on duty" in state["halted"]
    assert state["awaiting"] == "dealer"
    err = refused(t, ev.BetPlaced(spot=1, amount=1000), "no dealer on duty")
    assert "bet refused" in err
    t.handle(ev.DealerAssigned("d.ames", "badge"))
    assert t.snapshot()["halted"] is None and t.snapshot()["awaiting"] == "bets"
    t.handle(ev.BetPlaced(spot=1, amount=1000))
    t.handle(ev.DealerAssigned(None, "s.jones"))  # signs out with a wager on the layout: between rounds, at once
    with pytest.raises(IllegalAction) as info:
        t.handle(ev.NoMoreBets())
    assert info.value.rule == "dealer" and "no dealer on duty" in str(info.value)
    t.handle(ev.BetPlaced(spot=1, amount=0))  # a wager is taken back all the same
    assert t.bets == {}
    assert t.handle(ev.DealerRequired(required=True)) == []  # as it is: nothing new
    t.handle(ev.DealerRequired(required=False))
    assert t.snapshot()["halted"] is None
    t.handle(ev.BetPlaced(spot=1, amount=1000))


def test_a_sign_out_during_a_round_lets_it_finish_then_betting_stays_closed() -> None:
    t = new_table()
    t.handle(ev.DealerRequired(required=True))
    t.handle(ev.DealerAssigned("d.ames", "badge"))
    play_round(t, ev.DealerAssigned(None, "badge"))
    refused(t, ev.BetPlaced(spot=1, amount=1000), "no dealer on duty")


def test_a_malformed_requirement_is_refused() -> None:
    """Refused where an input from outside is read (the journal's JSON): the compiled engine's typed fields take
    nothing else."""
    with pytest.raises(ev.EventFormatError, match="dealer_required: required 'yes' is not true or false"):
        ev.from_json({"type": "dealer_required", "required": "yes"})


def test_the_inputs_journal_as_json_and_back() -> None:
    for event in (ev.DealerAssigned("d.ames", "badge"), ev.DealerAssigned(None, "s.jones"),
                  ev.DealerRequired(required=True)):
        assert ev.from_json(ev.to_json(event)) == event
    assert ev.to_json(ev.DealerAssigned(None, "s.jones")) == {"type": "dealer_assigned", "dealer": None,
                                                              "by": "s.jones"}
    with pytest.raises(ev.EventFormatError, match="dealer"):
        ev.from_json({"type": "dealer_assigned", "dealer": 7, "by": "badge"})
    with pytest.raises(ev.EventFormatError):
        ev.from_json({"type": "dealer_assigned", "by": "badge"})  # the dealer (or null) is always said


def test_a_snapshot_keeps_the_dealer_the_held_relief_and_the_requirement() -> None:
    t = new_table()
    t.handle(ev.DealerRequired(required=True))
    t.handle(ev.DealerAssigned("d.ames", "badge"))
    start(t, {1: 1000}, BURN, DEAL)
    t.handle(ev.DealerAssigned("d.brun", "s.jones"))
    restored = restore_state(t.rules, export_state(t))
    assert (restored.dealer_on_duty, restored.dealer_held, restored.require_dealer) == (
        "d.ames", ("d.brun", "s.jones"), True)
    a = feed(t, ev.Decision(spot=1, action="stand"))
    b = feed(restored, ev.Decision(spot=1, action="stand"))
    assert a == b and records(b, "round_settled")[0]["relieved_by"] == "d.brun"


def test_a_snapshot_saved_before_dealers_still_restores() -> None:
    t = new_table()
    start(t, {1: 1000}, BURN, DEAL)
    state = export_state(t)
    for key in ("dealer_on_duty", "dealer_held", "require_dealer"):
        del state["table"][key]  # as an engine of before wrote it
    restored = restore_state(t.rules, state)
    assert (restored.dealer_on_duty, restored.dealer_held, restored.require_dealer) == (None, None, False)
    assert feed(restored, ev.Decision(spot=1, action="stand")) == feed(t, ev.Decision(spot=1, action="stand"))


def test_a_snapshot_with_a_bad_dealer_id_is_refused() -> None:
    from controller.game.snapshot import SnapshotError

    t = new_table()
    state = export_state(t)
    state["table"]["dealer_on_duty"] = "D.Ames"
    with pytest.raises(SnapshotError):
        restore_state(t.rules, state)


def test_the_round_after_a_relief_names_the_incoming_dealer() -> None:
    t = new_table()
    t.handle(ev.DealerAssigned("d.ames", "badge"))
    play_round(t, ev.DealerAssigned("d.brun", "badge"))
    out = start(t, {1: 1000}, [], ["9S", "7C", "KC", "TC"])
    assert records(out, "no_more_bets")[0]["dealer_id"] == "d.brun"
