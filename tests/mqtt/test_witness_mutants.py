"""The broker's retained ``state`` as a witness, each verdict at its edge (issue 39): a state that names no journal
is silent (it cannot vouch for this one), a state at exactly the journal's end vouches, one seq beyond is ahead,
and another journal id at the same seq differs. Pure: :class:`RetainedStateWitness` asked about a real journal."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import aiomqtt
import pytest

from controller.journal import Journal
from controller.mqtt.witness import Retained, RetainedState, RetainedStateWitness, broker_witnesses, retained_states
from tests.mqtt_broker import Mosquitto

URL = "mqtt://pit:secret@broker:1883"


@pytest.fixture
def journal(tmp_path: Path) -> Iterator[Journal]:
    """A journal ending at seq 3."""
    with Journal(tmp_path / "t01.journal") as j:
        for n in range(3):
            j.commit_event({"type": "bet", "spot": 1, "amount": 500 + n}, [{"type": "bet", "n": n}])
        assert j.last_seq == 3
        yield j


def _verdict(journal: Journal, retained: RetainedState | str) -> tuple[str, int | None, str]:
    t = RetainedStateWitness("t01", URL, retained).testify(journal)
    assert t.witness == "the broker's retained state of t01 (mqtt://pit:***@broker:1883)", "each verdict names it"
    return t.verdict, t.seq, t.detail


def test_a_state_that_names_no_journal_is_silent_not_a_voucher(journal: Journal) -> None:
    for seq in (1, 3):
        assert _verdict(journal, RetainedState(seq)) == ("silent", seq, f"its state (seq {seq}) names no journal")
    assert _verdict(journal, RetainedState(4))[0] == "ahead", "a later state is ahead, journal named or not"


def test_a_state_of_this_journal_vouches_up_to_exactly_its_end_and_is_ahead_one_beyond(journal: Journal) -> None:
    jid = journal.journal_id
    assert _verdict(journal, RetainedState(1, jid)) == ("vouches", 1, "")
    assert _verdict(journal, RetainedState(3, jid)) == ("vouches", 3, "")
    assert _verdict(journal, RetainedState(4, jid)) == ("ahead", 4, "")


def test_another_journal_at_the_same_seq_differs_naming_both(journal: Journal) -> None:
    other = "f" * 32
    verdict, seq, detail = _verdict(journal, RetainedState(3, other))
    assert (verdict, seq) == ("differs", 3)
    assert detail == (f"it is of journal {other} at seq 3, but this is journal {journal.journal_id} at seq 3 "
                      "(another journal in the table's place)")
    assert _verdict(journal, RetainedState(9, other))[0] == "differs", "another journal, even ahead, is not this one's"


def test_no_retained_state_is_silent_saying_why_and_the_name_hides_the_password(journal: Journal) -> None:
    t = RetainedStateWitness("t01", URL, "no retained state").testify(journal)
    assert (t.verdict, t.seq, t.detail) == ("silent", None, "no retained state")
    assert t.witness == "the broker's retained state of t01 (mqtt://pit:***@broker:1883)"


def test_a_brokers_answer_makes_both_witnesses_of_the_table(journal: Journal) -> None:
    state, position = RetainedState(2, journal.journal_id), "no recorder position"
    witnesses = broker_witnesses("t01", URL, Retained(state, position))
    said = [w.testify(journal) for w in witnesses]
    assert [(t.verdict, t.seq) for t in said] == [("vouches", 2), ("silent", None)]
    assert [t.witness for t in said] == ["the broker's retained state of t01 (mqtt://pit:***@broker:1883)",
                                         "the recorder's position of t01 (mqtt://pit:***@broker:1883)"]



def test_a_state_at_the_same_seq_naming_another_head_differs_naming_both_heads(journal: Journal) -> None:
    """The journal rolled back and played on (or rewritten and chained again): the broker's state at seq 2 names
    another chain hash for record 2 than this journal's."""
    record = journal.record_hash(2)
    assert record is not None
    ours, other = record.hex(), "ab" * 32
    assert _verdict(journal, RetainedState(2, journal.journal_id, ours)) == ("vouches", 2, "")
    assert _verdict(journal, RetainedState(2, journal.journal_id, other)) == (
        "differs", 2, f"its state at seq 2 names head {other[:16]}..., but this journal's record at seq 2 has head "
                      f"{ours[:16]}... (rolled back and played on, or rewritten and chained again)")


def test_a_broker_that_could_not_be_asked_is_said_so_to_the_late_witness(journal: Journal) -> None:
    """``answered`` False (unreachable at start): the table asks it again at its first connection."""
    state = RetainedState(2, journal.journal_id)
    for answered in (True, False):
        witness = broker_witnesses("t01", URL, Retained(state, "no recorder position", answered=answered))[0]
        assert isinstance(witness, RetainedStateWitness)
        assert (witness.answered, witness.broker_url, witness.retained) == (answered, URL, state)
    assert RetainedStateWitness("t01", URL, state).answered is True



#: retained ``state`` payloads and what the witness reads of each: a position, or why there is none
PAYLOADS: dict[str, tuple[bytes, RetainedState | str]] = {
    "t01": (b'{"seq": 42, "journal_id": "abc"}', RetainedState(42, "abc")),
    "t02": (b'{"seq": 0}', RetainedState(0, None)),
    "t03": (b'{"seq": 5, "journal_id": ""}', RetainedState(5, None)),
    "t04": (b'{"seq": 5, "journal_id": 7}', RetainedState(5, None)),
    "t05": (b'{"seq": -1, "journal_id": "abc"}', "no integer seq (-1)"),
    "t06": (b'{"seq": true}', "no integer seq (True)"),
    "t07": (b'{"seq": "12"}', "no integer seq ('12')"),
    "t08": (b'{"journal_id": "abc"}', "no integer seq (None)"),
    "t09": (b"[1, 2]", "not a JSON object"),
    "t10": (b"not json", "not JSON"),
    "t11": (b"\xff\xfe", "not JSON"),
    "t12": (b'{"seq": 3, "journal_id": "abc", "head": "' + b"0f" * 32 + b'"}', RetainedState(3, "abc", "0f" * 32)),
    "t13": (b'{"seq": 3, "journal_id": "abc", "head": "not a hash"}', RetainedState(3, "abc", None)),
    "t14": (b'{"seq": 3, "journal_id": "abc", "head": 7}', RetainedState(3, "abc", None)),
}


async def test_what_the_witness_reads_of_each_retained_state(mosquitto_session: Mosquitto) -> None:
    """On a real broker, in one connection: a state's seq (0 is one) and the journal it names (an empty or
    non-string id names none), the head it names when it is a chain hash; a state without a usable seq is no position,
    saying why."""
    prefix = "mutants-witness"
    async with aiomqtt.Client("127.0.0.1", mosquitto_session.port) as client:
        for table, (payload, _) in PAYLOADS.items():
            await client.publish(f"{prefix}/{table}/state", payload, qos=1, retain=True)
    found = await retained_states(mosquitto_session.url, prefix=prefix, table_ids=[*PAYLOADS, "t99"])
    url = mosquitto_session.url
    assert {t: found[t] for t in PAYLOADS} == {
        t: want if isinstance(want, RetainedState) else f"{url} holds a retained state without a usable seq ({want})"
        for t, (_, want) in PAYLOADS.items()}
    assert isinstance(found["t99"], str), "no retained state: no position"
