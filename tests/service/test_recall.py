"""Game recall (DESIGN, "Journal integrity and game recall"): ``controller.records``, ``tablectl recall``
and the retained ``<root>/history`` topic.

The journals are made by a real simulated table (:class:`controller.sim.demo.DemoTable`: simulators,
real drivers, the service, the crew) playing on a real Mosquitto at full speed; every recalled
round is checked against the engine's own ``round_settled`` record.
"""

from __future__ import annotations

import asyncio
import io
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from controller.cli import main as tablectl
from controller.game.money import parse_money
from controller.profiles import load_rules
from controller.records import RoundHistory, last_rounds, rounds
from controller.sim.demo import DemoOptions, DemoTable
from tests.mqtt.mqtt_helpers import Recorder, recording
from tests.mqtt_broker import Mosquitto

pytestmark = pytest.mark.timeout(240)

PROFILE = "house-shoe-surrender"  # insurance, late surrender, splits and doubles all come up


def _opts(*, rounds: int, seed: int, prefix: str) -> DemoOptions:
    return DemoOptions(rules=load_rules(PROFILE), rounds=rounds, seed=seed, speed="max", prefix=prefix,
                       quiet=True, dashboard=False, tick_every=5.0)


async def _play(state: Path, broker_url: str, *, rounds: int, seed: int, prefix: str) -> None:
    """One simulated table plays until ``rounds`` rounds are settled (counted across restarts), then closes."""
    state.mkdir(parents=True, exist_ok=True)
    table = DemoTable("t01", _opts(rounds=rounds, seed=seed, prefix=prefix), state, broker_url, io.StringIO())
    try:
        async with asyncio.timeout(180):
            await table.run()
    finally:
        await table.close()


def _outbox(journal: Path) -> list[dict[str, Any]]:
    conn = sqlite3.connect(f"file:{journal}?mode=ro", uri=True)
    try:
        return [json.loads(body) for (body,) in conn.execute("SELECT body FROM outbox ORDER BY seq")]
    finally:
        conn.close()


def _recall_json(journal: Path, capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    capsys.readouterr()
    assert tablectl(["recall", str(journal), "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def journal(tmp_path_factory: pytest.TempPathFactory, mosquitto_session: Mosquitto) -> Path:
    """A journal of 60 rounds played by a simulated table (not in use any more)."""
    state = tmp_path_factory.mktemp("recall") / "state"
    asyncio.run(_play(state, mosquitto_session.url, rounds=60, seed=11, prefix="recall-fixture"))
    return state / "t01.journal"


# ---- controller.records on a real table's journal ----------------------------------------------


def test_every_round_matches_the_engines_settlement(journal: Path) -> None:
    events = _outbox(journal)
    settled = {e["round"]: e for e in events if e["type"] == "round_settled"}
    found = list(rounds(events))
    assert [r["round"] for r in found] == sorted(settled) == list(range(1, 61))
    seen: set[str] = set()
    for r in found:
        s = settled[r["round"]]
        assert r["dealer"]["cards"] == s["dealer"]["cards"], r["round"]
        assert (r["dealer"]["total"], r["dealer"]["blackjack"]) == (s["dealer"]["total"], s["dealer"]["blackjack"])
        assert {n: spot["net"] for n, spot in r["spots"].items()} == s["nets"], r["round"]
        assert r["totals"] == s["totals"]
        for n, spot in r["spots"].items():
            paid = sum(parse_money(h["payout"]) for h in spot["hands"])
            paid += parse_money(spot["insurance"]["payout"]) if spot["insurance"] else 0
            assert paid == parse_money(spot["net"])
            assert all(h["outcome"] is not None and None not in h["cards"] for h in spot["hands"])
            seen.update(d["action"] for d in r["decisions"] if d["spot"] == int(n))
            seen.update(h["outcome"] for h in spot["hands"])
        # times and events: the round's own published bodies, in seq order
        evs = r["events"]
        assert [e["seq"] for e in evs] == sorted(e["seq"] for e in evs)
        assert r["seq"] == [evs[0]["seq"], evs[-1]["seq"]] and evs[-1] == s
        assert (r["started"], r["ended"]) == (evs[0]["ts"], evs[-1]["ts"])
        assert evs[0]["type"] in ("bet", "no_more_bets")
        # every card of the round in deal order, the hole card at its place once turned
        assert [c["seq"] for c in r["cards"]] == [e["seq"] for e in evs if e["type"] == "card"]
        dealer = [c["card"] for c in r["cards"] if c["to"] == "dealer"]
        assert dealer == s["dealer"]["cards"]
        assert all(d["by"] == "console" for d in r["decisions"])
    # the profile and seed were chosen so every kind of decision and outcome comes up
    assert {"stand", "double", "split", "surrender", "insurance"} <= seen, seen
    assert {"win", "lose", "push", "blackjack", "surrender"} <= seen, seen


def test_nothing_of_a_round_is_out_before_its_hole_card_is_turned(journal: Path) -> None:
    events = _outbox(journal)
    after = last_rounds(events, 10**6)
    checked = 0
    for i, e in enumerate(events):
        if e["type"] != "hole_card":
            continue
        current = next(x["round"] for x in reversed(events[:i]) if x["type"] == "no_more_bets")
        before = last_rounds(events[:i], 10)  # what the history could hold just before the turn
        assert all(r["round"] < current for r in before)
        history = RoundHistory()
        history.load(_Log(events[:i]))
        assert all(r["round"] < current for r in history.rounds())
        hole = next(c for c in after[current - 1]["cards"] if c["to"] == "dealer" and c["hole"])
        assert hole["card"] == e["card"] and hole["seq"] < e["seq"]
        checked += 1
    assert checked >= 30


class _Row:
    def __init__(self, seq: int, body: str) -> None:
        self.seq, self.body = seq, body


class _Log:
    """The outbox protocol over a list of bodies."""

    def __init__(self, events: list[dict[str, Any]]) -> None:
        self._rows = [_Row(e["seq"], json.dumps(e)) for e in events]

    @property
    def last_seq(self) -> int:
        return self._rows[-1].seq if self._rows else 0

    def records(self, from_seq: int = 1, to_seq: int | None = None) -> list[_Row]:
        last = self.last_seq if to_seq is None else to_seq
        return [r for r in self._rows if from_seq <= r.seq <= last]


def test_history_kept_incrementally_equals_one_pass_over_the_journal(journal: Path) -> None:
    events = _outbox(journal)
    history = RoundHistory(keep=10)
    history.load(_Log(events[:100]))  # seeded mid-round, as a table recovering
    upto = 100
    for i, e in enumerate(events[100:], start=100):
        if e["type"] == "round_settled":
            log = _Log(events[: i + 1])
            history.advance(log)
            assert history.upto == e["seq"]
            upto = i + 1
            assert history.rounds() == last_rounds(events[:upto], 10)
            assert json.loads(history.payload()) == history.rounds()
    assert history.rounds() == last_rounds(events, 10)
    # a load from scratch reads back only as far as the last 10 rounds need, with the same result
    fresh = RoundHistory(keep=10)
    fresh.load(_Log(events))
    assert fresh.rounds() == history.rounds()


def test_alarms_operators_and_wagers_taken_back() -> None:
    seq = iter(range(1, 1000))

    def ev(type_: str, **data: Any) -> dict[str, Any]:
        return {"seq": next(seq), "ts": 1000.0 + len(data), "type": type_, **data}

    events = [
        ev("bet", spot=2, amount="10", player=None),
        ev("table_closed", at="2026-11-22T08:00:00Z"),  # wagers given back: no round
        ev("table_opened", at="2026-11-22T08:01:00Z", deck_set="A"),
        ev("bet", spot=2, amount="10", player=None),
        ev("no_more_bets", round=4, wagers={"2": "10"}),
        ev("card", to="spot", spot=2, hand=0, card="8S"),
        ev("card", to="dealer", card="6H", hole=False),
        ev("card", to="spot", spot=2, hand=0, card="8D"),
        ev("card", to="dealer", card=None, hole=True),
        ev("alarm", id=7, code="procedure", message="card drawn for spot 4", halts=True),
        ev("alarm_cleared", id=7, code="procedure", by="acknowledge", operator="sup-17"),
        ev("decision", spot=2, hand=0, action="split", wager="10"),
        ev("card", to="spot", spot=2, hand=0, card="3C"),
        ev("decision", spot=2, hand=0, action="double", amount="10", operator="pit-4"),
        ev("card", to="spot", spot=2, hand=0, card="TC"),
        ev("card", to="spot", spot=2, hand=1, card="KS"),
        ev("decision", spot=2, hand=1, action="stand"),
        ev("hole_card", card="TH", total=16, soft=False),
        ev("card", to="dealer", card="6C", hole=False, total=22),
        ev("payout", spot=2, hand=1, outcome="win", wager="10", payout="10"),
        ev("payout", spot=2, hand=0, outcome="win", wager="20", payout="20"),
        ev("round_settled", round=4, dealer={"cards": ["6H", "TH", "6C"], "total": 22, "blackjack": False},
           nets={"2": "30"}, totals={"rounds": 1, "handle": "40.00", "house_net": "-30.00"}),
        ev("bet", spot=1, amount="5", player=None),  # the next round, not settled: not listed
    ]
    (r,) = list(rounds(events))
    assert r["round"] == 4 and r["seq"] == [4, 22]
    assert r["spots"]["2"]["hands"] == [
        {"cards": ["8S", "3C", "TC"], "total": 21, "soft": False, "wager": "20", "status": None,
         "outcome": "win", "payout": "20"},
        {"cards": ["8D", "KS"], "total": 18, "soft": False, "wager": "10", "status": None,
         "outcome": "win", "payout": "10"},
    ]
    assert r["spots"]["2"]["net"] == "30"
    assert [(d["action"], d["by"]) for d in r["decisions"]] == [("split", "console"), ("double", "pit-4"),
                                                                 ("stand", "console")]
    assert r["alarms"] == [{"seq": 10, "ts": 1000.0 + 4, "id": 7, "code": "procedure",
                            "message": "card drawn for spot 4", "halts": True,
                            "cleared": {"seq": 11, "ts": 1004.0, "by": "acknowledge", "operator": "sup-17"}}]
    assert r["dealer"]["cards"] == ["6H", "TH", "6C"]
    assert [c["card"] for c in r["cards"]] == ["8S", "6H", "8D", "TH", "3C", "TC", "KS", "6C"]
    # before the turn, the hole card is not known to anything that could be published
    assert list(rounds(events[:17])) == []


# ---- tablectl recall ----------------------------------------------------------------------------


def test_recall_json_last_and_round(journal: Path, capsys: pytest.CaptureFixture[str]) -> None:
    everything = list(rounds(_outbox(journal)))
    default = _recall_json(journal, capsys)
    assert default == everything[-10:]
    for item in default:
        assert {"round", "started", "ended", "dealer", "spots", "events"} <= set(item)
        assert {"cards", "total"} <= set(item["dealer"])
        assert all({"hands", "net"} <= set(s) for s in item["spots"].values())
    assert _recall_json(journal, capsys, "--last", "25") == everything[-25:]
    assert _recall_json(journal, capsys, "--last", "1000") == everything
    assert _recall_json(journal, capsys, "--round", "17") == [everything[16]]


def test_recall_text_and_printable_html(journal: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert tablectl(["recall", str(journal), "--last", "3"]) == 0
    text = capsys.readouterr().out
    assert [line.split()[1] for line in text.splitlines() if line.startswith("Round ")] == ["58", "59", "60"]
    assert "dealer" in text and "net" in text
    out = tmp_path / "history.html"
    key = str(journal.parent / "journal.key")
    assert tablectl(["recall", str(journal), "--last", "4", "--html", str(out), "--key", key]) == 0
    page = out.read_text("utf-8")
    assert page.count("<table>") == 4 and "@media print" in page
    assert page.count('class="round"') == 4
    for external in ("http:", "https:", "<link", "<script", "src="):
        assert external not in page


def test_recall_with_the_key_refuses_an_altered_journal_naming_the_row(
        journal: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With ``--key`` the chain is verified first: a payout edited in a copy is refused, never recalled."""
    import shutil
    import sqlite3

    copy = tmp_path / "t01.journal"
    shutil.copy(journal, copy)
    with sqlite3.connect(copy) as conn:
        seq, body = conn.execute("SELECT seq, body FROM outbox WHERE body LIKE '%\"payout\"%' LIMIT 1").fetchone()
        conn.execute("UPDATE outbox SET body = ? WHERE seq = ?", (body.replace('"payout"', '"payout" ', 1), seq))
    key = str(journal.parent / "journal.key")
    capsys.readouterr()
    assert tablectl(["recall", str(copy), "--last", "3"]) == 0, "without the key: recalled as it is"
    capsys.readouterr()
    assert tablectl(["recall", str(copy), "--last", "3", "--key", key]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "does not match its content" in err, err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["{missing}"], "no such file"),
        (["{notjournal}"], "not a table journal"),
        (["{journal}", "--round", "999"], "round 999 is not in"),
        (["{journal}", "--last", "0"], "--last 0: must be 1 or more"),
        (["{journal}", "--key", "{missing}"], "not a readable file"),
        (["{journal}", "--html", "{missing}/x/y.html"], "cannot write"),
    ],
)
def test_recall_bad_input_is_one_line_and_exit_2(
    journal: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    notjournal = tmp_path / "notes.txt"
    notjournal.write_text("not a database\n" * 100)
    values = {"journal": str(journal), "missing": str(tmp_path / "missing"), "notjournal": str(notjournal)}
    capsys.readouterr()
    assert tablectl(["recall", *(a.format(**values) for a in args)]) == 2
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err.count("\n") == 1 and message in out.err and "Traceback" not in out.err, out.err


# ---- the retained history topic ----------------------------------------------------------------


def _history(rec: Recorder, prefix: str) -> list[list[dict[str, Any]]]:
    return [m.json() for m in rec.on(f"{prefix}/t01/history")]


async def test_history_is_retained_republished_at_each_settlement_and_at_restart(
    mosquitto: Mosquitto, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state, prefix = tmp_path / "state", "hist"
    journal = state / "t01.journal"
    async with recording(mosquitto.host, mosquitto.port, f"{prefix}/#") as live:
        await _play(state, mosquitto.url, rounds=4, seed=5, prefix=prefix)
        await live.wait_for(lambda r: any(len(h) == 4 for h in _history(r, prefix)))
    published = _history(live, prefix)
    assert published[0] == []  # at start, before any round
    assert [[r["round"] for r in h] for h in published[1:]] == [[1], [1, 2], [1, 2, 3], [1, 2, 3, 4]]
    # each history was sent after the events of the rounds it holds: never ahead of the events
    order = [m for m in live.messages if m.topic.endswith(("/events", "/history"))]
    last_seq = 0
    for m in order:
        if m.topic.endswith("/events"):
            last_seq = max(last_seq, m.json()["seq"])
        else:
            assert all(r["seq"][1] <= last_seq for r in m.json())

    # a fresh subscriber gets it retained: the last min(N, 10) rounds, equal to recall --json --last 10
    async with recording(mosquitto.host, mosquitto.port, f"{prefix}/t01/history") as fresh:
        await fresh.wait_for(lambda r: bool(r.messages))
    assert fresh.messages[0].retain
    assert fresh.messages[0].json() == _recall_json(journal, capsys, "--last", "10") == published[-1]

    # a restarted table republishes it from its journal at once, then keeps the last 10
    async with recording(mosquitto.host, mosquitto.port, f"{prefix}/t01/history") as again:
        await again.wait_for(lambda r: bool(r.messages))
        again.messages.clear()  # the retained copy; what follows is the restarted table's
        await _play(state, mosquitto.url, rounds=13, seed=5, prefix=prefix)
        await again.wait_for(lambda r: any(len(m.json()) == 10 and m.json()[-1]["round"] == 13 for m in r.messages))
    republished = [m.json() for m in again.messages]
    # from the journal, then round by round: the publisher sends only the newest history, so on a loaded
    # machine the first one on the wire may already hold new rounds (at speed max all 9 may be played
    # before the broker connection is up); whatever it holds of the first 4 rounds is what was published
    first = republished[0]
    start = first[0]["round"]
    assert [r["round"] for r in first] == list(range(start, start + len(first)))
    assert [r for r in first if r["round"] <= 4] == published[-1][start - 1:]
    assert [r["round"] for r in republished[-1]] == list(range(4, 14))
    async with recording(mosquitto.host, mosquitto.port, f"{prefix}/t01/history") as fresh:
        await fresh.wait_for(lambda r: bool(r.messages))
    assert fresh.messages[0].json() == _recall_json(journal, capsys, "--last", "10") == republished[-1]
