"""Rated play in the table's core: card inputs journaled whole and published masked, ratings journaled, published
and rebuilt from the journal (controller/service/ratings.py), on a real journal and the simulated table's players."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from controller.game import events as ev
from controller.game.money import format_money, parse_money
from controller.game.rules import Rules
from controller.game.table import Table
from controller.journal import Journal, JournalIntegrityError
from controller.journal.anchor import load_key
from controller.mqtt.options import BrokerOptions
from controller.mqtt.publisher import MemoryPublisher, MqttPublisher
from controller.profiles import load_rules
from controller.ratings import masked
from controller.service.core import TableCore
from controller.service.device_inputs import DeviceInputs
from controller.service.ratings import TableRatings, enable_ratings, is_engine_input
from controller.sim.carded import CardedPlayer, carded_players
from controller.sim.dealer import SimulatedDealer
from controller.sim.demo import DemoOptions, DemoTable
from controller.strategy.edge import house_edge
from drivers.playercard import CardReaderBack, CardReaderLost, PlayerCardUnreadable
from tests.mqtt_broker import Mosquitto

T0 = 1_800_000_000.0


class _Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        self.now += 1.5
        return self.now


def _core(path: Path, players: tuple[CardedPlayer, ...], clock: _Clock) -> tuple[TableCore, Journal, MemoryPublisher]:
    rules = load_rules("house-h17")
    journal = Journal(path, synchronous="NORMAL")
    publisher = MemoryPublisher(journal)
    core = TableCore("t01", rules, journal, publisher, clock=clock, snapshot_every=50)
    enable_ratings(core, idle_rounds=5)
    core.recover()
    return core, journal, publisher


def _play_rounds(core: TableCore, dealer: SimulatedDealer, rounds: int) -> None:
    """Drive the core until ``rounds`` more rounds are settled."""
    target = core.table.rounds_settled + rounds
    for _ in range(100_000):
        if core.table.rounds_settled >= target and core.table.phase == "settled":
            return
        event = ev.TableOpened(now=T0) if core.journal.last_input_id == 0 else dealer.next_event(
            core.table)  # type: ignore[arg-type]
        assert event is not None, core.table.snapshot()
        core.apply(event)
    raise AssertionError("the table did not settle its rounds")


@pytest.fixture
def carded() -> tuple[CardedPlayer, ...]:
    return carded_players(7, "t01", 7)


async def _session(tmp_path: Path, carded: tuple[CardedPlayer, ...]) -> tuple[TableCore, Journal, MemoryPublisher,
                                                                               SimulatedDealer]:
    clock = _Clock()
    core, journal, publisher = _core(tmp_path / "t01.journal", carded, clock)
    await publisher.start()
    dealer = SimulatedDealer(core.rules, seed=7, table_id="t01", regulars=carded)
    _play_rounds(core, dealer, 1)
    for player in carded:
        core.apply_card("card_in", player.spot, player.number)
    _play_rounds(core, dealer, 40)
    return core, journal, publisher, dealer


async def test_card_numbers_are_journaled_whole_and_published_only_on_the_ratings_topics(
        tmp_path: Path, carded: tuple[CardedPlayer, ...]) -> None:
    core, journal, publisher, _ = await _session(tmp_path, carded)
    numbers = {p.number for p in carded}
    card_inputs = [row.event for row in journal.inputs_since(0) if row.event["type"] == "card_in"]
    assert {e["player"] for e in card_inputs} == numbers, "the journal holds the number as read"
    assert all(not is_engine_input(e) for e in card_inputs)
    card_records = [json.loads(r.body) for r in journal.records() if '"card_in"' in r.body]
    assert {r["player"] for r in card_records} == {masked(n) for n in numbers}
    public = [(t, p) for t, p, _ in publisher.messages if "/ratings" not in t]
    assert public and not [(t, p) for t, p in public for n in numbers if n.encode() in p], \
        "a card number reached a dashboard-readable topic"
    rated = [(t, p) for t, p, _ in publisher.messages if t.endswith("/ratings/open")]
    assert rated and all(n.encode() in rated[-1][1] for n in numbers), "tracking reads every running rating"
    state = core.state()
    for player in carded:
        view = state["spots"][str(player.spot)]["rating"]
        assert view["rated"] is True and view["player"] == masked(player.number)
        assert player.number not in json.dumps(view)


async def test_each_player_s_figures_follow_the_play_and_only_mistakes_cost_more_than_theo(
        tmp_path: Path, carded: tuple[CardedPlayer, ...]) -> None:
    core, _, _, _ = await _session(tmp_path, carded)
    assert core.ratings is not None
    ratings = {r["player"]: r for r in core.ratings.open_json()}
    for player in carded:
        r = ratings[player.number]
        assert r["rounds"] == 40 and r["hands"] == 40
        assert parse_money(r["average_bet"]) == player.units * core.table.min_bet
        theo, skill = parse_money(r["theoretical_loss"]), parse_money(r["skill_theoretical_loss"])
        if player.style == "basic":
            assert skill == theo and not r["departures"], r
        elif player.style in ("never_doubles", "stands_stiff"):
            assert skill > theo and r["departures"], r
            wanted = {"never_doubles": "double", "stands_stiff": "hit"}[player.style]
            assert all(d["basic"] in (wanted, "surrender") for d in r["departures"]), r["departures"]


async def test_a_card_pulled_ends_the_rating_at_the_next_round_journaled_and_published_once(
        tmp_path: Path, carded: tuple[CardedPlayer, ...]) -> None:
    core, journal, publisher, dealer = await _session(tmp_path, carded)
    leaving = carded[1]
    core.apply_card("card_out", leaving.spot, leaving.number)
    _play_rounds(core, dealer, 2)
    rows = [row.event["rating"] for row in journal.inputs_since(0) if row.event["type"] == "rating"]
    assert [r["player"] for r in rows] == [leaving.number]
    ended = rows[0]
    assert ended["ended_by"] == "card_out" and ended["open"] is False and ended["rounds"] == 40
    published = [json.loads(p) for t, p, _ in publisher.messages if t.endswith("/ratings")]
    assert published == [ended]
    open_now = json.loads([p for t, p, _ in publisher.messages if t.endswith("/ratings/open")][-1])
    assert leaving.number not in {r["player"] for r in open_now}
    assert str(leaving.spot) not in core.state()["spots"] or "rating" not in core.state()["spots"][str(leaving.spot)]


async def test_the_open_ratings_are_rebuilt_from_the_journal_neither_split_nor_lost(
        tmp_path: Path, carded: tuple[CardedPlayer, ...]) -> None:
    core, journal, _, _ = await _session(tmp_path, carded)
    assert core.ratings is not None
    before = core.ratings.open_json()
    state_before = core.state()
    journal.close()
    again, journal2, _ = _core(tmp_path / "t01.journal", carded, _Clock())
    assert again.ratings is not None
    assert again.ratings.open_json() == before
    assert {k: v.get("rating") for k, v in again.state()["spots"].items()} == \
        {k: v.get("rating") for k, v in state_before["spots"].items()}
    _play_rounds(again, SimulatedDealer(again.rules, seed=7, table_id="t01", regulars=carded), 3)
    after = {r["player"]: r for r in again.ratings.open_json()}
    for r in before:
        assert after[r["player"]]["rating_id"] == r["rating_id"] and after[r["player"]]["rounds"] == r["rounds"] + 3
    journal2.close()


async def test_a_start_reads_from_the_last_ratings_checkpoint_to_the_same_open_ratings(
        tmp_path: Path, carded: tuple[CardedPlayer, ...]) -> None:
    """Between rounds the book is journaled (a chained input row); a start reads it and the records after it, not
    the whole journal, and comes to the open ratings the table had, as a read of the whole journal does."""
    core, journal, _, dealer = await _session(tmp_path, carded)
    core.apply_card("card_out", carded[2].spot, carded[2].number)  # one rating ended after a checkpoint
    _play_rounds(core, dealer, 2)
    assert core.ratings is not None
    before = core.ratings.open_json()
    checkpoints = [row for row in journal.inputs_since(0) if row.event["type"] == "ratings_checkpoint"]
    assert checkpoints, "40 rounds of seven carded players write a checkpoint"
    assert all(not is_engine_input(row.event) for row in checkpoints)
    ended = [row.event["rating"] for row in journal.inputs_since(0) if row.event["type"] == "rating"]
    journal.close()
    again, journal2, _ = _core(tmp_path / "t01.journal", carded, _Clock())
    assert again.ratings is not None
    assert again.ratings.rebuilt_from == checkpoints[-1].id
    assert again.ratings.open_json() == before
    whole = TableRatings(again.rules, table_id="t01", idle_rounds=5)
    whole.rebuild(journal2, checkpoint=False)
    assert whole.rebuilt_from == 0 and whole.open_json() == before
    assert [row.event["rating"] for row in journal2.inputs_since(0) if row.event["type"] == "rating"] == ended, \
        "no rating journaled twice at the start"
    journal2.close()


def test_a_checkpoint_edited_behind_the_table_stops_its_start(tmp_path: Path,
                                                              carded: tuple[CardedPlayer, ...]) -> None:
    """The insider's move: the checkpoint is what a start believes, so an edited one (a house net made smaller) must
    not be read. It is a row of the chain: the start refuses the journal, naming the row."""
    key = b"k" * 32
    path = tmp_path / "t01.journal"
    core = TableCore("t01", load_rules("house-h17"), Journal(path, key=key), None, clock=_Clock(), snapshot_every=50)
    enable_ratings(core)
    core.recover()
    dealer = SimulatedDealer(core.rules, seed=7, table_id="t01", regulars=carded)
    _play_rounds(core, dealer, 1)
    for player in carded:
        core.apply_card("card_in", player.spot, player.number)
    _play_rounds(core, dealer, 40)
    core.journal.close()
    db = sqlite3.connect(path)
    (iid, text), = db.execute("SELECT id, event FROM inputs WHERE event LIKE '{\"type\":\"ratings_checkpoint\"%' "
                              "ORDER BY id DESC LIMIT 1").fetchall()
    event = json.loads(text)
    event["book"]["open"][0]["house_net"] -= 10_000
    db.execute("UPDATE inputs SET event = ? WHERE id = ?", (json.dumps(event, separators=(",", ":")), iid))
    db.commit()
    db.close()
    again = TableCore("t01", load_rules("house-h17"), Journal(path, key=key), None, clock=_Clock())
    enable_ratings(again)
    with pytest.raises(JournalIntegrityError, match=f"inputs.* {iid}"):
        again.recover()
    again.journal.close()


def _open_core(path: Path, rules: Rules, clock: _Clock) -> TableCore:
    core = TableCore("t01", rules, Journal(path, synchronous="NORMAL"), None, clock=clock, snapshot_every=50)
    enable_ratings(core, idle_rounds=5)
    core.recover()
    return core


def test_a_profile_changed_at_a_restart_leaves_the_rounds_before_under_the_rules_they_were_played_under(
        tmp_path: Path, carded: tuple[CardedPlayer, ...]) -> None:
    """A table restarted with another profile in its config (taken at the next shoe, as the service takes it): the
    open ratings it rebuilds are the ones it had (their rounds priced under the journal's rules, not the new
    config's), and the rounds after the change take the new rules' edge."""
    first, second = load_rules("house-h17"), load_rules("house-shoe-surrender")
    edge_a, edge_b = house_edge(first).house_edge, house_edge(second).house_edge
    clock = _Clock()
    core = _open_core(tmp_path / "t01.journal", first, clock)
    binding = core.rules_binding()
    assert binding is not None
    core.apply(binding)
    core.apply(ev.TableOpened(now=T0))
    dealer = SimulatedDealer(first, seed=7, table_id="t01", regulars=carded)
    _play_rounds(core, dealer, 1)
    for player in carded:
        core.apply_card("card_in", player.spot, player.number)
    _play_rounds(core, dealer, 20)
    assert core.ratings is not None
    before = core.ratings.open_json()
    core.journal.close()

    again = _open_core(tmp_path / "t01.journal", second, clock)
    assert again.ratings is not None
    assert again.ratings.open_json() == before, "the rounds before the change keep the rules they were played under"
    change = again.rules_binding()
    assert change is not None
    target = again.table.rounds_settled + 20
    while change is not None or again.table.rounds_settled < target or again.table.phase != "settled":
        if change is not None and again.table.between_shoes():
            at_change = {r["player"]: parse_money(r["initial_wagers"]) for r in again.ratings.open_json()}
            again.apply(change)
            change = None
            continue
        event = dealer.next_event(again.table)  # type: ignore[arg-type]
        assert event is not None
        again.apply(event)
    wagers_before = at_change  # the rounds until the next shoe are still played under the journal's rules
    for r in again.ratings.open_json():
        after = parse_money(r["initial_wagers"]) - wagers_before[r["player"]]
        assert after > 0, r
        assert r["theoretical_loss"] == format_money(round(wagers_before[r["player"]] * edge_a + after * edge_b)), r
    again.journal.close()


async def test_the_replay_passes_the_card_and_rating_inputs_by(tmp_path: Path,
                                                                carded: tuple[CardedPlayer, ...]) -> None:
    core, journal, _, dealer = await _session(tmp_path, carded)
    core.apply_card("card_out", carded[0].spot, carded[0].number)
    _play_rounds(core, dealer, 1)
    snapshot = core.table.snapshot()
    journal.close()
    with Journal(tmp_path / "t01.journal") as j:
        fresh = TableCore("t01", core.rules, j)
        fresh.recover()
        assert fresh.table.snapshot() == snapshot
        assert fresh.ratings is None  # a table that rates no one still replays a rated journal


def test_a_lost_reader_and_an_unreadable_card_are_alarms_that_do_not_halt() -> None:
    table = Table(load_rules("house-h17"))
    inputs = DeviceInputs()
    (lost,) = inputs.translate("chips", CardReaderLost(3, "3 polls unanswered"), table, T0)
    assert isinstance(lost, ev.Irregularity) and not lost.halts and "spot 3" in lost.detail
    (unreadable,) = inputs.translate("chips", PlayerCardUnreadable(2, 1, "blank or damaged card"), table, T0)
    assert isinstance(unreadable, ev.Irregularity) and not unreadable.halts
    assert inputs.translate("chips", CardReaderBack(3), table, T0) == []
    table.handle(ev.TableOpened(now=T0))
    table.handle(lost)
    assert table.halted is None and [a.halts for a in table.alarms.values()] == [False]


async def test_a_card_pulled_while_the_table_was_down_ends_its_rating_once_the_reader_answers(
        mosquitto: Mosquitto, tmp_path: Path) -> None:
    """The reader reports a level: a card no longer there at the first poll after a restart is no event of the
    driver's, so the service compares the journal's cards with what the readers hold once they have answered.
    Without it the rating ran on, and the next player at the spot was rated under the pulled card."""
    rules = load_rules("house-h17")
    opts = DemoOptions(rules=rules, rounds=4, seed=2, speed="max", prefix="pulled", quiet=True, dashboard=False,
                       carded=3)
    state = tmp_path / "state"
    state.mkdir()
    first = DemoTable("t01", opts, state, mosquitto.url, io.StringIO())
    try:
        await asyncio.wait_for(first.run(), 120)
    finally:
        await first.close()
    opts.rounds = 7
    again = DemoTable("t01", opts, state, mosquitto.url, io.StringIO())
    gone = again.carded[0]
    again.carded = again.carded[1:]  # its card was pulled while the table was down
    try:
        await asyncio.wait_for(again.run(), 120)
    finally:
        await again.close()
    with Journal.open_readonly(state / "t01.journal", key=load_key(state / "journal.key")) as journal:
        outs = [row.event for row in journal.inputs_since(0) if row.event["type"] == "card_out"]
        ended = [row.event["rating"] for row in journal.inputs_since(0) if row.event["type"] == "rating"]
        confirmed = journal.read_mark("ratings_sent", journal.get_meta("ratings_sent"))
        last_input = journal.last_input_id
    assert confirmed == last_input, "a clean stop with every rating acknowledged: none to send again"
    assert outs == [{"type": "card_out", "spot": gone.spot, "player": gone.number}]
    assert [(r["player"], r["ended_by"]) for r in ended] == [(gone.number, "card_out")]
    # the simulated crew bets within milliseconds of the start: a round whose wagers lock before the readers'
    # first answer still counts for the card the journal held (a real dealer takes seconds)
    assert ended[0]["rounds"] in (4, 5), ended[0]


async def test_a_start_sends_again_the_ratings_a_crash_may_have_kept_off_the_wire_and_none_after_a_clean_stop(
        tmp_path: Path, carded: tuple[CardedPlayer, ...]) -> None:
    core, journal, _, dealer = await _session(tmp_path, carded)
    core.apply_card("card_out", carded[2].spot, carded[2].number)
    _play_rounds(core, dealer, 1)
    (ended,) = [row.event["rating"] for row in journal.inputs_since(0) if row.event["type"] == "rating"]
    journal.close()  # killed: no clean stop confirmed the rating's PUBACK

    async def started() -> tuple[TableCore, Journal, list[dict[str, Any]]]:
        again, j, publisher = _core(tmp_path / "t01.journal", carded, _Clock())
        await publisher.start()
        again.publish_all()
        return again, j, [json.loads(p) for t, p, _ in publisher.messages if t.endswith("/ratings")]

    again, j, sent = await started()
    assert sent == [ended], "the ended rating goes out again at start (a repeat: same rating_id, same body)"
    again.ratings_confirmed()  # what a clean stop does once the broker acknowledged every rating
    j.close()
    _, j, sent = await started()
    assert sent == []
    j.close()


async def _mqtt_session(path: Path, carded: tuple[CardedPlayer, ...], url: str,
                        rounds: int) -> tuple[TableCore, MqttPublisher, SimulatedDealer]:
    """A rated core publishing through a real MQTT session to ``url``; each carded player's card goes out and back in
    every 5 rounds, so ratings end and are sent as play goes on."""
    journal = Journal(path, synchronous="NORMAL")
    publisher = MqttPublisher(journal, table_id="t01", broker=BrokerOptions([url], backoff_min=5.0), prefix="sent")
    core = TableCore("t01", load_rules("house-h17"), journal, publisher, clock=_Clock(), snapshot_every=50)
    enable_ratings(core, idle_rounds=5)
    core.recover()
    await publisher.start()
    core.publish_all()
    dealer = SimulatedDealer(core.rules, seed=7, table_id="t01", regulars=carded)
    _play_rounds(core, dealer, 1)
    for _ in range(rounds // 5):
        for player in carded:
            core.apply_card("card_in", player.spot, player.number)
        _play_rounds(core, dealer, 4)
        for player in carded[:2]:
            core.apply_card("card_out", player.spot, player.number)
        _play_rounds(core, dealer, 1)
        await asyncio.sleep(0.05)  # the loop runs: the publisher sends, the broker's PUBACKs come in
    return core, publisher, dealer


async def test_play_with_every_rating_acknowledged_moves_the_resend_mark_so_a_start_after_a_kill_sends_few(
        mosquitto: Mosquitto, tmp_path: Path, carded: tuple[CardedPlayer, ...]) -> None:
    """Without a clean stop the mark of the ratings the broker acknowledged never moved, so a start after a crash
    sent again (and first read) every rating since the last clean stop: weeks of journal. A checkpoint taken while
    the publisher holds no rating without its PUBACK moves it to the input before that round's ratings."""
    core, publisher, _ = await _mqtt_session(tmp_path / "t01.journal", carded, mosquitto.url, 60)
    journal = core.journal
    ended = [row.id for row in journal.inputs_since(0) if row.event["type"] == "rating"]
    mark = journal.read_mark("ratings_sent", journal.get_meta("ratings_sent")) or 0
    await publisher.close(timeout=5)  # the session ends; no clean stop of the table confirms anything
    journal.close()
    assert len(ended) >= 20
    assert mark >= ended[len(ended) // 2], f"the mark stayed at {mark}: every rating would be sent again"
    again, j, memory = _core(tmp_path / "t01.journal", carded, _Clock())
    await memory.start()
    again.publish_all()
    sent = [json.loads(p)["rating_id"] for t, p, _ in memory.messages if t.endswith("/ratings")]
    assert len(sent) < len(ended) // 2
    j.close()


async def test_ratings_the_broker_never_acknowledged_keep_the_mark_where_it_was(
        tmp_path: Path, carded: tuple[CardedPlayer, ...]) -> None:
    """The insider's (or the network's) move: the broker away, no rating is acknowledged; the mark must not move,
    so a start after a crash sends every ended rating again (a repeat, never a loss)."""
    core, publisher, _ = await _mqtt_session(tmp_path / "t01.journal", carded, "mqtt://127.0.0.1:9", 60)
    journal = core.journal
    assert publisher.ratings_pending > 0
    ended = [row.event["rating"] for row in journal.inputs_since(0) if row.event["type"] == "rating"]
    assert len(ended) >= 20 and [row for row in journal.inputs_since(0)
                                 if row.event["type"] == "ratings_checkpoint"], "checkpoints were taken"
    assert (journal.read_mark("ratings_sent", journal.get_meta("ratings_sent")) or 0) == 0
    await publisher.close(timeout=0.1)
    journal.close()
    again, j, memory = _core(tmp_path / "t01.journal", carded, _Clock())
    await memory.start()
    again.publish_all()
    assert [json.loads(p) for t, p, _ in memory.messages if t.endswith("/ratings")] == ended
    j.close()


@pytest.mark.parametrize("forged", ["edited", "deleted", "older"])
async def test_a_forged_ratings_mark_only_makes_ended_ratings_be_sent_again_never_skipped(
        tmp_path: Path, carded: tuple[CardedPlayer, ...], forged: str) -> None:
    """``ratings_sent`` is outside the chain: an insider raising it (to hide a rating from tracking after a crash),
    deleting it or putting an older one back makes the start send the ended ratings again, never fewer."""
    core, journal, _, dealer = await _session(tmp_path, carded)
    core.apply_card("card_out", carded[2].spot, carded[2].number)
    _play_rounds(core, dealer, 1)
    older = journal.signed_mark("ratings_sent", 3)
    core.ratings_confirmed()
    core.apply_card("card_out", carded[3].spot, carded[3].number)
    _play_rounds(core, dealer, 1)
    ended = [row.event["rating"] for row in journal.inputs_since(0) if row.event["type"] == "rating"]
    assert len(ended) == 2
    journal.close()
    with sqlite3.connect(tmp_path / "t01.journal") as db:
        if forged == "edited":  # past the last rating, the MAC left as it was
            mark = db.execute("SELECT value FROM meta WHERE key = 'ratings_sent'").fetchone()[0]
            db.execute("UPDATE meta SET value = ? WHERE key = 'ratings_sent'",
                       (f"{core.journal.last_input_id} {mark.split()[1]}",))
        elif forged == "deleted":
            db.execute("DELETE FROM meta WHERE key = 'ratings_sent'")
        else:
            db.execute("UPDATE meta SET value = ? WHERE key = 'ratings_sent'", (older,))
    again, j, publisher = _core(tmp_path / "t01.journal", carded, _Clock())
    await publisher.start()
    again.publish_all()
    sent = [json.loads(p) for t, p, _ in publisher.messages if t.endswith("/ratings")]
    assert sent == ended, "every ended rating goes out again: a repeat, never a loss"
    j.close()


async def test_a_rating_whose_row_a_crash_kept_out_is_journaled_and_sent_at_the_next_start(
        tmp_path: Path, carded: tuple[CardedPlayer, ...]) -> None:
    """The book runs after each event's commit (off the card's path): a crash between the event that ended a
    rating and the rating's row loses nothing, the next start finds the rating in the stream and journals it."""
    core, journal, _, dealer = await _session(tmp_path, carded)
    core.apply_card("card_out", carded[4].spot, carded[4].number)
    while not any(row.event["type"] == "rating" for row in journal.inputs_since(journal.last_input_id - 1)):
        event = dealer.next_event(core.table)  # type: ignore[arg-type]
        assert event is not None
        core.apply(event)
    (ended,) = [row.event["rating"] for row in journal.inputs_since(0) if row.event["type"] == "rating"]
    last = journal.last_input_id
    journal.close()
    with sqlite3.connect(tmp_path / "t01.journal") as db:  # the crash: the rating's row never written
        db.execute("DELETE FROM inputs WHERE id = ?", (last,))
    again, j, publisher = _core(tmp_path / "t01.journal", carded, _Clock())
    assert [row.event["rating"] for row in j.inputs_since(0) if row.event["type"] == "rating"] == [ended]
    await publisher.start()
    again.publish_all()
    assert [json.loads(p) for t, p, _ in publisher.messages if t.endswith("/ratings")] == [ended]
    j.close()


async def test_a_lost_reader_raises_a_device_alarm_that_does_not_halt_and_the_rating_goes_on(
        mosquitto: Mosquitto, tmp_path: Path) -> None:
    """The reader at a carded spot stops answering mid-session: a non-halting device alarm (a technician's or
    the pit's to acknowledge), play goes on, and the card is taken as still in: its rating keeps every round."""
    from controller.contract.alarms import alarm_kind

    opts = DemoOptions(rules=load_rules("house-h17"), rounds=None, seed=3, speed="max", prefix="lost", quiet=True,
                       dashboard=False, carded=2)
    state = tmp_path / "state"
    state.mkdir()
    table = DemoTable("t01", opts, state, mosquitto.url, io.StringIO())
    task = asyncio.create_task(table.run())
    try:
        async with asyncio.timeout(60):
            while table.core.table.rounds_settled < 2:
                await asyncio.sleep(0.01)
            assert table.sim.cards is not None
            lost = table.carded[0]
            table.sim.cards.lose(lost.spot)
            while not table.core.table.alarms:
                await asyncio.sleep(0.01)
            at = table.core.table.rounds_settled
            while table.core.table.rounds_settled < at + 3:
                await asyncio.sleep(0.01)
        (alarm,) = table.core.table.alarms.values()
        assert not alarm.halts and f"spot {lost.spot}" in alarm.message and table.core.table.halted is None
        assert alarm_kind(alarm.code, alarm.halts) == "device"
        assert table.core.ratings is not None
        rating = {r["player"]: r for r in table.core.ratings.open_json()}[lost.number]
        assert rating["rounds"] >= at + 2, "the card is taken as still in: its rounds still count"
        assert not task.done()
    finally:
        task.cancel()
        with contextlib.suppress(BaseException):
            await task
        await table.close()
