"""The demo as a simulated pit against a real Mosquitto: contract, secrecy, gapless seq, kill -9 resume."""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from controller.journal import Journal
from controller.journal.anchor import load_key
from controller.mqtt.state_model import StateSnapshot
from tests.mqtt.mqtt_helpers import Recorder, recording
from tests.mqtt_broker import Mosquitto

TABLECTL = [sys.executable, "-m", "controller.cli"]


def _demo_args(broker: Mosquitto, state_dir: Path, *, rounds: int, seed: int, tables: int = 2,
               speed: str = "max", prefix: str = "tables", journal_sync: str = "FULL") -> list[str]:
    return [*TABLECTL, "demo", "--tables", str(tables), "--rounds", str(rounds), "--seed", str(seed),
            "--speed", speed, "--broker", broker.url, "--state-dir", str(state_dir), "--no-dashboard", "--quiet",
            "--prefix", prefix, "--journal-sync", journal_sync]


async def _run(args: list[str], *, kill_after: float | None = None) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(*args, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.STDOUT)
    if kill_after is not None:
        try:
            await asyncio.wait_for(proc.wait(), kill_after)
        except TimeoutError:
            proc.send_signal(signal.SIGKILL)
    out, _ = await asyncio.wait_for(proc.communicate(), 120)
    return proc.returncode or 0, out.decode()


def _totals(output: str) -> dict[str, str]:
    return {line.split(":")[0]: line.split(":", 1)[1].strip()
            for line in output.splitlines() if line.startswith("t0") and "house_net" in line}


def _check_stream(rec: Recorder, table: str) -> list[dict[str, Any]]:
    """Every seq once in order (a repeat of the same body allowed after a crash, never a gap)."""
    first_body: dict[int, bytes] = {}
    top = 0
    events = []
    for m in rec.on(f"/{table}/events"):
        seq = int(m.json()["seq"])
        if seq <= top:
            assert first_body[seq] == m.payload, f"{table}: seq {seq} repeated with another body"
            continue
        assert seq == top + 1, f"{table}: gap after seq {top} (got {seq})"
        top = seq
        first_body[seq] = m.payload
        events.append(m.json())
    return events


async def test_two_table_demo_publishes_the_contract(mosquitto: Mosquitto, tmp_path: Path) -> None:
    async with recording(mosquitto.host, mosquitto.port, "tables/#") as rec:
        code, out = await _run(_demo_args(mosquitto, tmp_path / "state", rounds=12, seed=11))
        assert code == 0, out
        await rec.wait_for(lambda r: sum(1 for m in r.on("/status") if m.payload == b"offline") >= 2, 10)
    for table in ("t01", "t02"):
        events = _check_stream(rec, table)
        assert events and events[0]["seq"] == 1
        states = [StateSnapshot.model_validate(m.json()) for m in rec.on(f"/{table}/state")]
        assert states, table
        seqs = [s.seq for s in states]
        assert seqs == sorted(seqs) and seqs[-1] == events[-1]["seq"]
        phases = {s.phase for s in states}
        assert {"betting", "dealing", "players", "dealer", "settled"} <= phases, phases
        assert states[-1].totals.rounds == 12
        statuses = [m.payload for m in rec.on(f"/{table}/status")]
        assert statuses[0] == b"online" and statuses[-1] == b"offline"
        assert set(statuses) <= {b"online", b"offline"}
        _check_hole_card_secrecy(rec, table, events)


def _first_difference(straight: Path, resumed: Path) -> str:
    """Where two runs of the same seed part: the first round whose settlement differs, with both."""
    from controller.journal import Journal

    def settled(state_dir: Path) -> list[dict[str, Any]]:
        with Journal.open_readonly(state_dir / "t01.journal") as journal:
            return [json.loads(r.body) for r in journal.records() if '"round_settled"' in r.body]

    def body(record: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in record.items() if k not in ("seq", "ts")}

    a, b = settled(straight), settled(resumed)
    for x, y in zip(a, b, strict=False):
        if body(x) != body(y):
            return f"first different round: straight {x} resumed {y} (journals in {resumed.parent})"
    return f"settled rounds straight {len(a)} resumed {len(b)}"


def _check_hole_card_secrecy(rec: Recorder, table: str, events: list[dict[str, Any]]) -> None:
    """Until the ``hole_card`` event, nothing shows the dealer's second card."""
    revealed_at: dict[int, tuple[int, str]] = {}  # round -> (seq of reveal, card)
    round_no = 0
    for e in events:
        if e["type"] == "no_more_bets":
            round_no = e["round"]
        if e["type"] == "card" and e.get("hole"):
            assert e["card"] is None, f"{table}: hole card published face up: {e}"
        if e["type"] == "hole_card":
            revealed_at[round_no] = (e["seq"], e["card"])
    assert revealed_at, "no hole card was ever turned"
    for m in rec.on(f"/{table}/state"):
        state = m.json()
        reveal = revealed_at.get(state["round"])
        cards = state["dealer"]["cards"]
        if len(cards) >= 2 and (reveal is None or state["seq"] < reveal[0]):
            assert cards[1] is None, f"{table}: hole card in state seq {state['seq']} before it was turned"
    for m in rec.on(f"/{table}/alarms"):
        for alarm in m.json():
            for _, (_, card) in revealed_at.items():
                assert f"hole card is {card}" not in alarm["message"]


@pytest.mark.parametrize("journal_sync", ["FULL", "NORMAL"])
async def test_demo_killed_and_restarted_settles_like_an_uninterrupted_run(mosquitto: Mosquitto, tmp_path: Path,
                                                                          journal_sync: str) -> None:
    """Also with ``--journal-sync NORMAL``, which a long soak uses: it claims to survive a killed process.

    The kill times come from ``KILL_SEED`` (default 4), named in every failure, so a failure replays."""
    args: dict[str, Any] = {"rounds": 20, "seed": 4, "tables": 1, "journal_sync": journal_sync}
    code, straight = await _run(_demo_args(mosquitto, tmp_path / "straight", **args, prefix="straight"))
    assert code == 0, straight
    kill_seed = int(os.environ.get("KILL_SEED", "4"))
    rng = random.Random(kill_seed)
    resumed = tmp_path / "resumed"
    async with recording(mosquitto.host, mosquitto.port, "resumed/#") as rec:
        for _ in range(4):
            await _run(_demo_args(mosquitto, resumed, **args, speed="fast", prefix="resumed"),
                       kill_after=rng.uniform(0.8, 2.0))
        code, out = await _run(_demo_args(mosquitto, resumed, **args, prefix="resumed"))
        assert code == 0, f"KILL_SEED={kill_seed}: {out}"
        await rec.wait_for(lambda r: bool(r.on("/t01/status")) and r.on("/t01/status")[-1].payload == b"offline")
    assert _totals(out) == _totals(straight), \
        f"KILL_SEED={kill_seed}: {_first_difference(tmp_path / 'straight', resumed)}"
    events = _check_stream(rec, "t01")
    assert json.loads(rec.on("/t01/state")[-1].payload)["totals"]["rounds"] == 20
    assert events[-1]["type"] in ("round_settled", "phase", "shuffle_requested")
    code, again = await _run(_demo_args(mosquitto, resumed, **args, prefix="resumed"))
    assert code == 0 and _totals(again) == _totals(straight), "a finished demo exits 0 at once"


async def test_a_second_demo_on_a_state_dir_in_use_exits_2_and_the_first_plays_on(mosquitto: Mosquitto,
                                                                                   tmp_path: Path) -> None:
    state = tmp_path / "state"
    async with recording(mosquitto.host, mosquitto.port, "tables/#") as rec:
        endless = _demo_args(mosquitto, state, rounds=100_000, seed=2, speed="fast")
        first = await asyncio.create_subprocess_exec(*endless, stdout=asyncio.subprocess.DEVNULL,
                                                     stderr=asyncio.subprocess.PIPE)
        try:
            await rec.wait_for(lambda r: len(r.on("/t02/state")) > 2, 30)
            code, out = await _run(_demo_args(mosquitto, state, rounds=3, seed=2, prefix="second"))
            assert code == 2, out
            assert len(out.strip().splitlines()) == 1 and "t01.journal: in use by another program" in out, out
            seen = len(rec.on("/t01/state"))
            await rec.wait_for(lambda r: len(r.on("/t01/state")) > seen + 2, 30)  # the first plays on
        finally:
            first.send_signal(signal.SIGINT)
            assert first.stderr is not None
            err = (await asyncio.wait_for(first.stderr.read(), 60)).decode()
            assert await first.wait() == 0, err


@pytest.mark.parametrize("bad", [["--tables", "0"], ["--profile", "atlantis"], ["--broker", "http://x"]])
async def test_demo_bad_input_exits_2_with_one_line(bad: list[str]) -> None:
    code, out = await _run([*TABLECTL, "demo", *bad])
    assert code == 2 and len(out.strip().splitlines()) == 1, out


async def test_no_log_line_shows_the_hole_card_before_it_is_turned(mosquitto: Mosquitto, tmp_path: Path) -> None:
    """DEBUG logs (below INFO, so INFO too) of a whole demo: the hole card appears only once turned.

    Between a round's no-more-bets and the turn of its hole card, a card value may appear in the log only as
    often as the public records of that window show it (a player may draw the same card from a
    multi-deck shoe); any extra sighting would be a leak.
    """
    args = [*TABLECTL, "demo", "--tables", "1", "--rounds", "12", "--seed", "6", "--speed", "max",
            "--broker", mosquitto.url, "--state-dir", str(tmp_path / "state"), "--no-dashboard", "--quiet",
            "--prefix", "logs", "--log-level", "DEBUG", "--log-format", "json"]
    proc = await asyncio.create_subprocess_exec(*args, stdout=asyncio.subprocess.DEVNULL,
                                                stderr=asyncio.subprocess.PIPE)
    _, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err.decode()[-2000:]
    lines = [line for line in err.decode().splitlines() if line.startswith("{")]
    assert len(lines) > 200, "the demo logs every public record at DEBUG"
    records = [json.loads(line) for line in lines]
    windows = 0
    start: int | None = None
    for i, rec in enumerate(records):
        details = rec.get("details") or {}
        if rec.get("event") == "no_more_bets":
            start = i
        elif rec.get("event") == "hole_card" and start is not None:
            hole = details["card"]
            window = lines[start:i]
            public = sum(1 for r in records[start:i] if r.get("event") == "card"
                         and (r.get("details") or {}).get("card") == hole)
            sightings = sum(line.count(f'"{hole}"') for line in window)
            assert sightings <= public, f"hole card {hole} logged before it was turned: {window}"
            windows += 1
            start = None
    assert windows >= 6, "rounds with a hole card turned"


async def test_a_resumed_demo_with_no_rounds_left_delivers_what_its_journal_still_holds(
        mosquitto: Mosquitto, tmp_path: Path) -> None:
    """The soak found it: a pit ending while the broker was away kept its last records for ever, since a
    resumed demo with nothing left to play exited at once without publishing them."""
    from controller.journal import Journal
    from controller.mqtt.ports import free_port

    state = tmp_path / "state"
    away = [*TABLECTL, "demo", "--tables", "1", "--rounds", "3", "--seed", "4", "--speed", "max", "--broker",
            f"mqtt://127.0.0.1:{free_port()}", "--state-dir", str(state), "--no-dashboard", "--quiet"]
    code, out = await _run(away)
    assert code == 0, out
    with Journal.open_readonly(state / "t01.journal") as journal:
        last, delivered = journal.last_seq, journal.delivered_upto
    assert delivered < last
    async with recording(mosquitto.host, mosquitto.port, "tables/#") as rec:
        code, out = await _run(_demo_args(mosquitto, state, rounds=3, seed=4, tables=1))
        assert code == 0, out
        await rec.wait_for(lambda r: bool(r.on("/t01/events")) and max(r.event_seqs()) >= last, 20)
    events = _check_stream(rec, "t01")
    assert [e["seq"] for e in events][-1] == last


async def test_a_changed_profile_leaves_the_journal_s_rounds_as_played_and_takes_effect_between_shoes(
        mosquitto: Mosquitto, tmp_path: Path) -> None:
    """The same journal started with another profile (naturals paid 6:5 instead of 3:2): the rounds already
    played recover under the rules they were played under, and the new rules are journaled (and published)
    at the next point between shoes, not mid-shoe."""
    six_five = tmp_path / "house-h17-6to5.toml"
    text = (Path(__file__).resolve().parents[2] / "config" / "profiles" / "house-h17.toml").read_text()
    six_five.write_text(text.replace('name = "house-h17"', 'name = "house-h17-6to5"')
                        .replace('natural_pays = "3:2"', 'natural_pays = "6:5"'))
    state = tmp_path / "state"
    code, played = await _run(_demo_args(mosquitto, state, rounds=30, seed=6, tables=1))
    assert code == 0, played
    code, resumed = await _run([*_demo_args(mosquitto, state, rounds=30, seed=6, tables=1),
                                "--profile", str(six_five)])  # nothing left to play: the recovered totals
    assert code == 0 and _totals(resumed) == _totals(played), resumed
    async with recording(mosquitto.host, mosquitto.port, "tables/t01/events") as rec:
        code, out = await _run([*_demo_args(mosquitto, state, rounds=90, seed=6, tables=1), "--profile", str(six_five)])
        assert code == 0, out
        await rec.wait_for(lambda r: any(m.json()["type"] == "rules_changed" for m in r.on("/events")), 20)
    key = load_key(state / "journal.key")
    with Journal.open_readonly(state / "t01.journal", key=key) as journal:
        changes = [(row.id, row.event["rules"]["name"]) for row in journal.inputs_since(0)
                   if row.event["type"] == "rules_changed"]
        assert [name for _, name in changes] == ["house-h17", "house-h17-6to5"]
        shoe_of_change = [row.event["type"] for row in journal.inputs_since(changes[1][0] - 3)][:4]
    assert changes[0][0] == 1, "a new journal's first input binds its rules"
    assert "shuffle_started" in shoe_of_change or "table_closed" in shoe_of_change, shoe_of_change
    published = [m.json() for m in rec.on("/events") if m.json()["type"] == "rules_changed"]
    assert published[0]["profile"] == "house-h17-6to5" and len(published[0]["digest"]) == 16
