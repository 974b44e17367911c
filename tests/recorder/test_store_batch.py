"""The store's batches (controller/recorder/store.py: ``batch()``), each checked on SQLite and on PostgreSQL: a
batch reads each table's row once and writes its prefix once, sends the writes whose result it does not need
(PostgreSQL's pipeline mode), and still gives every call the outcome it gets alone, all or nothing."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from controller.recorder.store import BadRecord, RecorderStore, StoreError, open_store
from tests.recorder.test_store import body, raw_sql

OLD, NEW = "a" * 32, "b" * 32
HEAD2, HEAD4 = "2" * 64, "4" * 64

#: a call to the store: ("event", table, seq, body) or ("state", table, seq, journal_id, head)
Call = tuple[Any, ...]


@pytest.fixture
def store(store_url: str) -> Iterator[RecorderStore]:
    with open_store(store_url) as s:
        yield s


def started(seq: int, journal_id: str) -> str:
    return body(seq, "journal_started", journal_id=journal_id)


#: three batches of calls over five tables: new events in order, repeats and conflicts of stored and of held
#: events (held in this batch and in an earlier one), gaps filled in the batch that made them and in a later
#: one, heads within and beyond the prefix, a new journal on purpose, a body refused, a table new in a batch
SCRIPT: list[list[Call]] = [
    [
        ("event", "t1", 1, body(1)), ("event", "t1", 2, body(2)), ("event", "t2", 1, body(1)),
        ("event", "t2", 4, body(4)), ("event", "t1", 3, body(3)), ("event", "t2", 5, body(5)),
        ("event", "t1", 2, body(2)),  # a repeat of what this batch stored
        ("event", "t1", 2, body(2, amount="500")),  # a conflict
        ("event", "t2", 4, body(4)),  # a repeat of what this batch held
        ("event", "t2", 5, body(5, amount="500")),  # a conflict with it
        ("event", "t3", 3, body(3)), ("state", "t3", 2, OLD, HEAD2), ("event", "t3", 1, body(1)),
        ("event", "t4", 1, started(1, OLD)), ("event", "t4", 2, body(2)), ("state", "t4", 2, OLD, HEAD2),
        ("event", "t5", 1, "not json"),  # refused: no row for t5
    ],
    [
        ("event", "t2", 4, body(4)),  # a repeat of what an earlier batch held
        ("event", "t2", 5, body(5, amount="9")),  # a conflict with it
        ("event", "t2", 2, body(2)), ("event", "t2", 7, body(7)),
        ("event", "t2", 3, body(3)),  # fills the gap: 4 and 5 move in, 7 stays held
        ("event", "t3", 2, body(2)),  # fills t3's gap; its head at 2 comes within the prefix
        ("event", "t1", 4, body(4)), ("state", "t1", 4, OLD, HEAD4),
        ("event", "t1", 1, body(1).replace(",", ", ", 1)),  # one byte differs: a conflict
        ("event", "t4", 3, body(3)),
        ("event", "t4", 1, started(1, NEW)),  # a new journal on purpose: t4's record of OLD kept
        ("event", "t4", 2, body(2, "rules_changed")), ("state", "t4", 2, NEW, HEAD4),
        ("event", "t6", 1, body(1)),  # a table new in this batch
    ],
    [
        ("event", "t2", 6, body(6)),  # moves 7 in
        ("event", "t2", 6, body(6)), ("event", "t2", 7, body(7)), ("event", "t2", 9, body(9)),
        ("event", "t4", 1, started(1, NEW)),  # a repeat of the new record's first event
        ("state", "t1", 4, OLD, HEAD2),  # a second head at a seq noted: a conflict
    ],
]


def _call(store: RecorderStore, prefix: str, call: Call) -> str:
    kind, table, seq, *rest = call
    try:
        if kind == "event":
            return store.add_event(prefix + table, seq, rest[0])
        return store.note_state(prefix + table, seq, rest[0], rest[1], "pit-1")
    except BadRecord:
        return "refused"


def _tables(calls: list[Call], prefix: str) -> set[str]:
    return {prefix + c[1] for c in calls}


def dump(store: RecorderStore, prefix: str) -> dict[str, Any]:
    """What the store holds of the tables named ``prefix`` + name, by name (kept records included)."""
    out: dict[str, Any] = {}
    for t in ("t1", "t2", "t3", "t4", "t5", "t6"):
        for name in [prefix + t] + [r.table_id for r in store.records(prefix + t)]:
            record, position = store.table(name), store.position(name)
            out[name.removeprefix(prefix)] = None if record is None or position is None else {
                "record": (record.pit, record.journal_id, record.last_seq, record.head_seq, record.head,
                           record.state_seq),
                "position": position.as_dict() | {"table_id": None},
                "events": [(e.seq, e.type, e.body) for e in store.events(name)],
                "gaps": store.gaps(name),
                "heads": store.heads(name),
            }
    return out


def test_a_batch_gives_each_call_the_outcome_it_gets_alone_and_stores_the_same(store: RecorderStore) -> None:
    """The script's calls one a transaction (tables ``a-``) and in three batches (tables ``b-``: the first
    with its tables locked at once, the others each at its first call): the same outcomes, the same record."""
    alone = [[_call(store, "a-", c) for c in calls] for calls in SCRIPT]
    batched: list[list[str]] = []
    for n, calls in enumerate(SCRIPT):
        with store.batch(_tables(calls, "b-") if n == 0 else ()):
            batched.append([_call(store, "b-", c) for c in calls])
    assert batched == alone
    assert alone == [
        ["stored", "stored", "stored", "held", "stored", "held", "repeat", "conflict", "repeat", "conflict",
         "held", "stored", "stored", "stored", "stored", "stored", "refused"],
        ["repeat", "conflict", "stored", "held", "stored", "stored", "stored", "stored", "conflict", "stored",
         "new_journal", "stored", "stored", "stored"],
        ["stored", "repeat", "repeat", "held", "repeat", "conflict"],
    ]
    got = dump(store, "b-")
    assert got == dump(store, "a-")
    assert got["t5"] is None, "a refused body makes no table"
    assert [e[0] for e in got["t2"]["events"]] == [1, 2, 3, 4, 5, 6, 7] and got["t2"]["gaps"] == [(8, 8)]
    assert got["t2"]["events"][4][2] == body(5), "the first body is kept"
    assert got["t3"]["record"][2:5] == (3, 2, HEAD2)
    assert got["t1"]["record"][2:5] == (4, 4, HEAD4)
    assert got["t4"]["record"][1:5] == (NEW, 2, 2, HEAD4)
    assert got[f"t4@{OLD}"]["record"][1:5] == (OLD, 3, 2, HEAD2)


def test_reads_within_a_batch_see_what_it_wrote(store: RecorderStore) -> None:
    """A table's prefix is written once, at the end of the batch, or before a read within it (the recorder
    reads the gaps of the tables it wrote before it commits)."""
    with store.batch({"t01", "t02"}):
        assert [store.add_event("t01", s, body(s)) for s in (1, 2, 4)] == ["stored", "stored", "held"]
        store.note_state("t01", 2, OLD, HEAD2, "pit-1")
        p = store.position("t01")
        assert p is not None and (p.seq, p.head_seq, p.head) == (2, 2, HEAD2)
        assert store.gaps("t01") == [(3, 3)]
        assert store.add_event("t01", 3, body(3)) == "stored"
        assert store.add_event("t02", 1, body(1)) == "stored"
        assert [(t.table_id, t.last_seq) for t in store.tables()] == [("t01", 4), ("t02", 1)]
        assert store.gaps("t01") == [] and [e.seq for e in store.events("t01")] == [1, 2, 3, 4]
    with store.batch():
        assert store.add_event("t01", 5, body(5)) == "stored"
    assert store.position("t01").seq == 5  # type: ignore[union-attr]


def test_a_write_sent_without_waiting_that_fails_fails_its_whole_batch(store_url: str) -> None:
    """An event at last_seq + 1 is inserted without a read first: a row put at that seq behind the store's back
    is refused by the primary key when the statement runs (later than the call, at the latest at the commit),
    and the whole batch is rolled back: nothing acknowledged, nothing half done."""
    with open_store(store_url) as store:
        store.add_event("t01", 1, body(1))
        store.add_event("t01", 2, body(2))
        raw_sql(store_url, "INSERT INTO events (table_id, seq, ts, type, body, received_at) VALUES (?, ?, ?, ?, ?, ?)",
                ("t01", 3, 0.0, "bet", "forged", 0.0))
        with pytest.raises(StoreError), store.batch({"t01", "t02"}):
            assert store.add_event("t02", 1, body(1)) == "stored"
            store.add_event("t01", 3, body(3))
            store.add_event("t02", 2, body(2))
            store.add_event("t01", 5, body(5))
        assert store.position("t02") is None
        assert store.position("t01").seq == 2  # type: ignore[union-attr]
        assert store.gaps("t01") == []
        # the store carries on: the next batch is its own
        with store.batch():
            assert store.add_event("t02", 1, body(1)) == "stored"
        assert store.position("t02").seq == 1  # type: ignore[union-attr]


def test_two_writers_batching_the_same_tables_at_once_keep_each_seq_once(store_url: str) -> None:
    """Two recorders (a failover overlap) writing batches over the same tables at once, one in table and seq
    order and one the other way round: the rows a batch locks at once are locked in table order, so neither
    waits for the other in a circle (PostgreSQL would fail one with a deadlock); every seq is stored once."""
    tables = [f"t{n:02d}" for n in range(1, 6)]
    n = 40
    outcomes: dict[str, list[str]] = {}
    errors: list[BaseException] = []

    def write(name: str, calls: list[tuple[str, int]]) -> None:
        got: list[str] = []
        try:
            with open_store(store_url) as store:
                for i in range(0, len(calls), 12):
                    chunk = calls[i:i + 12]
                    with store.batch({t for t, _ in chunk}):
                        got += [store.add_event(t, s, body(s)) for t, s in chunk]
            outcomes[name] = got
        except BaseException as e:  # reported below: a thread's exception is not the test's
            errors.append(e)

    open_store(store_url).close()
    up = [(t, s) for s in range(1, n + 1) for t in tables]
    down = [(t, s) for s in range(n, 0, -1) for t in reversed(tables)]
    threads = [threading.Thread(target=write, args=("up", up)), threading.Thread(target=write, args=("down", down))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    every = outcomes["up"] + outcomes["down"]
    assert "conflict" not in every
    assert every.count("stored") + every.count("held") >= n * len(tables)
    with open_store(store_url) as store:
        for t in tables:
            assert [e.body for e in store.events(t)] == [body(s) for s in range(1, n + 1)]
            assert store.gaps(t) == [] and store.position(t).seq == n  # type: ignore[union-attr]


@pytest.mark.parametrize("locked", [True, False], ids=["tables-locked-at-once", "each-at-its-first-call"])
def test_a_long_batch_of_many_tables_in_runs_of_seqs(store: RecorderStore, locked: bool) -> None:
    """Runs of consecutive seqs of many tables in one batch (sent as one statement a run), with a gap each
    filled at the end: the same record as the calls one at a time."""
    calls: list[tuple[str, int]] = [(f"t{t:03d}", s) for t in range(1, 31) for s in [*range(1, 21), *range(22, 41)]]
    calls += [(f"t{t:03d}", 21) for t in range(1, 31)]
    with store.batch({t for t, _ in calls} if locked else ()):
        got = [store.add_event(t, s, body(s)) for t, s in calls]
    assert got.count("stored") == 30 * 21 and got.count("held") == 30 * 19
    for t in range(1, 31):
        assert [e.body for e in store.events(f"t{t:03d}")] == [body(s) for s in range(1, 41)]
        assert store.gaps(f"t{t:03d}") == []


def test_a_repeat_of_an_event_held_before_the_batch_is_compared_there(store: RecorderStore) -> None:
    """Held events a batch did not see being held are looked for in ``held`` (not assumed absent)."""
    store.add_event("t01", 1, body(1))
    store.add_event("t01", 5, body(5))
    with store.batch({"t01"}):
        assert store.add_event("t01", 5, body(5)) == "repeat"
        assert store.add_event("t01", 5, json.dumps({"seq": 5, "ts": 1.0, "type": "bet"})) == "conflict"
        assert store.add_event("t01", 3, body(3)) == "held"
        assert store.add_event("t01", 3, body(3)) == "repeat"
        assert store.add_event("t01", 2, body(2)) == "stored"
        assert store.add_event("t01", 4, body(4)) == "stored"
    assert [e.body for e in store.events("t01")] == [body(s) for s in range(1, 6)]
    assert store.gaps("t01") == []
