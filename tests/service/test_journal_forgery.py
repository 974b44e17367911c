"""Forgery without the key (issue 24): an insider with ``sqlite3`` and the journal file, but no key, must not
get an altered journal signed, started, verified or recalled.

Each case plays a real demo table into a state directory (its journal written by the real table code, sealed
every few inputs and snapshotted, so every table of the file holds rows), makes the insider's move on a copy,
and asserts the start (``tablectl demo`` on the same state directory), ``tablectl journal verify`` and
``tablectl recall --key`` all refuse it in one line naming what is wrong. Before this, setting SQLite's
``user_version`` back to the format before the chain made the next start re-sign every row as it was.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path

import pytest

from controller.cli import main as tablectl

ROOT = Path(__file__).resolve().parents[2]
ROUNDS = 8
SEAL = 64  # inputs per sealed segment here (4,096 in production): the journal holds seals and a tail
SNAP = 50  # inputs between snapshots here (500 in production)


@pytest.fixture(autouse=True)
def _anchors_in_tmp(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("xdg")))


def _demo(state: Path, rounds: int = ROUNDS, capsys: pytest.CaptureFixture[str] | None = None) -> tuple[int, str]:
    code = tablectl(["demo", "--tables", "1", "--rounds", str(rounds), "--seed", "5", "--speed", "max",
                     "--state-dir", str(state), "--no-dashboard", "--quiet"])
    err = capsys.readouterr().err if capsys is not None else ""
    return code, err


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A demo's state directory after ROUNDS rounds, sealed every SEAL inputs, a snapshot every SNAP."""
    from controller.service import core, journal

    mp = pytest.MonkeyPatch()
    mp.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("xdg-module")))
    mp.setattr(journal, "SEAL_EVERY", SEAL)
    mp.setitem(core.TableCore.__init__.__kwdefaults__, "snapshot_every", SNAP)  # type: ignore[arg-type]
    state = tmp_path_factory.mktemp("played") / "state"
    try:
        assert _demo(state)[0] == 0
        assert _demo(state)[0] == 0  # a second start seals the tail the first one left
        assert _demo(state, ROUNDS + 1)[0] == 0  # and one more round: an unsealed tail again
        with closing(sqlite3.connect(state / "t01.journal")) as db:
            assert db.execute("SELECT count(*) FROM seals").fetchone()[0] >= 2
            assert db.execute("SELECT count(*) FROM snapshots").fetchone()[0] == 2
            last_sealed = db.execute("SELECT MAX(last_input) FROM seals").fetchone()[0]
            assert db.execute("SELECT MAX(id) FROM inputs").fetchone()[0] > last_sealed + 3
        yield state
    finally:
        mp.undo()


@pytest.fixture
def state(played: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A copy of the played state dir, anchored where it is now (nothing left to play)."""
    copy = tmp_path / "state"
    shutil.copytree(played, copy)
    assert _demo(copy, ROUNDS + 1, capsys)[0] == 0
    return copy


def _db(path: Path) -> closing[sqlite3.Connection]:
    return closing(sqlite3.connect(path, isolation_level=None))


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "controller.cli", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=120, env={**os.environ})


def _one_line_exit_2(done: subprocess.CompletedProcess[str], *expected: str) -> str:
    line = done.stderr.strip()
    assert done.returncode == 2, f"exit {done.returncode}: {done.stdout} {done.stderr}"
    assert len(line.splitlines()) == 1 and "Traceback" not in line, done.stderr
    for part in expected:
        assert part in line, line
    return line


def _refused_everywhere(state: Path, capsys: pytest.CaptureFixture[str], *expected: str) -> None:
    """The start, ``journal verify`` and ``recall --key`` all refuse the journal, naming ``expected``; and the
    start changed nothing in the file (no row re-signed, nothing played)."""
    path = state / "t01.journal"
    before = path.read_bytes()
    code, err = _demo(state, ROUNDS + 3, capsys)
    line = err.strip()
    assert code == 2, f"the table went online on a forged journal (exit {code}): {err}"
    assert len(line.splitlines()) == 1 and "Traceback" not in line, err
    for part in expected:
        assert part in line, line
    assert path.read_bytes() == before, "the refused start wrote to the journal"
    key = str(state / "journal.key")
    _one_line_exit_2(_cli("journal", "verify", str(path), "--key", key), *expected)
    _one_line_exit_2(_cli("recall", str(path), "--key", key, "--json"), *expected)


def _downgrade(db: sqlite3.Connection) -> None:
    db.execute("PRAGMA user_version = 1")


# -- the lab's moves: set the format back so the next start re-signs -------------------------------------------


def test_an_edited_snapshot_in_a_journal_set_back_to_the_format_before_the_chain_is_refused(
        state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with _db(state / "t01.journal") as db:
        input_id, text = db.execute("SELECT input_id, state FROM snapshots ORDER BY input_id DESC").fetchone()
        snap = json.loads(text)
        blob = json.dumps(snap)
        assert '"min_bet"' in blob or "min_bet" in blob
        edited = re.sub(r'("min_bet":\s*)(\d+)', r"\g<1>100", blob)  # $1 under a $5 floor
        edited = re.sub(r'("house_net":\s*)(-?\d+)', lambda m: f"{m.group(1)}{int(m.group(2)) + 9_700_000}", edited)
        assert edited != blob
        db.execute("UPDATE snapshots SET state = ? WHERE input_id = ?", (edited, input_id))
        _downgrade(db)
    _refused_everywhere(state, capsys, "t01.journal", "format 1", "chain", "tampered")


def test_edited_inputs_with_the_seals_deleted_in_a_journal_set_back_are_not_re_signed(
        state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with _db(state / "t01.journal") as db:
        bet = db.execute("SELECT MIN(id) FROM inputs WHERE event LIKE '%\"type\":\"bet\"%'").fetchone()[0]
        event = json.loads(db.execute("SELECT event FROM inputs WHERE id = ?", (bet,)).fetchone()[0])
        event["amount"] = event["amount"] * 100
        db.execute("UPDATE inputs SET event = ? WHERE id = ?", (json.dumps(event, separators=(",", ":")), bet))
        db.execute("DELETE FROM seals")
        _downgrade(db)
    _refused_everywhere(state, capsys, "t01.journal", "format 1", "tampered")


def test_a_journal_stripped_to_look_like_the_format_before_the_chain_waits_for_migrate(
        state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every chain field removed (hash columns, seals, chain meta): it reads as an older journal, and nothing
    but ``tablectl journal migrate`` (offline, by a named person, journaled) chains it."""
    with _db(state / "t01.journal") as db:
        for table in ("inputs", "outbox", "snapshots"):
            db.execute(f"ALTER TABLE {table} DROP COLUMN hash")
        db.execute("DROP TABLE seals")
        db.execute("DELETE FROM meta WHERE key NOT IN ('delivered_upto', 'rules_input')")
        db.execute("UPDATE inputs SET event = replace(event, '\"amount\":500', '\"amount\":50000')")
        _downgrade(db)
    _refused_everywhere(state, capsys, "t01.journal", "older format", "tablectl journal migrate")


def test_a_journal_claiming_the_current_format_without_chain_fields_is_refused(
        state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with _db(state / "t01.journal") as db:
        db.execute("DROP TABLE seals")
    _refused_everywhere(state, capsys, "t01.journal", "tampered")


# -- schema tricks ------------------------------------------------------------------------------------------


SCHEMA_MOVES: dict[str, Callable[[sqlite3.Connection], None]] = {
    "a trigger that rewrites wagers on insert": lambda db: db.execute(
        "CREATE TRIGGER fix AFTER INSERT ON inputs BEGIN "
        "UPDATE inputs SET event = replace(event, '\"amount\":500', '\"amount\":5') WHERE id = new.id; END"),
    "a trigger on the outbox": lambda db: db.execute(
        "CREATE TRIGGER hush BEFORE INSERT ON outbox BEGIN SELECT 1; END"),
    "a view": lambda db: db.execute("CREATE VIEW rounds AS SELECT * FROM outbox"),
    "an extra table": lambda db: db.execute("CREATE TABLE shadow (id INTEGER PRIMARY KEY, event TEXT)"),
    "an index": lambda db: db.execute("CREATE INDEX by_event ON inputs (event)"),
    "statistics that steer the planner": lambda db: db.execute("ANALYZE"),
}


def _writable_schema(db: sqlite3.Connection, table: str, old: str, new: str) -> None:
    db.execute("PRAGMA writable_schema = ON")
    assert db.execute("UPDATE sqlite_master SET sql = replace(sql, ?, ?) WHERE name = ?", (old, new, table)).rowcount
    db.execute("PRAGMA writable_schema = OFF")


SCHEMA_MOVES |= {
    "a column's NOT NULL dropped via writable_schema": lambda db: _writable_schema(
        db, "outbox", "body      TEXT    NOT NULL", "body      TEXT"),
    "the input id no longer the row id (duplicate ids) via writable_schema": lambda db: _writable_schema(
        db, "inputs", "id    INTEGER PRIMARY KEY", "id    INTEGER"),
    "the meta key made case-blind via writable_schema": lambda db: _writable_schema(
        db, "meta", "key   TEXT PRIMARY KEY", "key   TEXT PRIMARY KEY COLLATE NOCASE"),
}


@pytest.mark.parametrize("move", sorted(SCHEMA_MOVES))
def test_a_schema_edited_behind_the_table_is_refused_before_anything_runs(
        state: Path, capsys: pytest.CaptureFixture[str], move: str) -> None:
    with _db(state / "t01.journal") as db:
        SCHEMA_MOVES[move](db)
    _refused_everywhere(state, capsys, "t01.journal", "schema")
