"""The recorder's retained position as a witness, each reading and each verdict in full (issue 39's kind of gap):
what :func:`parse_position` accepts at its edges (seq 0, a head at exactly the seq, hex of 2 and 128 digits) and
why it refuses the rest, and what :class:`RecorderWitness` says, word for word. Pure, against a real journal."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controller.journal import Journal
from controller.mqtt.recorder_witness import RecorderPosition, RecorderWitness, parse_position, recorder_topic

URL = "mqtt://rec:secret@pit:1883"
NAME = "the recorder's position of t01 (mqtt://rec:***@pit:1883)"


@pytest.fixture
def journal(tmp_path: Path) -> Iterator[Journal]:
    """A journal ending at seq 4."""
    with Journal(tmp_path / "t01.journal") as j:
        for n in range(2):
            j.commit_event({"type": "bet", "spot": 1, "amount": 500 + n}, [{"type": "bet"}, {"type": "x", "n": n}])
        assert j.last_seq == 4
        yield j


def _raw(**fields: Any) -> bytes:
    return json.dumps({"table_id": "t01", "seq": 3, **fields}).encode()


def test_a_position_is_read_at_its_edges() -> None:
    assert parse_position(_raw(seq=0), "t01") == RecorderPosition("t01", 0, None, None, None)
    assert parse_position(_raw(journal_id="j1"), "t01") == RecorderPosition("t01", 3, "j1", None, None)
    assert parse_position(bytearray(_raw(head_seq=3, head="ab")), "t01") == RecorderPosition("t01", 3, None, 3, "ab")
    assert parse_position(_raw(head_seq=0, head="f" * 128), "t01") == RecorderPosition("t01", 3, None, 0, "f" * 128)


@pytest.mark.parametrize(("payload", "why"), [
    ("{}", "not bytes"),
    (b"not json", "not JSON"),
    (b"\xff\xfe", "not JSON"),
    (b"[1]", "not a JSON object"),
    (_raw(table_id="t02"), "it names table 't02'"),
    (json.dumps({"seq": 3}).encode(), "it names table 'None'"),
    (_raw(table_id="x" * 60), f"it names table {'x' * 40!r}"),
    (_raw(seq=-1), "no integer seq (-1)"),
    (_raw(seq=True), "no integer seq (True)"),
    (_raw(seq="3"), "no integer seq ('3')"),
    (_raw(seq=None), "no integer seq (None)"),
    (_raw(journal_id=""), "journal_id is not a string ('')"),
    (_raw(journal_id=7), "journal_id is not a string (7)"),
    (_raw(head_seq=4, head="ab"), "head_seq 4 is not an integer at or before seq 3"),
    (_raw(head_seq=-1, head="ab"), "head_seq -1 is not an integer at or before seq 3"),
    (_raw(head_seq=None, head="ab"), "head_seq None is not an integer at or before seq 3"),
    (_raw(head_seq=True, head="ab"), "head_seq True is not an integer at or before seq 3"),
    (_raw(head_seq=2), "head None is not lower-case hex"),
    (_raw(head_seq=2, head="a"), "head 'a' is not lower-case hex"),
    (_raw(head_seq=2, head="AB"), "head 'AB' is not lower-case hex"),
    (_raw(head_seq=2, head="f" * 129), f"head {('f' * 129)!r:.40} is not lower-case hex"),
    (_raw(head_seq=2, head=12), "head 12 is not lower-case hex"),
])
def test_what_is_not_a_position_says_why(payload: bytes, why: str) -> None:
    assert parse_position(payload, "t01") == why


def _said(journal: Journal, position: RecorderPosition | str) -> tuple[str, int | None, str]:
    t = RecorderWitness("t01", URL, position).testify(journal)
    assert t.witness == NAME
    return t.verdict, t.seq, t.detail


def test_each_verdict_in_full(journal: Journal) -> None:
    jid, other = journal.journal_id, "f" * 32
    head = journal.record_hash(2)
    assert head is not None
    at = RecorderPosition("t01", 3, jid, 2, head.hex())
    assert _said(journal, at) == ("vouches", 3, "")
    assert _said(journal, RecorderPosition("t01", 4, jid, 2, head.hex())) == ("vouches", 4, "")
    assert _said(journal, RecorderPosition("t01", 5, jid, 2, head.hex())) == ("ahead", 5, f"journal {jid}")
    assert _said(journal, RecorderPosition("t01", 5, None, None, None)) == ("ahead", 5, "")
    assert _said(journal, RecorderPosition("t01", 3, jid, None, None)) == ("vouches", 3, "it holds no chain head yet")
    assert _said(journal, RecorderPosition("t01", 3, jid, 2, None)) == ("vouches", 3, "it holds no chain head yet")
    assert _said(journal, RecorderPosition("t01", 3, None, 2, head.hex())) == (
        "silent", 3, "its position (seq 3) names no journal")
    assert _said(journal, RecorderPosition("t01", 3, other, 2, head.hex())) == (
        "differs", 3, f"it holds journal {other} up to seq 3, but this is journal {jid} at seq 4 (another journal "
                      "in the table's place)")
    wrong = "0" * 64
    assert _said(journal, RecorderPosition("t01", 3, jid, 2, wrong)) == (
        "differs", 3, f"it holds head {'0' * 16}... at seq 2, but this journal's record at seq 2 has head "
                      f"{head.hex()[:16]}...: rewritten and chained again by someone holding the journal key, or "
                      "chained under another key")
    assert _said(journal, "not JSON") == ("silent", None, "not JSON")


def test_a_head_the_journal_no_longer_holds_is_not_compared(journal: Journal) -> None:
    jid = journal.journal_id
    assert journal.record_hash(9) is None
    assert _said(journal, RecorderPosition("t01", 4, jid, 9, "ab" * 32)) == (
        "silent", 4, "its head is at seq 9, a record this journal no longer holds (archived): not compared")


def test_the_recorders_topic() -> None:
    assert recorder_topic("casino/pit1", "t01") == "casino/pit1/recorder/t01"
    assert recorder_topic("tables", "+") == "tables/recorder/+"
