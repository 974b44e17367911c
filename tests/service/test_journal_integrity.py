"""The journal as critical memory (DESIGN, "Journal integrity and game recall"): the hash chain, the
anchor, ``tablectl journal verify|archive``, and the demo refusing a journal that was tampered with.

The demo cases run ``tablectl demo`` on a state directory, alter it behind the table's back, and run
it again: the table must stay offline (exit 2, one line naming the row or the anchor), where before
it replayed the altered journal, or started again from zero, and played on.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest

from controller.cli import main as tablectl

ROOT = Path(__file__).resolve().parents[2]
ROUNDS = 8


@pytest.fixture(autouse=True)
def _anchors_in_tmp(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Anchors go to the user's state folder: here, one of the test's own."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("xdg")))


def _demo(state: Path, rounds: int = ROUNDS, capsys: pytest.CaptureFixture[str] | None = None) -> tuple[int, str]:
    code = tablectl(["demo", "--tables", "1", "--rounds", str(rounds), "--seed", "3", "--speed", "max",
                     "--state-dir", str(state), "--no-dashboard", "--quiet"])
    err = capsys.readouterr().err if capsys is not None else ""
    return code, err


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A demo's state directory after ROUNDS rounds (copied by each test)."""
    mp = pytest.MonkeyPatch()
    mp.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("xdg-module")))
    state = tmp_path_factory.mktemp("played") / "state"
    try:
        assert _demo(state)[0] == 0
        shutil.copytree(Path(os.environ["XDG_STATE_HOME"]) / "tablectl" / "anchors", state.parent / "anchors")
        yield state
    finally:
        mp.undo()


def _copy_played(played: Path, to: Path) -> Path:
    """The played state dir copied to ``to``, its anchors put where this test's demo keeps them (a resumed
    state dir must be vouched for: without its anchor nothing vouches, and the demo refuses it)."""
    shutil.copytree(played, to)
    shutil.copytree(played.parent / "anchors", Path(os.environ["XDG_STATE_HOME"]) / "tablectl" / "anchors",
                    dirs_exist_ok=True)
    return to


@pytest.fixture
def state(played: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A copy of the played state dir, anchored where it is now (a demo ran on it: nothing left to play)."""
    copy = _copy_played(played, tmp_path / "state")
    assert _demo(copy, capsys=capsys)[0] == 0
    return copy


def _db(path: Path) -> closing[sqlite3.Connection]:
    return closing(sqlite3.connect(path, isolation_level=None))


def _refused(state: Path, capsys: pytest.CaptureFixture[str], *expected: str, rounds: int = ROUNDS) -> str:
    code, err = _demo(state, rounds, capsys)
    line = err.strip()
    assert code == 2, f"the table went online on a tampered journal (exit {code}): {err}"
    assert len(line.splitlines()) == 1 and "Traceback" not in line, err
    for part in expected:
        assert part in line, line
    return line


def _tables(db: sqlite3.Connection, *names: str) -> list[str]:
    return [str(r[0]) for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'") if r[0] in names]


def _first(db: sqlite3.Connection, kind: str) -> int:
    return int(db.execute("SELECT MIN(id) FROM inputs WHERE event LIKE ?", (f'%"type":"{kind}"%',)).fetchone()[0])


# -- tampering caught at the table's start ------------------------------------------------------------


def test_an_edited_wager_is_refused_naming_its_row(state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with _db(state / "t01.journal") as db:
        bet = _first(db, "bet")
        event = json.loads(db.execute("SELECT event FROM inputs WHERE id = ?", (bet,)).fetchone()[0])
        event["amount"] = event["amount"] * 10  # replays as another round: before, it was simply replayed
        db.execute("UPDATE inputs SET event = ? WHERE id = ?", (json.dumps(event, separators=(",", ":")), bet))
    _refused(state, capsys, f"inputs row {bet} (input)", "does not match its content")


def test_a_deleted_row_is_refused_naming_it(state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with _db(state / "t01.journal") as db:
        db.execute("DELETE FROM inputs WHERE id = 40")
    _refused(state, capsys, "inputs row 40 (input)", "missing")


def test_a_deleted_record_is_refused_naming_it(state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with _db(state / "t01.journal") as db:
        db.execute("DELETE FROM outbox WHERE seq = 25")
    _refused(state, capsys, "outbox row 25 (record)", "missing")


def test_an_inserted_row_is_refused_naming_it(state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with _db(state / "t01.journal") as db:
        db.execute("UPDATE inputs SET id = id + 1000000 WHERE id > 30")
        db.execute("UPDATE inputs SET id = id - 999999 WHERE id > 1000000")
        ts, hash_ = db.execute("SELECT ts, hash FROM inputs WHERE id = 30").fetchone()
        db.execute("INSERT INTO inputs (id, ts, event, hash) VALUES (31, ?, ?, ?)",
                   (ts, '{"spot":1,"amount":50000,"player":null,"type":"bet"}', hash_))
    _refused(state, capsys, "inputs row 31 (input)")


def test_reordered_rows_are_refused_naming_the_first(state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with _db(state / "t01.journal") as db:
        a = db.execute("SELECT ts, event, hash FROM inputs WHERE id = 50").fetchone()
        b = db.execute("SELECT ts, event, hash FROM inputs WHERE id = 51").fetchone()
        db.execute("UPDATE inputs SET ts = ?, event = ?, hash = ? WHERE id = 50", b)
        db.execute("UPDATE inputs SET ts = ?, event = ?, hash = ? WHERE id = 51", a)
    _refused(state, capsys, "inputs row 50 (input)")


def test_an_emptied_journal_is_refused_against_its_anchor(state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with _db(state / "t01.journal") as db:
        for table in _tables(db, "inputs", "outbox", "snapshots", "seals"):
            db.execute(f"DELETE FROM {table}")
    _refused(state, capsys, "behind its anchor", "ends at seq 0")


def test_a_truncated_journal_is_refused_against_its_anchor(state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with _db(state / "t01.journal") as db:
        (last,) = db.execute("SELECT MAX(id) FROM inputs").fetchone()
        db.execute("DELETE FROM outbox WHERE input_id > ?", (last - 5,))
        db.execute("DELETE FROM inputs WHERE id > ?", (last - 5,))
        for table in _tables(db, "seals"):
            db.execute(f"DELETE FROM {table}")  # a consistent prefix: only the anchor knows there was more
    _refused(state, capsys, "behind its anchor")


def test_a_deleted_journal_is_refused_not_started_from_zero(state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (state / "t01.journal").unlink()
    _refused(state, capsys, "t01.journal: missing, but its anchor")


def test_a_state_dir_put_back_from_an_older_copy_is_refused(played: Path, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    live = _copy_played(played, tmp_path / "state")
    assert _demo(live, capsys=capsys)[0] == 0
    backup = tmp_path / "backup"
    shutil.copytree(live, backup)
    assert _demo(live, ROUNDS + 3, capsys)[0] == 0  # the table played on after the backup
    shutil.rmtree(live)
    shutil.copytree(backup, live)  # the whole state directory, key and all, put back
    line = _refused(live, capsys, "behind its anchor", rounds=ROUNDS + 3)
    assert "t01.journal" in line


def test_an_untouched_journal_resumes_and_a_fresh_state_dir_starts_on_purpose(
        state: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _demo(state, ROUNDS + 1, capsys)[0] == 0
    key = state / "journal.key"
    assert key.stat().st_mode & 0o777 == 0o600
    other = tmp_path / "other"
    assert _demo(other, 1, capsys)[0] == 0 and (other / "journal.key").exists()


def test_a_key_readable_by_others_is_refused(state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    os.chmod(state / "journal.key", 0o644)
    _refused(state, capsys, "journal.key: readable by others", "chmod 600")


def test_a_wrong_key_is_refused(state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    key = state / "journal.key"
    key.write_text(os.urandom(32).hex() + "\n")
    _refused(state, capsys, "wrong key: the journal is chained under key id")


# -- the chain itself ----------------------------------------------------------------------------------


def test_row_hashes_are_hmac_sha256_of_the_previous_hash_and_the_row(tmp_path: Path) -> None:
    from controller.journal import Journal

    key = os.urandom(32)
    with Journal(tmp_path / "t.journal", key=key) as j:
        j.commit_event({"type": "bet", "spot": 1, "amount": 500}, [{"type": "bet"}], ts=1.25)
        base = j.base.hash
    with _db(tmp_path / "t.journal") as db:
        ts, event, h1 = db.execute("SELECT ts, event, hash FROM inputs WHERE id = 1").fetchone()
        body, h2 = db.execute("SELECT body, hash FROM outbox WHERE seq = 1").fetchone()
    import struct
    assert h1 == hmac.new(key, base + b"I" + struct.pack(">qd", 1, ts) + event.encode(), hashlib.sha256).digest()
    assert h2 == hmac.new(key, h1 + b"O" + struct.pack(">qq", 1, 1) + body.encode(), hashlib.sha256).digest()


def test_sealed_segments_and_the_tail_are_verified_and_a_bad_row_named_in_either(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from controller.journal import Journal, JournalIntegrityError
    from controller.journal import writer as jmod

    monkeypatch.setattr(jmod, "SEAL_EVERY", 50)
    path, key = tmp_path / "t.journal", os.urandom(32)
    with Journal(path, key=key) as j:
        j.verify()  # a writer seals once it has checked the journal
        for i in range(1, 241):
            j.commit_event({"type": "card", "n": i}, [{"type": "card", "n": i}] * (i % 3))
        assert j.snapshot_ids() == []
    with _db(path) as db:
        assert db.execute("SELECT count(*) FROM seals").fetchone()[0] == 4
    with Journal.open_readonly(path, key=key) as j:
        result = j.verify(snapshots=True)
        assert (result.inputs, result.last_seq) == (240, 240)
        assert 40 <= result.tail_rows < 100 and result.sealed_rows == 480 - result.tail_rows  # 4 seals of 50 inputs
    for table, row, column in (("inputs", 75, "event"), ("outbox", 170, "body"), ("inputs", 230, "event")):
        shutil.copy(path, tmp_path / "x.journal")
        with _db(tmp_path / "x.journal") as db:
            key_col = "id" if table == "inputs" else "seq"
            db.execute(f"UPDATE {table} SET {column} = replace({column}, 'card', 'carb') WHERE {key_col} = ?", (row,))
        with pytest.raises(JournalIntegrityError, match=rf"{table} row {row} "), \
                Journal.open_readonly(tmp_path / "x.journal", key=key) as j:
            j.verify()
    shutil.copy(path, tmp_path / "x.journal")
    with _db(tmp_path / "x.journal") as db:
        db.execute("UPDATE seals SET last_input = last_input + 1 WHERE n = 2")
    with pytest.raises(JournalIntegrityError, match=r"seals row 2 \(seal\)"), \
            Journal.open_readonly(tmp_path / "x.journal", key=key) as j:
        j.verify()


def test_a_second_writer_is_refused_while_a_reader_reads_a_journal_in_use(tmp_path: Path) -> None:
    from controller.journal import Journal, JournalError

    path, key = tmp_path / "t.journal", os.urandom(32)
    with Journal(path, key=key) as writer:
        writer.commit_event({"type": "card"}, [{"type": "card"}])
        with pytest.raises(JournalError, match="in use by another program"):
            Journal(path, key=key)
        with Journal.open_readonly(path, key=key) as reader:
            assert reader.verify().last_seq == 1
            writer.commit_event({"type": "card"}, [{"type": "card"}])  # the reader does not hold it up
            assert reader.verify().last_seq == 2
            with pytest.raises(JournalError, match="read-only"):
                reader.append_input({"type": "x"})


# -- tablectl journal verify / archive, tablectl run ------------------------------------------------


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "controller.cli", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=120, env={**os.environ})


def test_journal_verify_one_line_ok_and_exit_2_naming_the_row(state: Path) -> None:
    path = state / "t01.journal"
    done = _cli("journal", "verify", str(path))
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.strip().splitlines()) == 1 and f"{ROUNDS} rounds" in done.stdout, done.stdout
    data = json.loads(_cli("journal", "verify", str(path), "--json").stdout)
    assert data["ok"] and data["rounds"] == ROUNDS and len(data["head"]) == 64
    with _db(path) as db:  # the first dealt card's record (a rated demo's cards in come before it)
        (seq,) = db.execute("SELECT MIN(seq) FROM outbox WHERE body LIKE '%\"card\"%'").fetchone()
        db.execute("UPDATE outbox SET body = replace(body, '\"card\"', '\"cart\"') WHERE seq = ?", (seq,))
    done = _cli("journal", "verify", str(path), "--key", str(state / "journal.key"))
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert f"outbox row {seq} (record)" in done.stderr and "Traceback" not in done.stderr
    path.write_bytes(b"not a database at all" * 500)
    done = _cli("journal", "verify", str(path))
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_journal_archive_keeps_the_chain_verifiable_across_the_archive(state: Path, tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    from controller.service import core as service

    path = state / "t01.journal"
    with _db(path) as db:
        assert db.execute("SELECT count(*) FROM snapshots").fetchone()[0] == 0  # 500 inputs between snapshots
    # a few more rounds with a snapshot every 50 inputs, so there is one to continue from
    old = service.TableCore.__init__.__kwdefaults__["snapshot_every"]  # type: ignore[index]
    service.TableCore.__init__.__kwdefaults__["snapshot_every"] = 50  # type: ignore[index]
    try:
        assert _demo(state, ROUNDS + 4, capsys)[0] == 0
    finally:
        service.TableCore.__init__.__kwdefaults__["snapshot_every"] = old  # type: ignore[index]
    before = json.loads(_cli("journal", "verify", str(path), "--json").stdout)
    done = _cli("journal", "archive", str(path), "--to", str(tmp_path / "archives"))
    assert done.returncode == 0, done.stderr
    (archive,) = (tmp_path / "archives").iterdir()
    assert archive.stat().st_mode & 0o777 == 0o600
    after = json.loads(_cli("journal", "verify", str(path), "--json", "--after", str(archive)).stdout)
    assert after["ok"] and after["continues"] == archive.name and after["after"] == str(archive)
    assert (after["last_seq"], after["head"], after["rounds"]) == (before["last_seq"], before["head"], ROUNDS + 4)
    assert after["inputs"] < before["inputs"]
    assert json.loads(_cli("journal", "verify", str(archive), "--json", "--key",
                           str(state / "journal.key")).stdout)["last_seq"] == before["last_seq"]
    assert _demo(state, ROUNDS + 6, capsys)[0] == 0  # the table resumes from the continuation, seq going on
    assert json.loads(_cli("journal", "verify", str(path), "--json").stdout)["rounds"] == ROUNDS + 6


def _journal_v1(path: Path) -> None:
    """A journal as the version before the chain wrote it: the same tables without hashes, format 1."""
    with _db(path) as db:
        db.executescript("""
            CREATE TABLE IF NOT EXISTS inputs (
                id    INTEGER PRIMARY KEY,
                ts    REAL    NOT NULL,
                event TEXT    NOT NULL
            );
            CREATE TABLE IF NOT EXISTS outbox (
                seq       INTEGER PRIMARY KEY,
                input_id  INTEGER,
                body      TEXT    NOT NULL,
                delivered INTEGER NOT NULL DEFAULT 0
            );
            CREATE TABLE IF NOT EXISTS snapshots (
                input_id INTEGER PRIMARY KEY,
                seq      INTEGER NOT NULL,
                ts       REAL    NOT NULL,
                state    TEXT    NOT NULL
            );
            CREATE TABLE IF NOT EXISTS meta (
                key   TEXT PRIMARY KEY,
                value TEXT NOT NULL
            );
            INSERT INTO inputs VALUES (1, 1.5, '{"type":"a"}'), (2, 2.5, '{"type":"b"}');
            INSERT INTO outbox VALUES (1, 1, '{"seq":1}', 1), (2, 2, '{"seq":2}', 0), (3, 2, '{"seq":3}', 0);
            INSERT INTO snapshots VALUES (2, 3, 2.5, '{"at":2}');
            INSERT INTO meta VALUES ('delivered_upto', '1');
            PRAGMA user_version = 1;""")


def test_a_journal_from_before_the_chain_is_refused_at_open_never_signed_there(tmp_path: Path) -> None:
    from controller.journal import Journal, JournalError

    path, key = tmp_path / "t.journal", os.urandom(32)
    _journal_v1(path)
    before = path.read_bytes()
    for opener in (lambda: Journal(path, key=key), lambda: Journal.open_readonly(path, key=key)):
        with pytest.raises(JournalError, match=r"older format .*tablectl journal migrate .*--operator NAME"):
            opener()
    assert path.read_bytes() == before


def test_journal_migrate_chains_an_older_journal_once_on_a_named_person_s_word(tmp_path: Path) -> None:
    from controller.journal import Journal
    from controller.journal.store import take_writer_lock

    path, key_file = tmp_path / "t.journal", tmp_path / "journal.key"
    key_file.write_text(os.urandom(32).hex() + "\n")
    key_file.chmod(0o600)
    _journal_v1(path)

    def migrate(*extra: str) -> subprocess.CompletedProcess[str]:
        return _cli("journal", "migrate", str(path), "--key", str(key_file), *extra)

    for bad in (("--operator", "Alice", "--reason", "r"), ("--operator", "   ", "--reason", "r"),
                ("--operator", "аlice", "--reason", "r"),  # a Cyrillic a
                ("--operator", "alice", "--reason", "  "), ("--operator", "alice", "--reason", "a\nb")):
        done = migrate(*bad)
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, (bad, done.stderr)
        assert "Traceback" not in done.stderr
    before = path.read_bytes()
    fd = take_writer_lock(path)  # as a running table holds it
    try:
        done = migrate("--operator", "alice", "--reason", "upgrade to 2.0")
        assert done.returncode == 2 and "in use by another program" in done.stderr, done.stderr
    finally:
        os.close(fd)
    assert path.read_bytes() == before, "a refused migrate changed the file"
    done = migrate("--operator", "alice.smith", "--reason", "upgrade of table t01 to 2.0, ticket 4411")
    assert done.returncode == 0 and len(done.stdout.strip().splitlines()) == 1, done.stderr
    again = migrate("--operator", "alice", "--reason", "once more")
    assert again.returncode == 2 and "already holds the chain's fields" in again.stderr, again.stderr
    verified = _cli("journal", "verify", str(path), "--key", str(key_file))
    assert verified.returncode == 3, verified.stderr  # every row checks; no anchor vouches yet (a new journal id)
    assert "journal migrate at seq 4 by alice.smith: upgrade of table t01 to 2.0, ticket 4411" in verified.stdout
    data = json.loads(_cli("journal", "verify", str(path), "--key", str(key_file), "--json").stdout)
    assert data["migrated"]["operator"] == "alice.smith" and data["last_seq"] == 4 and data["snapshots"] == 1
    key = bytes.fromhex(key_file.read_text().strip())
    with Journal(path, key=key) as j:
        j.verify(snapshots=True)
        assert j.delivered_upto == 0, "the older mark had no MAC: everything is sent again, never a gap"
        assert j.snapshot_at(2).state == {"at": 2}
        j.commit_event({"type": "c"}, [{"type": "c"}])
    with Journal.open_readonly(path, key=key) as j:
        assert j.verify(snapshots=True).last_seq == 5
    recalled = _cli("recall", str(path), "--key", str(key_file), "--json")
    assert recalled.returncode == 0, recalled.stderr
