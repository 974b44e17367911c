"""TableCore recovery: the newest engine snapshot plus the inputs after it, else a replay from the start.

The core's clock in these sessions is a function of the journal's length (each input a second and a
half after the one before), so a recovered core's ``state()`` (its ``ts`` and ``phase_since``
included) can be compared with the live one's."""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from controller.game import events as ev
from controller.game.rules import Rules, rules_from_json
from controller.game.snapshot import export_state
from controller.game.table import Table
from controller.journal import Journal, JournalError
from controller.profiles import load_rules
from controller.service.core import DEALER_SINCE_KEY, PHASE_SINCE_KEY, TableCore, engine_input
from controller.sim.dealer import SimulatedDealer

EVERY = 97  # not a multiple of anything a round does
T0 = 1_763_798_400.0


def _clock(journal: Journal) -> Callable[[], float]:
    """The core's clock: input n is journaled at T0 + 1.5 (n - 1); ``state()`` after it says T0 + 1.5 n."""
    return lambda: T0 + 1.5 * journal.last_input_id


def _play(core: TableCore, dealer: SimulatedDealer, inputs: int, now: list[float]) -> None:
    """Drive the core through ``inputs`` more inputs (the simulated table, a tick now and then)."""
    for _ in range(inputs):
        if core.journal.last_input_id == 0:
            event: ev.Event | None = ev.TableOpened(now=now[0])
        elif any(a.code == "deck_change_overdue" for a in core.table.alarms.values()) and (
            core.table.phase in ("settled", "shuffling") or (core.table.phase == "betting" and not core.table.bets)
        ):
            event = ev.DecksChanged(now=now[0], deck_set="B" if core.table.deck_set == "A" else "A")
        elif core.journal.last_input_id % 40 == 0:
            now[0] += 450.0
            event = ev.Tick(now=now[0])
        else:
            event = dealer.next_event(core.table)
        assert event is not None, core.table.snapshot()
        core.apply(event)


def _full_replay(rules: Rules, journal: Journal, upto: int | None = None) -> Table:
    table = Table(rules, narrate=False)
    for row in journal.inputs_since(0):
        if upto is not None and row.id > upto:
            break
        table.handle(engine_input(row.event))
    table.narrate = True
    return table


def _session(path: Path, profile: str, inputs: int, every: int = EVERY) -> tuple[Rules, dict[str, Any], Table]:
    """Play a journaled session; return the rules, the live core's last state and its engine."""
    rules = load_rules(profile)
    with Journal(path, synchronous="NORMAL") as journal:
        core = TableCore("t01", rules, journal, clock=_clock(journal), snapshot_every=every)
        _play(core, SimulatedDealer(rules, seed=4, table_id="t01"), inputs, [T0])
        return rules, core.state(), core.table


def _recover(path: Path, rules: Rules, every: int = EVERY) -> tuple[TableCore, Journal]:
    journal = Journal(path, synchronous="NORMAL")
    core = TableCore("t01", rules, journal, clock=_clock(journal), snapshot_every=every)
    core.recover()
    return core, journal


def _corrupt(path: Path, input_id: int, text: str) -> None:
    with closing(sqlite3.connect(path)) as db, db:  # closed: the journal is one program's at a time
        assert db.execute("UPDATE snapshots SET state = ? WHERE input_id = ?", (text, input_id)).rowcount == 1


@pytest.mark.parametrize("profile", ["house-h17", "ny-4620", "nj-hand-dealt"])
def test_snapshot_and_tail_recover_the_same_table_as_a_full_replay(tmp_path: Path, profile: str) -> None:
    path = tmp_path / "t01.journal"
    rules, live_state, live = _session(path, profile, 3000)
    core, journal = _recover(path, rules)
    with journal:
        newest = journal.snapshot_ids()[0]
        assert newest == 3000 // EVERY * EVERY
        assert (core.recovered_from, core.replayed) == (newest, 3000 - newest)
        assert core.state() == live_state
        full = _full_replay(rules, journal)
        assert export_state(core.table) == export_state(full) == export_state(live)
        assert core.table.narrate, "a recovered table narrates again"
        # and it goes on like the table that never stopped
        dealer = SimulatedDealer(rules, seed=4, table_id="t01")
        for _ in range(400):
            event = dealer.next_event(core.table)
            assert event is not None
            assert core.apply(event) == live.handle(event)
        assert export_state(core.table) == export_state(live)


def test_each_snapshot_is_the_state_after_its_input_and_only_two_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "t01.journal"
    rules, _, _ = _session(path, "house-shoe-surrender", 1000, every=100)
    with Journal(path) as journal:
        assert journal.snapshot_ids() == [1000, 900]
        snaps = {input_id: journal.snapshot_at(input_id) for input_id in (900, 1000)}
        for input_id, snap in snaps.items():
            engine = {k: v for k, v in snap.state.items() if k not in (PHASE_SINCE_KEY, DEALER_SINCE_KEY)}
            assert engine == export_state(_full_replay(rules, journal, upto=input_id))
            assert isinstance(snap.state[PHASE_SINCE_KEY], float)
            assert snap.state[PHASE_SINCE_KEY] <= T0 + 1.5 * (input_id - 1), "the ts of its input or an earlier one"
    with closing(sqlite3.connect(path)) as db:
        for input_id, snap in snaps.items():
            (last_seq,) = db.execute("SELECT MAX(seq) FROM outbox WHERE input_id <= ?", (input_id,)).fetchone()
            assert snap.seq == last_seq, "saved in the commit of its input: the seq of that input's last record"


def test_a_damaged_newest_snapshot_falls_back_to_the_older_one(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "t01.journal"
    rules, live_state, _ = _session(path, "house-h17", 1000)
    newest, older = 1000 // EVERY * EVERY, 1000 // EVERY * EVERY - EVERY
    _corrupt(path, newest, '{"format": "tablectl-engine-snap')
    with caplog.at_level(logging.WARNING, logger="controller.service.core"):
        core, journal = _recover(path, rules)
    with journal:
        assert (core.recovered_from, core.replayed) == (older, 1000 - older)
        assert core.state() == live_state
    assert f"snapshot at input {newest} is not usable" in caplog.text


def test_unusable_snapshots_fall_back_to_a_full_replay_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "t01.journal"
    rules, live_state, _ = _session(path, "ny-4620", 1000)
    with Journal(path) as journal:
        newest, older = journal.snapshot_ids()
        wrong_version = {**journal.snapshot_at(older).state, "version": 999}
    _corrupt(path, newest, "not json at all")
    _corrupt(path, older, json.dumps(wrong_version))
    with caplog.at_level(logging.WARNING, logger="controller.service.core"):
        core, journal = _recover(path, rules)
    with journal:
        assert (core.recovered_from, core.replayed) == (0, 1000)
        assert core.state() == live_state
    assert "not JSON" in caplog.text and "version 999" in caplog.text
    assert "no usable snapshot: replaying all 1000 journaled inputs" in caplog.text


def test_a_snapshot_the_journal_tail_does_not_fit_is_passed_over(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "t01.journal"
    rules, live_state, _ = _session(path, "house-h17", 1000)
    with Journal(path) as journal:
        newest = journal.snapshot_ids()[0]
        closed = journal.snapshot_at(newest).state
    closed["table"]["phase"] = "closed"  # restores fine, but the bets and cards after it are refused
    _corrupt(path, newest, json.dumps(closed))
    with caplog.at_level(logging.WARNING, logger="controller.service.core"):
        core, journal = _recover(path, rules)
    with journal:
        assert core.recovered_from == newest - EVERY
        assert core.state() == live_state
    assert "no longer applies" in caplog.text


def test_a_journal_recovers_under_the_rules_it_was_played_under_not_the_configured_ones(tmp_path: Path) -> None:
    """Rules changed in the configuration since (same profile name, another maximum): the journal's rounds
    restore and replay under the rules they were played under; the new ones are a change to journal."""
    path = tmp_path / "t01.journal"
    played, live_state, _ = _session(path, "house-h17", 300)
    other = load_rules("house-h17", {"max_bet": 100000})
    core, journal = _recover(path, other)
    with journal:
        assert core.recovered_from > 0 and core.table.rules == played  # its snapshot, under its own rules
        assert core.state() == live_state
        binding = core.rules_binding()
        assert binding is not None and rules_from_json(binding.rules) == other


def test_no_snapshots_when_disabled_and_a_short_journal_replays_quietly(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "t01.journal"
    rules, live_state, _ = _session(path, "european-6d", 500, every=0)
    with caplog.at_level(logging.WARNING, logger="controller.service.core"):
        core, journal = _recover(path, rules, every=0)
    with journal:
        assert journal.snapshot_ids() == []
        assert (core.recovered_from, core.replayed) == (0, 500)
        assert core.state() == live_state
    assert caplog.text == ""
    with pytest.raises(ValueError, match="snapshot_every"):
        TableCore("t01", rules, journal, snapshot_every=-1)


def test_recovering_twice_after_more_play_uses_the_newer_snapshot(tmp_path: Path) -> None:
    path = tmp_path / "t01.journal"
    rules, _, _ = _session(path, "nj-shoe", 400)
    core, journal = _recover(path, rules)
    with journal:
        assert core.recovered_from == 388
        _play(core, SimulatedDealer(rules, seed=4, table_id="t01"), 300, [1_763_798_400.0 + 10 * 450.0])
        assert journal.snapshot_ids() == [679, 582]
        state = core.state()
    again, journal = _recover(path, rules)
    with journal:
        assert (again.recovered_from, again.replayed) == (679, 21)
        assert again.state() == state


# ---- time in phase: state.ts and state.phase_since ----------------------------------------------


class _StateRecorder:
    """A publisher that keeps every ``state`` handed to it, decoded."""

    connected = True

    def __init__(self) -> None:
        self.states: list[dict[str, Any]] = []

    def notify(self) -> None:
        pass

    def publish_state(self, seq: int, state: Any) -> None:
        self.states.append(json.loads(state) if isinstance(state, bytes | str) else state)

    def publish_alarms(self, alarms: Any) -> None:
        pass

    async def start(self) -> None:
        pass

    async def close(self, timeout: float = 5.0) -> None:
        pass


def test_every_published_state_has_ts_and_phase_since_which_moves_exactly_when_the_phase_does(
    tmp_path: Path,
) -> None:
    rules = load_rules("house-h17")
    recorder = _StateRecorder()
    with Journal(tmp_path / "t01.journal", synchronous="NORMAL") as journal:
        core = TableCore("t01", rules, journal, recorder, clock=_clock(journal), snapshot_every=0)
        core.publish_all()
        _play(core, SimulatedDealer(rules, seed=4, table_id="t01"), 400, [T0])
    first, *published = recorder.states
    assert (first["phase"], first["ts"], first["phase_since"]) == ("closed", T0, T0), "no input yet: since now"
    assert len(published) == 400
    changes = 0
    prev = {"phase": "closed", "phase_since": None}
    for n, state in enumerate(published, start=1):
        assert type(state["ts"]) is float and type(state["phase_since"]) is float, state
        assert state["ts"] == T0 + 1.5 * (n - 1), "the state of input n is made at that input's time"
        assert state["phase_since"] <= state["ts"]
        if state["phase"] != prev["phase"] or n == 1:
            assert state["phase_since"] == state["ts"], f"input {n} moved the table into {state['phase']}"
            changes += 1
        else:
            assert state["phase_since"] == prev["phase_since"], f"input {n}: still {state['phase']}"
        prev = state
    assert changes > 50, "many rounds: every phase entered many times"
    assert {s["phase"] for s in published} >= {"betting", "dealing", "players", "dealer", "settled"}


def test_phase_since_survives_a_restart_from_a_snapshot_and_from_a_full_replay(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "t01.journal"
    rules = load_rules("ny-4620")
    with Journal(path, synchronous="NORMAL") as journal:
        core = TableCore("t01", rules, journal, clock=_clock(journal), snapshot_every=EVERY)
        _play(core, SimulatedDealer(rules, seed=4, table_id="t01"), 2 * EVERY - 3, [T0])
        # then only clock ticks: the snapshot at input 2 * EVERY and the inputs after it leave the
        # phase alone, so only the snapshot knows when the table entered it
        now = core.table.now or T0
        while journal.last_input_id < 2 * EVERY + 5:
            now += 1.0
            core.apply(ev.Tick(now=now))
        live_state = core.state()
    assert live_state["phase_since"] < T0 + 1.5 * (2 * EVERY - 4), "entered before the ticks"
    assert live_state["ts"] - live_state["phase_since"] > 10 * 1.5

    core, journal = _recover(path, rules)
    with journal:
        assert (core.recovered_from, core.replayed) == (2 * EVERY, 5)
        assert core.state() == live_state
        assert core.state()["phase_since"] == live_state["phase_since"]
        older = {input_id: journal.snapshot_at(input_id).state for input_id in journal.snapshot_ids()}
    assert sorted(older) == [EVERY, 2 * EVERY]
    # the snapshots as a version without phase_since wrote them: not usable, the full replay knows it
    for input_id, state in older.items():
        _corrupt(path, input_id, json.dumps({k: v for k, v in state.items() if k != PHASE_SINCE_KEY}))
    with caplog.at_level(logging.WARNING, logger="controller.service.core"):
        core, journal = _recover(path, rules)
    with journal:
        assert (core.recovered_from, core.replayed) == (0, 2 * EVERY + 5)
        assert core.state() == live_state
    assert f"snapshot at input {2 * EVERY} is not usable (no phase_since" in caplog.text


def test_a_journaled_input_of_the_wrong_types_stops_recovery_naming_its_row(tmp_path: Path) -> None:
    """An input row the engine cannot read, chained like any other (an engine of another version, a tool
    writing with the key): recovery refuses it by row, one line, never a TypeError out of the compiled
    engine or a table built from it."""
    path = tmp_path / "t01.journal"
    rules, _, _ = _session(path, "house-h17", 300)
    with Journal(path, synchronous="NORMAL") as journal, journal.transaction():
        bad, _ = journal.commit_event({"type": "bet", "spot": 2, "amount": "8500", "player": "p1"}, [], ts=T0 + 999)
    with pytest.raises(JournalError, match=rf"input {bad}: bet: amount '8500' is not a whole number"):
        _recover(path, rules)
