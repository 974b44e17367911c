"""The SQLite journal: durability across kill -9, file modes, gapless seq, replay order."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import stat
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest

from controller.journal import Journal, JournalError

ROOT = Path(__file__).resolve().parents[2]


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_journal_and_its_wal_files_are_private_0600(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        path = tmp_path / "state" / "t01.journal"
        with Journal(path) as j:
            j.commit_event({"type": "card", "card": "AS"}, [{"type": "card", "card": "AS"}])
            # the WAL index (-shm) is shared with readers now (the writer's lock is on the journal itself)
            for side in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
                assert side.exists(), side
                assert _mode(side) == 0o600, f"{side.name} is {oct(_mode(side))}"
    finally:
        os.umask(old)


def test_existing_world_readable_journal_is_made_private(tmp_path: Path) -> None:
    path = tmp_path / "t.journal"
    with Journal(path) as j:
        j.append_input({"type": "no_more_bets"})
    os.chmod(path, 0o644)
    with Journal(path):
        assert _mode(path) == 0o600


def test_seq_is_gapless_from_one_and_continues_after_reopen(tmp_path: Path) -> None:
    path = tmp_path / "t.journal"
    with Journal(path) as j:
        assert j.last_seq == 0
        assert j.commit_event({"type": "bet", "spot": 1, "amount": 500}, [{"type": "bet"}, {"type": "x"}]) == (
            1,
            [1, 2],
        )
        assert j.commit_event({"type": "no_more_bets"}, []) == (2, [])
        assert j.commit_event({"type": "card", "card": "TD"}, [{"type": "card", "seq": 99}]) == (3, [3])
    with Journal(path) as j:
        assert j.last_seq == 3
        assert j.last_input_id == 3
        assert j.add_records([{"type": "y"}]) == [4]
        bodies = [json.loads(r.body) for r in j.records()]
    assert [b["seq"] for b in bodies] == [1, 2, 3, 4]
    assert next(iter(json.loads(r.body) for r in Journal(path).records(3, 3))) == {"seq": 3, "type": "card"}


def test_stored_body_is_compact_json_with_seq_first(tmp_path: Path) -> None:
    with Journal(tmp_path / "t.journal") as j:
        j.add_records([{"ts": 1.5, "type": "card", "card": "AS", "hand": None}])
        (row,) = list(j.undelivered())
    assert row.body == '{"seq":1,"ts":1.5,"type":"card","card":"AS","hand":null}'


def test_failed_transaction_leaves_nothing_and_consumes_no_seq(tmp_path: Path) -> None:
    with Journal(tmp_path / "t.journal") as j:
        j.commit_event({"type": "a"}, [{"type": "a"}])
        with pytest.raises(RuntimeError), j.transaction():
            j.append_input({"type": "b"})
            j.add_records([{"type": "b"}])
            raise RuntimeError("engine refused")
        assert (j.last_input_id, j.last_seq) == (1, 1)
        assert j.commit_event({"type": "c"}, [{"type": "c"}]) == (2, [2])
        assert [r.event["type"] for r in j.inputs_since(0)] == ["a", "c"]


def test_replay_yields_inputs_in_order_from_a_snapshot(tmp_path: Path) -> None:
    path = tmp_path / "t.journal"
    with Journal(path) as j:
        for i in range(1, 1201):
            j.commit_event({"type": "tick", "n": i}, [], ts=1000.0 + i)
            if i == 700:
                j.save_snapshot({"engine": "state at 700"})
    with Journal(path) as j:
        snap = j.latest_snapshot()
        assert snap is not None
        assert (snap.input_id, snap.state) == (700, {"engine": "state at 700"})
        rows = list(j.inputs_since(snap.input_id))
    assert [r.id for r in rows] == list(range(701, 1201))
    assert [r.event["n"] for r in rows] == list(range(701, 1201))
    assert rows[0].ts == 1701.0


def test_snapshots_newest_first_pruned_to_the_last_two_and_a_damaged_one_named(tmp_path: Path) -> None:
    path = tmp_path / "t.journal"
    with Journal(path) as j:
        assert j.snapshot_ids() == [] and j.latest_snapshot() is None
        for i in range(1, 501):
            j.commit_event({"type": "tick", "n": i}, [{"type": "r"}])
            if i % 100 == 0:
                j.save_snapshot({"at": i}, ts=float(i))
        assert j.snapshot_ids() == [500, 400, 300, 200, 100]
        assert j.prune_snapshots(keep=2) == 3
        assert j.prune_snapshots(keep=0) == 1, "the newest snapshot always stays"
        j.save_snapshot({"at": 450}, input_id=450)
        assert j.snapshot_ids() == [500, 450]
        snap = j.snapshot_at(450)
        assert (snap.input_id, snap.seq, snap.state) == (450, 500, {"at": 450})
        with pytest.raises(JournalError, match="no snapshot at input 7"):
            j.snapshot_at(7)
    with closing(sqlite3.connect(path)) as db, db:  # closed: an open reader would hold the journal
        db.execute("UPDATE snapshots SET state = '{\"at\": 5' WHERE input_id = 500")
    with Journal(path) as j:
        with pytest.raises(JournalError, match="snapshot at input 500 is not JSON"):
            j.latest_snapshot()
        assert j.snapshot_at(450).state == {"at": 450}


def test_undelivered_in_seq_order_and_delivery_marks_survive_reopen(tmp_path: Path) -> None:
    path = tmp_path / "t.journal"
    with Journal(path) as j:
        j.add_records([{"type": "r", "i": i} for i in range(1000)])
        assert [r.seq for r in j.undelivered(limit=3)] == [1, 2, 3]
        j.mark_delivered(600)
        j.mark_delivered(10)  # going back is a no-op
        assert j.delivered_upto == 600
        assert [r.seq for r in j.undelivered()] == list(range(601, 1001))
        assert [r.seq for r in j.undelivered(after_seq=990)] == list(range(991, 1001))
    with Journal(path) as j:
        assert j.delivered_upto == 600
        assert next(iter(j.undelivered())).seq == 601
        j.mark_delivered(5000)  # clamped to what exists
        assert j.delivered_upto == 1000
        assert list(j.undelivered()) == []
        assert j.add_records([{"type": "after"}]) == [1001]
        j.verify()  # the delivered flag is bookkeeping outside the chain: marking changes no hash


def test_meta_values_persist(tmp_path: Path) -> None:
    path = tmp_path / "t.journal"
    with Journal(path) as j:
        j.append_input({"type": "a"})
        j.set_meta("rules_input", "1")
        j.set_meta("rules_input", "2")
        with pytest.raises(ValueError, match="META_KEYS"):  # a start would refuse it as inserted
            j.set_meta("table_opened_at", "2026-11-22T08:00:00Z")
    with Journal(path) as j:
        assert j.get_meta("rules_input") == "2"
        assert j.get_meta("missing", "d") == "d"
        assert "table_opened_at" not in j.meta()


def test_a_file_that_is_not_a_journal_is_refused_with_its_path(tmp_path: Path) -> None:
    path = tmp_path / "junk.journal"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(JournalError, match=r"junk\.journal"):
        Journal(path)


_WRITER = """
import sys
from controller.journal import Journal
j = Journal(sys.argv[1])
i = j.last_input_id
while True:
    i += 1
    iid, seqs = j.commit_event({"type": "card", "n": i}, [{"type": "card", "n": i}, {"type": "state", "n": i}])
    sys.stdout.write(f"{iid} {seqs[-1]}\\n")
    sys.stdout.flush()
"""


def test_a_journal_in_use_is_refused_to_a_second_program_and_freed_by_kill_9(tmp_path: Path) -> None:
    path = tmp_path / "t.journal"
    proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(path)], stdout=subprocess.PIPE, cwd=ROOT, text=True)
    assert proc.stdout is not None
    try:
        first = proc.stdout.readline()
        assert first, "the writer did not start"
        with pytest.raises(JournalError, match=r"t\.journal: in use by another program"):
            Journal(path)
        last = proc.stdout.readline()  # the first writer is undisturbed
        assert int(last.split()[0]) == int(first.split()[0]) + 1
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    with Journal(path) as j:  # the kernel dropped the dead writer's lock
        assert j.last_input_id >= int(last.split()[0])
        assert j.last_seq == 2 * j.last_input_id


@pytest.mark.parametrize("round_", [1, 2, 3])
def test_sigkill_mid_stream_loses_no_committed_input(tmp_path: Path, round_: int) -> None:
    path = tmp_path / "t.journal"
    confirmed: tuple[int, int] = (0, 0)
    for attempt in range(round_):
        proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(path)], stdout=subprocess.PIPE, cwd=ROOT, text=True)
        assert proc.stdout is not None
        deadline = time.monotonic() + 20
        want = 50 + 37 * attempt
        seen = 0
        while seen < want and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            iid, seq = map(int, line.split())
            confirmed = (iid, seq)
            seen += 1
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        assert seen == want, "writer did not produce enough commits"
        for line in proc.stdout:  # what it reported before the kill that we had not read yet
            if line.endswith("\n"):
                iid, seq = map(int, line.split())
                confirmed = (iid, seq)
        proc.stdout.close()
    with Journal(path) as j:
        # Everything confirmed is there; maybe one more commit that was not yet reported.
        assert j.last_input_id in (confirmed[0], confirmed[0] + 1)
        rows = list(j.inputs_since(0))
        assert [r.id for r in rows] == list(range(1, j.last_input_id + 1))
        assert [r.event["n"] for r in rows] == list(range(1, j.last_input_id + 1))
        # Input and its records are atomic: two records per input, gapless.
        assert j.last_seq == 2 * j.last_input_id
        assert [r.seq for r in j.records()] == list(range(1, j.last_seq + 1))
