"""The dealer on duty across a restart of the table's core (controller/service/core.py): the journal replayed from
a snapshot or from its start gives back the dealer, the held relief, ``require_dealer`` and ``since``."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.game import events as ev
from controller.journal import Journal
from controller.profiles import load_rules
from controller.service.core import DEALER_SINCE_KEY, TableCore

T0 = 1_763_798_400.0
RULES = load_rules("nj-shoe")


def _core(journal: Journal, every: int, *, require: bool = True) -> TableCore:
    return TableCore("t01", RULES, journal, clock=lambda: T0 + 10.0 * journal.last_input_id, snapshot_every=every,
                     require_dealer=require)


def _play(core: TableCore) -> None:
    """Require a dealer, sign one in, open; a round whose relief is held; a close and a reopen."""
    binding = core.dealer_binding()
    assert binding == ev.DealerRequired(required=True)
    for event in (binding, ev.TableOpened(now=T0), ev.ShuffleDone(count=RULES.cards_in_shoe),
                  ev.DealerAssigned("d.ames", "badge"), ev.CardDrawn("2C"), ev.BetPlaced(1, 1000), ev.NoMoreBets(),
                  *(ev.CardDrawn(c) for c in ("TS", "7H", "KD", "TD")), ev.DealerAssigned("d.brun", "s.jones")):
        core.apply(event)


@pytest.mark.parametrize("every", [0, 2, 3, 5])  # 0: no snapshot, a replay from the start
def test_a_restart_gives_back_the_dealer_the_held_relief_and_since(tmp_path: Path, every: int) -> None:
    path = tmp_path / "t01.journal"
    with Journal(path, synchronous="NORMAL") as journal:
        core = _core(journal, every)
        _play(core)
        live = core.state()
        assert live["dealer_on_duty"] == {"id": "d.ames", "since": T0 + 30.0}  # the 4th input's ts
        assert core.table.dealer_held == ("d.brun", "s.jones")
    with Journal(path, synchronous="NORMAL") as journal:
        again = _core(journal, every)
        again.recover()
        assert again.recovered_from == (0 if not every else journal.last_input_id // every * every)
        assert again.dealer_binding() is None  # already journaled: not again
        assert again.state()["dealer_on_duty"] == live["dealer_on_duty"]
        assert (again.table.dealer_held, again.table.require_dealer) == (("d.brun", "s.jones"), True)
        again.apply(ev.Decision(spot=1, action="stand"))  # the round settles: the relief takes effect now
        assert again.state()["dealer_on_duty"] == {"id": "d.brun", "since": T0 + 10.0 * 12}
    with Journal(path, synchronous="NORMAL") as journal:
        third = _core(journal, every, require=False)
        third.recover()
        assert third.state()["dealer_on_duty"] == {"id": "d.brun", "since": T0 + 120.0}
        assert third.dealer_binding() == ev.DealerRequired(required=False)  # the setting changed: journaled


def test_a_snapshot_saved_before_dealers_restores_with_none_on_duty(tmp_path: Path) -> None:
    path = tmp_path / "t01.journal"
    with Journal(path, synchronous="NORMAL") as journal:
        core = _core(journal, 2, require=False)
        for event in (ev.TableOpened(now=T0), ev.ShuffleDone(count=RULES.cards_in_shoe), ev.Tick(now=T0 + 1)):
            core.apply(event)
        snap_id = journal.snapshot_ids()[0]
        state = journal.snapshot_at(snap_id).state
        assert DEALER_SINCE_KEY in state and state[DEALER_SINCE_KEY] is None
    with Journal(path, synchronous="NORMAL") as journal:
        again = _core(journal, 2, require=False)
        again.recover()
        assert again.recovered_from == 2 and again.state()["dealer_on_duty"] is None
