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
    from controller.journal import writer
    from controller.service import core

    mp = pytest.MonkeyPatch()
    mp.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("xdg-module")))
    mp.setattr(writer, "SEAL_EVERY", SEAL)
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
        shutil.copytree(Path(os.environ["XDG_STATE_HOME"]) / "tablectl" / "anchors", state.parent / "anchors")
        yield state
    finally:
        mp.undo()


@pytest.fixture
def state(played: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A copy of the played state dir, anchored where it is now (nothing left to play)."""
    copy = tmp_path / "state"
    shutil.copytree(played, copy)
    # its anchors too, where this test's demo keeps them: a resumed state dir must be vouched for
    shutil.copytree(played.parent / "anchors", Path(os.environ["XDG_STATE_HOME"]) / "tablectl" / "anchors",
                    dirs_exist_ok=True)
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
    """Set the format back; the insider also removes the anchors, so only the journal's own check stands."""
    db.execute("PRAGMA user_version = 1")
    shutil.rmtree(Path(os.environ["XDG_STATE_HOME"]) / "tablectl" / "anchors")


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


def test_a_journal_stripped_of_its_chain_fields_in_place_is_refused_as_tampered(
        state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every chain field removed in place (hash columns dropped, seals, chain meta): SQLite rewrites the tables'
    SQL, which no version of the program wrote, so it is refused as tampered (a file rebuilt exactly as the
    older format waits for ``tablectl journal migrate``: below)."""
    with _db(state / "t01.journal") as db:
        for table in ("inputs", "outbox", "snapshots"):
            db.execute(f"ALTER TABLE {table} DROP COLUMN hash")
        db.execute("DROP TABLE seals")
        db.execute("DELETE FROM meta WHERE key NOT IN ('delivered_upto', 'rules_input')")
        db.execute("UPDATE inputs SET event = replace(event, '\"amount\":500', '\"amount\":50000')")
        _downgrade(db)
    _refused_everywhere(state, capsys, "t01.journal", "schema", "altered", "tampered")


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


def _without_rowid(db: sqlite3.Connection) -> None:
    """The inputs rebuilt WITHOUT ROWID keyed by (id, ts): a second row with the same id fits beside the first."""
    db.executescript("""
        CREATE TABLE inputs2 (id INTEGER NOT NULL, ts REAL NOT NULL, event TEXT NOT NULL, hash BLOB,
                              PRIMARY KEY (id, ts)) WITHOUT ROWID;
        INSERT INTO inputs2 SELECT id, ts, event, hash FROM inputs;
        INSERT INTO inputs2 SELECT id, ts + 1, replace(event, '"amount":500', '"amount":5'), hash FROM inputs
            WHERE id = (SELECT MIN(id) FROM inputs WHERE event LIKE '%"type":"bet"%');
        DROP TABLE inputs;
        ALTER TABLE inputs2 RENAME TO inputs;""")


SCHEMA_MOVES["the inputs rebuilt WITHOUT ROWID with a duplicated id"] = _without_rowid
SCHEMA_MOVES["meta replaced by an endless view (nothing of another schema is read)"] = lambda db: db.executescript(
    "DROP TABLE meta; CREATE VIEW meta AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
    "SELECT 'journal_id' AS key, x AS value FROM c;")


@pytest.mark.parametrize("move", sorted(SCHEMA_MOVES))
def test_a_schema_edited_behind_the_table_is_refused_before_anything_runs(
        state: Path, capsys: pytest.CaptureFixture[str], move: str) -> None:
    with _db(state / "t01.journal") as db:
        SCHEMA_MOVES[move](db)
    _refused_everywhere(state, capsys, "t01.journal", "schema")


# -- every column of every table, edited once: in a sealed segment and in the unsealed tail ------------------

#: columns outside the chain on purpose (docs/journal.md): editing them is harmless, proven below
BOOKKEEPING = {("outbox", "delivered")}
#: meta values read by nothing or checked when read: an edit is harmless (a resend at most), proven below
HARMLESS_META_VALUES = {"created_at", "chained_at", "continued_by", "delivered_upto", "rules_input", "ratings_sent"}
ROW_KEY = {"inputs": "id", "outbox": "seq", "snapshots": "input_id", "seals": "n", "meta": "rowid"}


def _key_of(state: Path) -> bytes:
    return bytes.fromhex((state / "journal.key").read_text().strip())


def _start_check(path: Path, key: bytes) -> Exception | None:
    """What a start checks before the table goes online (the journal opened as the table's writer, every row
    of it verified, snapshots included), and what ``journal verify`` checks read-only: the error, or None."""
    from controller.journal import Journal, JournalError

    errors: list[Exception | None] = []
    for opener in (lambda: Journal(path, key=key), lambda: Journal.open_readonly(path, key=key)):
        try:
            with opener() as journal:
                journal.verify()
            errors.append(None)
        except JournalError as exc:
            errors.append(exc)
    assert (errors[0] is None) == (errors[1] is None), f"the start and verify disagree: {errors}"
    return errors[0]


def _altered(value: object, column: str) -> object:
    """Another value of the same type, as close to the original as an insider would make it."""
    if isinstance(value, bool) or value is None:
        return 1
    if isinstance(value, int):
        return value + 1_000_000 if column in ("id", "seq", "input_id", "n") else value + 1
    if isinstance(value, float):
        return value + 0.001
    if isinstance(value, bytes):
        return bytes([value[0] ^ 1]) + value[1:]
    assert isinstance(value, str)
    return value + " " if value[:1] in "{[" else value[:-1] + ("0" if value[-1:] != "0" else "1")


def _rows_to_edit(db: sqlite3.Connection, table: str) -> dict[str, int]:
    """One row of ``table`` in a sealed segment and one in the unsealed tail (seals, snapshots, meta: each)."""
    last_input, last_seq = db.execute("SELECT MAX(last_input), MAX(last_seq) FROM seals").fetchone()
    if table == "inputs":
        return {"sealed": last_input // 2, "tail": int(db.execute("SELECT MAX(id) FROM inputs").fetchone()[0]) - 1}
    if table == "outbox":
        return {"sealed": last_seq // 2, "tail": int(db.execute("SELECT MAX(seq) FROM outbox").fetchone()[0]) - 1}
    key = ROW_KEY[table]
    return {f"{table} {row}": int(row) for (row,) in db.execute(f"SELECT {key} FROM {table} ORDER BY {key}")}


def test_every_column_of_every_table_a_start_reads_is_covered_edited_once_in_each_place(
        played: Path, tmp_path: Path) -> None:
    """The columns come from the schema (PRAGMA table_info), so a column added later without coverage fails
    here: an edit that a start and ``journal verify`` accept is a failure unless the column is bookkeeping."""
    key = _key_of(played)
    source = played / "t01.journal"
    tried: list[str] = []
    with _db(source) as db:
        tables = [str(r[0]) for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        assert tables == ["inputs", "meta", "outbox", "seals", "snapshots"], tables
        plan = [(t, str(c[1]), place, row) for t in tables for c in db.execute(f"PRAGMA table_info({t})")
                for place, row in _rows_to_edit(db, t).items()]
    for table, column, place, row in plan:
        copy = tmp_path / f"{table}-{column}-{row}.journal"
        shutil.copy(source, copy)
        with _db(copy) as db:
            where = f"{ROW_KEY[table]} = ?"
            (value,) = db.execute(f"SELECT {column} FROM {table} WHERE {where}", (row,)).fetchone()
            meta_key = (db.execute("SELECT key FROM meta WHERE rowid = ?", (row,)).fetchone()
                        if table == "meta" else None)
            new = _altered(value, column)
            if meta_key and meta_key[0] == "journal_id" and column == "value":
                new = os.urandom(16).hex()  # another well-formed journal id
            db.execute(f"UPDATE {table} SET {column} = ? WHERE {where}", (new, row))
        error = _start_check(copy, key)
        label = f"{table}.{column} ({place}{', ' + meta_key[0] if meta_key else ''})"
        tried.append(label)
        if (table, column) in BOOKKEEPING or (meta_key and column == "value" and meta_key[0] in HARMLESS_META_VALUES):
            assert error is None, f"{label}: bookkeeping, yet refused: {error}"
            continue
        assert error is not None, f"{label}: edited, and the start and journal verify accepted it"
        text = str(error)
        named = [f"{table} row {row} " if table != "meta" else "meta row "]
        if column == ROW_KEY[table]:
            named.append(f"{table} row {new} ")  # moved: named where it is now, or missing where it was
        if meta_key and meta_key[0] == "journal_id":
            named = ["row 1 "]  # a journal id keys the genesis: the chain's first row no longer checks
        assert any(n in text for n in named) and "\n" not in text, f"{label}: refused without naming the row: {text}"
    assert len(tried) == len(plan) and len({t.split(" (")[0] for t in tried}) == sum(
        1 for _ in {(t, c) for t, c, _, _ in plan}), tried


def test_bookkeeping_edits_make_records_be_sent_again_never_skipped(played: Path, tmp_path: Path) -> None:
    """The delivered column is read by nothing; the delivery mark carries its own HMAC: a forged mark, one
    deleted, or an older one put back can only make the publisher send records again (same seq, same body)."""
    from controller.journal import Journal

    key = _key_of(played)
    path = tmp_path / "t01.journal"
    shutil.copy(played / "t01.journal", path)
    with Journal.open_readonly(path, key=key) as j:
        honest, last = j.delivered_upto, j.last_seq
        assert 0 < honest <= last
    moves = {
        "every record flagged delivered": ["UPDATE outbox SET delivered = 1"],
        "the mark raised to the end, no MAC": [f"UPDATE meta SET value = '{last}' WHERE key = 'delivered_upto'"],
        "the mark raised, its old MAC kept": [
            f"UPDATE meta SET value = '{last} ' || substr(value, instr(value, ' ') + 1) WHERE key = 'delivered_upto'"],
        "the mark deleted": ["DELETE FROM meta WHERE key = 'delivered_upto'"],
    }
    for move, statements in moves.items():
        copy = tmp_path / "x.journal"
        shutil.copy(path, copy)
        with _db(copy) as db:
            for statement in statements:
                db.execute(statement)
        with Journal(copy, key=key) as j:
            j.verify()
            start = j.delivered_upto
            assert start <= honest, f"{move}: the publisher would skip records {honest + 1} to {start}"
            sent = [r.seq for r in j.undelivered()]
            assert sent == list(range(start + 1, last + 1)), f"{move}: not every record after the mark is sent"
        copy.unlink()
    # an older, honestly signed mark put back: a repeat of what followed it
    with Journal(path, key=key) as j:
        j.verify()
        older = j.get_meta("delivered_upto")
        j.commit_event({"type": "tick"}, [{"type": "x"}])
        j.mark_delivered(j.last_seq)
    with _db(path) as db:
        db.execute("UPDATE meta SET value = ? WHERE key = 'delivered_upto'", (older,))
    with Journal(path, key=key) as j:
        assert j.delivered_upto == honest and [r.seq for r in j.undelivered()][-1] == last + 1


def test_a_journal_id_or_key_id_deleted_or_a_meta_key_added_is_refused(played: Path, tmp_path: Path) -> None:
    key = _key_of(played)
    moves = {
        "DELETE FROM meta WHERE key = 'journal_id'": "meta row 0 (journal_id): missing",
        "DELETE FROM meta WHERE key = 'key_id'": "(key_id): missing (deleted): the chain checks under this key",
        "UPDATE meta SET value = '0123456789abcdef' WHERE key = 'key_id'": "(key_id): altered",
        "INSERT INTO meta VALUES ('anchor_dir', '/tmp/elsewhere')": "(anchor_dir): not a key of a table journal",
        "INSERT INTO meta VALUES ('Journal_id', 'x')": "(Journal_id): not a key of a table journal",
        "UPDATE meta SET value = 'all' WHERE key = 'rules_input'": "(rules_input): not an input id",
        ("INSERT INTO meta VALUES ('chain_base', '{\"input\": 0, \"seq\": 0, \"hash\": \"00\", \"archive\": null, "
         "\"mac\": \"00\"}')"): "meta row 0 (chain_base): the chain's start does not check",
    }
    for statement, expected in moves.items():
        copy = tmp_path / "x.journal"
        shutil.copy(played / "t01.journal", copy)
        with _db(copy) as db:
            db.execute(statement)
        error = _start_check(copy, key)
        assert error is not None and expected in str(error), (statement, error)
        copy.unlink()
    # a genuinely wrong key is told apart from an altered key id
    error = _start_check(played / "t01.journal", os.urandom(32))
    assert error is not None and "wrong key: the journal is chained under key id" in str(error), error


def test_the_writer_sets_no_meta_key_a_start_would_refuse(tmp_path: Path) -> None:
    from controller.journal import Journal
    from controller.journal.schema import META_KEYS

    with Journal(tmp_path / "t.journal") as j:
        with pytest.raises(ValueError, match="not one of META_KEYS"):
            j.set_meta("anchor_dir", "/tmp")
        j.set_meta("rules_input", "1")
        assert set(j.meta()) <= set(META_KEYS)


def _sealed_pair(db: sqlite3.Connection, table: str) -> tuple[int, int]:
    last_input, last_seq = db.execute("SELECT MAX(last_input), MAX(last_seq) FROM seals").fetchone()
    mid = (last_input if table == "inputs" else last_seq) // 2
    return mid, mid + 1


CELL_MOVES: dict[str, Callable[[sqlite3.Connection], str]] = {}


def _move(name: str) -> Callable[[Callable[[sqlite3.Connection], str]], Callable[[sqlite3.Connection], str]]:
    def register(fn: Callable[[sqlite3.Connection], str]) -> Callable[[sqlite3.Connection], str]:
        CELL_MOVES[name] = fn
        return fn
    return register


@_move("a record's input id split across two sealed rows ('12,13' and NULL: the same concatenation)")
def _split_input_id(db: sqlite3.Connection) -> str:
    a, b = _sealed_pair(db, "outbox")
    ia, ib = (db.execute("SELECT input_id FROM outbox WHERE seq = ?", (s,)).fetchone()[0] for s in (a, b))
    db.execute("UPDATE outbox SET input_id = ? WHERE seq = ?", (f"{ia},{ib}", a))
    db.execute("UPDATE outbox SET input_id = NULL WHERE seq = ?", (b,))
    return f"outbox row {a} "


@_move("hash bytes moved across two sealed rows (the same concatenation)")
def _shift_hash(db: sqlite3.Connection) -> str:
    a, b = _sealed_pair(db, "inputs")
    ha, hb = (bytes(db.execute("SELECT hash FROM inputs WHERE id = ?", (i,)).fetchone()[0]) for i in (a, b))
    db.execute("UPDATE inputs SET hash = ? WHERE id = ?", (ha + hb[:4], a))
    db.execute("UPDATE inputs SET hash = ? WHERE id = ?", (hb[4:], b))
    return f"inputs row {a} "


@_move("a tail input's event stored as a blob of the same bytes")
def _blob_event(db: sqlite3.Connection) -> str:
    (last,) = db.execute("SELECT MAX(id) FROM inputs").fetchone()
    db.execute("UPDATE inputs SET event = CAST(event AS BLOB) WHERE id = ?", (last - 1,))
    return f"inputs row {last - 1} "


@_move("a sealed input's time made infinite")
def _inf_ts(db: sqlite3.Connection) -> str:
    a, _ = _sealed_pair(db, "inputs")
    db.execute("UPDATE inputs SET ts = 9e999 WHERE id = ?", (a,))
    return f"inputs row {a} "


@_move("a tail input's time made 'NaN' text")
def _nan_ts(db: sqlite3.Connection) -> str:
    (last,) = db.execute("SELECT MAX(id) FROM inputs").fetchone()
    db.execute("UPDATE inputs SET ts = 'NaN' WHERE id = ?", (last - 1,))
    return f"inputs row {last - 1} "


@_move("two seals swapped")
def _swap_seals(db: sqlite3.Connection) -> str:
    db.execute("UPDATE seals SET n = -n WHERE n IN (1, 2)")
    db.execute("UPDATE seals SET n = CASE n WHEN -1 THEN 2 ELSE 1 END WHERE n < 0")
    return "seals row 1 "


@_move("a seal deleted in the middle")
def _drop_seal(db: sqlite3.Connection) -> str:
    db.execute("DELETE FROM seals WHERE n = 1")
    return "seals row 1 (seal): missing"


@_move("a snapshot moved to another input")
def _move_snapshot(db: sqlite3.Connection) -> str:
    (first,) = db.execute("SELECT MIN(input_id) FROM snapshots").fetchone()
    db.execute("UPDATE snapshots SET input_id = input_id - 1 WHERE input_id = ?", (first,))
    return f"snapshots row {first - 1} "


@_move("a snapshot copied onto another input with its hash")
def _copy_snapshot(db: sqlite3.Connection) -> str:
    (first,) = db.execute("SELECT MIN(input_id) FROM snapshots").fetchone()
    db.execute("INSERT INTO snapshots SELECT input_id + 3, seq, ts, state, hash FROM snapshots WHERE input_id = ?",
               (first,))
    return f"snapshots row {first + 3} "


@pytest.mark.parametrize("move", sorted(CELL_MOVES))
def test_more_moves_of_the_same_kind_are_refused_naming_the_row(played: Path, tmp_path: Path, move: str) -> None:
    copy = tmp_path / "x.journal"
    shutil.copy(played / "t01.journal", copy)
    with _db(copy) as db:
        named = CELL_MOVES[move](db)
    error = _start_check(copy, _key_of(played))
    assert error is not None and named in str(error), error


def test_a_sealed_event_stored_as_a_blob_of_the_same_bytes_is_the_same_event(played: Path, tmp_path: Path) -> None:
    """In a sealed segment the digest reads the bytes, so a blob of the very bytes passes: harmless, the
    journal reads back exactly the events that were written (in the tail the row's own check refuses it)."""
    from controller.journal import Journal

    key = _key_of(played)
    copy = tmp_path / "x.journal"
    shutil.copy(played / "t01.journal", copy)
    with Journal.open_readonly(copy, key=key) as j:
        honest = [(r.id, r.ts, r.event) for r in j.inputs_since(0)]
    with _db(copy) as db:
        a, _ = _sealed_pair(db, "inputs")
        db.execute("UPDATE inputs SET event = CAST(event AS BLOB) WHERE id = ?", (a,))
    error = _start_check(copy, key)
    if error is None:
        with Journal.open_readonly(copy, key=key) as j:
            assert [(r.id, r.ts, r.event) for r in j.inputs_since(0)] == honest


def test_all_seals_deleted_only_makes_the_check_slower(played: Path, tmp_path: Path) -> None:
    from controller.journal import Journal

    key = _key_of(played)
    copy = tmp_path / "x.journal"
    shutil.copy(played / "t01.journal", copy)
    with Journal.open_readonly(copy, key=key) as j:
        honest = j.verify()
    with _db(copy) as db:
        db.execute("DELETE FROM seals")
    with Journal.open_readonly(copy, key=key) as j:
        again = j.verify()
    assert (again.head, again.last_seq, again.sealed_rows) == (honest.head, honest.last_seq, 0)


# -- journal migrate on a real journal ---------------------------------------------------------------------


def _as_format_1(path: Path) -> None:
    """Rewrite a table's journal exactly as the version before the chain held it: its tables without the
    chain's columns, no seals, no chain meta, format 1 (what a table PC upgraded from that version holds)."""
    from controller.journal.schema import SCHEMA_V1

    old = path.with_name("chained.journal")
    path.rename(old)
    for side in ("-wal", "-shm"):
        Path(f"{path}{side}").unlink(missing_ok=True)
    with _db(path) as db:
        db.executescript(SCHEMA_V1)
        db.execute("ATTACH DATABASE ? AS chained", (str(old),))
        db.execute("INSERT INTO inputs SELECT id, ts, event FROM chained.inputs")
        db.execute("INSERT INTO outbox SELECT seq, input_id, body, 0 FROM chained.outbox")
        db.execute("INSERT INTO snapshots SELECT input_id, seq, ts, state FROM chained.snapshots")
        db.execute("INSERT INTO meta SELECT key, value FROM chained.meta WHERE key = 'rules_input'")
        db.execute("DETACH DATABASE chained")
        db.execute("PRAGMA user_version = 1")
    old.unlink()


def _recovered_totals(path: Path, key: bytes) -> dict[str, object]:
    from controller.journal import Journal
    from controller.profiles import load_rules
    from controller.service.core import TableCore

    with Journal(path, key=key) as journal:
        core = TableCore("t01", load_rules("house-h17"), journal)
        core.recover()
        return dict(core.state()["totals"])


def _play_a_round(path: Path, key: bytes) -> None:
    """The table resumed on the journal (its real core, the simulated dealer) until it settles one more round."""
    from controller.game import events as ev
    from controller.journal import Journal
    from controller.profiles import load_rules
    from controller.service.core import TableCore
    from controller.sim.dealer import SimulatedDealer

    rules = load_rules("house-h17")
    with Journal(path, key=key) as journal:
        core = TableCore("t01", rules, journal)
        core.recover()
        dealer = SimulatedDealer(rules, seed=9, table_id="t01")
        settled = core.table.snapshot()["totals"]["rounds"]
        now = journal.inputs_since(journal.last_input_id - 1).__next__().ts + 60
        for _ in range(400):
            if core.table.phase == "closed":
                event: ev.Event | None = ev.TableOpened(now=now)
            else:
                event = dealer.next_event(core.table)
            assert event is not None, core.table.snapshot()
            core.apply(event)
            if core.table.snapshot()["totals"]["rounds"] > settled:
                return
    raise AssertionError("no round settled")


def test_a_real_journal_of_the_older_format_is_refused_then_migrated_by_a_named_person(
        state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, key_file = state / "t01.journal", state / "journal.key"
    key = _key_of(state)
    honest = _recovered_totals(path, key)
    rows = json.loads(_cli("journal", "verify", str(path), "--json").stdout)
    _as_format_1(path)
    shutil.rmtree(Path(os.environ["XDG_STATE_HOME"]) / "tablectl" / "anchors")  # an older journal has none
    _refused_everywhere(state, capsys, "t01.journal", "older format", f"tablectl journal migrate {path}")
    done = _cli("journal", "migrate", str(path), "--key", str(key_file), "--operator", "tech.jo",
                "--reason", "upgrade of t01 from 1.x")
    assert done.returncode == 0 and len(done.stdout.strip().splitlines()) == 1, done.stderr
    after = json.loads(_cli("journal", "verify", str(path), "--json").stdout)
    assert after["ok"] and after["inputs"] == rows["inputs"] and after["last_seq"] == rows["last_seq"] + 1
    assert after["migrated"]["operator"] == "tech.jo" and after["migrated"]["reason"] == "upgrade of t01 from 1.x"
    assert after["migrated"]["seq"] == after["last_seq"] and after["snapshots"] == 2
    assert after["head"] != rows["head"], "a new journal id: a new chain"
    assert _recovered_totals(path, key) == honest, "the migrated journal replays the table as it was"
    _play_a_round(path, key)
    recalled = _cli("recall", str(path), "--key", str(key_file), "--last", "1", "--json")
    assert recalled.returncode == 0, recalled.stderr
    (last_round,) = json.loads(recalled.stdout)
    notes = [e for e in last_round["events"] if e["type"] == "journal_migrated"]
    assert [(n["operator"], n["reason"]) for n in notes] == [("tech.jo", "upgrade of t01 from 1.x")], last_round
    again = _cli("journal", "migrate", str(path), "--key", str(key_file), "--operator", "tech.jo", "--reason", "x")
    _one_line_exit_2(again, "already holds the chain's fields", "nothing done")


def test_journal_migrate_refuses_an_older_journal_with_a_trigger_or_a_bad_file_in_one_line(
        state: Path, tmp_path: Path) -> None:
    path, key_file = state / "t01.journal", str(state / "journal.key")
    _as_format_1(path)
    with _db(path) as db:
        db.execute("CREATE TRIGGER later AFTER INSERT ON inputs BEGIN DELETE FROM outbox; END")
    before = path.read_bytes()
    migrate = ("journal", "migrate", "--key", key_file, "--operator", "tech.jo", "--reason", "upgrade")
    _one_line_exit_2(_cli(*migrate[:2], str(path), *migrate[2:]), "schema", "trigger later added", "not migrated")
    assert path.read_bytes() == before
    junk = tmp_path / "junk.journal"
    junk.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4000)
    _one_line_exit_2(_cli(*migrate[:2], str(junk), *migrate[2:]), "junk.journal")
    _one_line_exit_2(_cli(*migrate[:2], str(tmp_path / "none.journal"), *migrate[2:]), "no such journal")


def test_the_rules_hint_edited_or_deleted_changes_nothing_but_a_rebinding_to_the_configured_rules(
        played: Path, tmp_path: Path) -> None:
    """``meta.rules_input`` only says where the input that bound the rules is: the table plays what its chained
    inputs say whatever the hint, and at worst journals the configured rules again, between shoes."""
    from controller.game.rules import rules_to_json
    from controller.game.snapshot import export_state
    from controller.journal import Journal
    from controller.profiles import load_rules
    from controller.service.core import TableCore

    key, rules = _key_of(played), load_rules("house-h17")

    def recovered(path: Path) -> tuple[object, object]:
        with Journal(path, key=key) as journal:
            core = TableCore("t01", rules, journal)
            core.recover()
            binding = core.rules_binding()
            return export_state(core.table), None if binding is None else binding.rules

    honest = recovered(played / "t01.journal")
    for statement in ("DELETE FROM meta WHERE key = 'rules_input'",
                      "INSERT OR REPLACE INTO meta VALUES ('rules_input', '7')",
                      "INSERT OR REPLACE INTO meta VALUES ('rules_input', '999999')"):
        copy = tmp_path / "x.journal"
        shutil.copy(played / "t01.journal", copy)
        with _db(copy) as db:
            db.execute(statement)
        state, binding = recovered(copy)
        assert state == honest[0], statement
        assert binding in (None, rules_to_json(rules)), statement
        copy.unlink()
