"""``state`` names the chain hash of its ``seq``'s record (``head``) and the table's pit (``pit``), and ``analytics``
its pit too (DESIGN, "The casino floor"; docs/journal.md, "The recorder"; docs/mqtt.md).

The central recorder keeps the ``head`` the table published with each ``state``; at the table's next start it is
the witness a journal re-chained by someone holding the key cannot satisfy. So every ``head`` must be exactly the
stored hash of the outbox row at ``state.seq``: checked here against the journal file itself, for the engine's
inputs, a player card's, a refused command's note, and a recovered table.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import sqlite3
import struct
import sys
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from controller.game import events as ev
from controller.journal import UNKEYED, Journal
from controller.profiles import load_rules
from controller.service.core import TableCore, with_head
from controller.service.ratings import enable_ratings
from controller.service.settings import ConfigError, load_settings
from controller.sim.dealer import SimulatedDealer
from controller.sim.demo import demo_pit
from tests.mqtt.mqtt_helpers import recording
from tests.mqtt_broker import Mosquitto

T0 = 1_795_334_400.0


class _States:
    """A publisher that keeps every ``state`` handed to it, decoded."""

    connected = True

    def __init__(self) -> None:
        self.states: list[dict[str, Any]] = []

    def notify(self) -> None:
        pass

    def publish_state(self, seq: int, state: Any) -> None:
        decoded = json.loads(state) if isinstance(state, bytes | str) else json.loads(json.dumps(state))
        assert decoded["seq"] == seq
        self.states.append(decoded)

    def publish_alarms(self, alarms: Any) -> None:
        pass

    async def start(self) -> None:
        pass

    async def close(self, timeout: float = 5.0) -> None:
        pass


def _stored_heads(path: Path) -> dict[int, str]:
    with closing(sqlite3.connect(path)) as db:
        return {int(seq): bytes(h).hex() for seq, h in db.execute("SELECT seq, hash FROM outbox")}


def _play(core: TableCore, inputs: int) -> None:
    dealer = SimulatedDealer(core.rules, seed=7, table_id=core.table_id)
    now = T0
    for _ in range(inputs):
        now += 1.0
        event = ev.TableOpened(now=now) if core.journal.last_input_id == 0 else dealer.next_event(core.table)
        assert event is not None
        core.apply(event)


def test_every_state_names_the_stored_hash_of_its_seqs_record_and_the_tables_pit(tmp_path: Path) -> None:
    path = tmp_path / "t01.journal"
    states = _States()
    with Journal(path, synchronous="NORMAL", key=b"k" * 32) as journal:
        core = TableCore("t01", load_rules("house-h17"), journal, states, snapshot_every=0, pit="pit-3")
        enable_ratings(core)
        core.publish_all()  # a journal without records: no head yet
        _play(core, 150)
        core.apply_card("card_in", 2, "4000123412341234")  # the player card's path builds its state apart
        _play(core, 30)
        core.note({"type": "command_refused", "verb": "open", "reason": "test"})
        core.apply(ev.Tick(now=T0 + 10_000.0))  # an input with no record: the state of the same seq again
    stored = _stored_heads(path)
    first, *played = states.states
    assert (first["seq"], first["head"], first["pit"]) == (0, None, "pit-3")
    assert len(played) == 150 + 1 + 30 + 1 + 1
    for state in played:
        assert state["pit"] == "pit-3"
        assert state["head"] == stored[state["seq"]], f"state at seq {state['seq']}: head is not its record's hash"
    assert played[-1]["seq"] == played[-2]["seq"] and played[-1]["head"] == played[-2]["head"]
    assert {s["seq"] for s in played} >= {max(stored)}


def test_a_recovered_table_states_the_head_it_stated_before(tmp_path: Path) -> None:
    path = tmp_path / "t01.journal"
    states = _States()
    with Journal(path, synchronous="NORMAL", key=b"k" * 32) as journal:
        core = TableCore("t01", load_rules("ny-4620"), journal, states, snapshot_every=50)
        _play(core, 120)
    with Journal(path, synchronous="NORMAL", key=b"k" * 32) as journal:
        again = TableCore("t01", load_rules("ny-4620"), journal, None, snapshot_every=50)
        again.recover()
        state = again.state()
    assert (state["seq"], state["head"], state["pit"]) == (states.states[-1]["seq"], states.states[-1]["head"], None)
    assert state["head"] == _stored_heads(path)[state["seq"]]


def test_the_head_of_a_state_made_before_its_commit_is_added_as_its_last_field() -> None:
    made = json.dumps({"seq": 3, "dealer": {"cards": ["AS", None]}}, separators=(",", ":")).encode()
    assert json.loads(with_head(made, bytes.fromhex("00ff"))) == {"seq": 3, "dealer": {"cards": ["AS", None]},
                                                                   "head": "00ff"}
    assert json.loads(with_head(made, None))["head"] is None


# -- the pit setting -------------------------------------------------------------------------------------------

MINIMAL = """
table_id = "t05"
[devices.shoe]
port = "/dev/ttyS1"
[devices.shuffler]
port = "/dev/ttyS2"
[devices.chips]
port = "/dev/ttyS3"
"""


@pytest.fixture
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for key in list(os.environ):
        if key.upper().startswith("TABLECTL_"):
            monkeypatch.delenv(key)


@pytest.mark.usefixtures("_no_env")
def test_a_table_config_names_its_pit_or_none(tmp_path: Path) -> None:
    (tmp_path / "a.toml").write_text('pit = "pit-3"\n' + MINIMAL)
    (tmp_path / "b.toml").write_text(MINIMAL)
    assert load_settings(tmp_path / "a.toml").pit == "pit-3"
    assert load_settings(tmp_path / "b.toml").pit is None


@pytest.mark.usefixtures("_no_env")
@pytest.mark.parametrize(("pit", "why"), [('""', "pit name is blank"), ('"Pit 3"', "pit name 'Pit 3' holds 'P'"),
                                          ('"pit/3"', "holds '/'"), ('"' + "p" * 65 + '"', "65 characters long"),
                                          ("3", "Input should be a valid string")])
def test_a_bad_pit_is_refused_in_one_line_naming_the_key(tmp_path: Path, pit: str, why: str) -> None:
    path = tmp_path / "t.toml"
    path.write_text(f"pit = {pit}\n" + MINIMAL)
    with pytest.raises(ConfigError) as info:
        load_settings(path)
    message = str(info.value)
    assert message.startswith(f"{path}: pit") and why in message and "\n" not in message, message


def test_the_demo_stands_its_tables_in_pits_of_eight() -> None:
    assert [demo_pit(f"t{i:02d}") for i in (1, 8, 9, 16, 17)] == ["pit-1", "pit-1", "pit-2", "pit-2", "pit-3"]
    assert demo_pit("t200") == "pit-25"


async def test_a_demos_states_and_analytics_name_the_pit_and_each_head_is_its_journals(
        mosquitto: Mosquitto, tmp_path: Path) -> None:
    """The whole table in a real demo process on a real Mosquitto: what a recorder would keep."""
    state_dir = tmp_path / "state"
    async with recording(mosquitto.host, mosquitto.port, "pitted/#") as rec:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "controller.cli", "demo", "--tables", "1", "--rounds", "6", "--seed", "5",
            "--speed", "max", "--broker", mosquitto.url, "--state-dir", str(state_dir), "--no-dashboard", "--quiet",
            "--prefix", "pitted", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        _, err = await asyncio.wait_for(proc.communicate(), 180)
        assert proc.returncode == 0, err.decode()[-2000:]
        await rec.wait_for(lambda r: any(m.payload == b"offline" for m in r.on("pitted/t01/status")), 10)
    stored = _stored_heads(state_dir / "t01.journal")
    states = [m.json() for m in rec.on("pitted/t01/state")]
    assert len(states) > 20
    for state in states:
        assert state["pit"] == "pit-1"
        assert state["head"] == stored.get(state["seq"]), f"state at seq {state['seq']}"
    assert states[-1]["seq"] == max(stored)
    analytics = [m.json() for m in rec.on("pitted/t01/analytics")]
    assert analytics and all(a["pit"] == "pit-1" for a in analytics)


# -- the hole card stays secret --------------------------------------------------------------------------------

RANKS, SUITS = "A23456789TJQK", "SHDC"


def _guess_hole_card(key: bytes, before: dict[str, Any], after: dict[str, Any], input_id: int,
                     records: list[tuple[int, str]], head: str) -> str | None:
    """The insider's move on a published ``head``: the hole card's input is a card read at a
    time the record shows (its text as the engine writes it: ``{"card":"3D","type":"card"}``), chained after the
    head of the state before it (docs/journal.md gives the chain); try
    every card, chain the public records after it, and compare with the head the state published."""
    for card in (r + s for r in RANKS for s in SUITS):
        text = json.dumps({"card": card, "type": "card"}, separators=(",", ":")).encode()
        h = hmac.new(key, bytes.fromhex(before["head"]) + struct.pack(">cqd", b"I", input_id, after["ts"]) + text,
                     hashlib.sha256).digest()
        for seq, body in records:
            h = hmac.new(key, h + struct.pack(">cqq", b"O", seq, input_id) + body.encode(), hashlib.sha256).digest()
        if h.hex() == head:
            return card
    return None


@pytest.mark.parametrize("keyed", [False, True])
def test_no_head_gives_the_hole_card_away(tmp_path: Path, keyed: bool) -> None:
    """A journal opened without a key (tests, benches) is chained under a public key: a head published from it
    would let anyone try the 52 cards against it. So such a journal's states name no head; a keyed journal's
    head cannot be tried without the key, which never leaves the table PC."""
    path = tmp_path / "t01.journal"
    states = _States()
    clock = [T0]
    with Journal(path, synchronous="NORMAL", key=b"k" * 32 if keyed else None) as journal:
        core = TableCore("t01", load_rules("house-shoe-surrender"), journal, states, snapshot_every=0,
                         clock=lambda: clock[0])
        dealer = SimulatedDealer(core.rules, seed=3, table_id="t01")
        hole: tuple[dict[str, Any], dict[str, Any]] | None = None
        while hole is None:
            clock[0] += 1.0
            event = ev.TableOpened(now=clock[0]) if journal.last_input_id == 0 else dealer.next_event(core.table)
            assert event is not None
            before = states.states[-1] if states.states else None
            core.apply(event)
            after = states.states[-1]
            if before is not None and None in after["dealer"]["cards"] and None not in before["dealer"]["cards"]:
                hole = before, after
        input_id = journal.last_input_id
        records = [(r.seq, r.body) for r in journal.records(hole[0]["seq"] + 1, hole[1]["seq"])]
        dealt = next(journal.inputs_since(input_id - 1)).event["card"]
        heads = {seq: journal.record_hash(seq) for seq in (hole[0]["seq"], hole[1]["seq"])}
    before, after = hole
    would = {seq: h.hex() for seq, h in heads.items() if h is not None}  # the heads the journal holds
    assert set(would) == {before["seq"], after["seq"]}
    if not keyed:
        assert before["head"] is None and after["head"] is None, "an unkeyed journal's state names a head"
        # what a head would have given away: the hole card, from the chain's public key and the public records
        assert _guess_hole_card(UNKEYED, before | {"head": would[before["seq"]]}, after, input_id, records,
                                would[after["seq"]]) == dealt
    else:
        assert (before["head"], after["head"]) == (would[before["seq"]], would[after["seq"]])
        assert _guess_hole_card(UNKEYED, before, after, input_id, records, after["head"]) is None
