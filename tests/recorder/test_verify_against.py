"""``tablectl journal verify PATH --against URL`` (issue 24's last move, closed by #26's recorder): what a root
user holding the journal key can rewrite on the table PC passes the journal's own check, and is caught by the
recorder's record of what the table published.

Each case plays a real demo (three tables, the real table code), fills a recorder's database from what the
tables published (tests/recorder/floor.py: through the store's API, on SQLite and on PostgreSQL), makes the
insider's move with the real key (the anchors gone too: the insider is root), and asserts that ``journal
verify`` alone passes and ``--against`` refuses it in one line naming the table, the seq and what differs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.cli import main as tablectl
from controller.cli.journal import NO_WITNESS
from controller.journal.anchor import load_key
from controller.recorder.store import open_store
from tests.recorder.floor import rechain, record

ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "controller.cli", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=180, env={**os.environ})


def one_line(done: subprocess.CompletedProcess[str], code: int, *expected: str) -> str:
    line = done.stderr.strip()
    assert done.returncode == code, f"exit {done.returncode}: {done.stdout} {done.stderr}"
    assert len(line.splitlines()) == 1 and "Traceback" not in line, done.stderr
    for part in expected:
        assert part in line, line
    return line


def verify(state: Path, *more: str, table: str = "t01") -> subprocess.CompletedProcess[str]:
    """``journal verify`` with no anchor found (the insider removed them): only the chain and --against (alone: every
    row checks, no witness vouched, exit :data:`NO_WITNESS`)."""
    empty = state / "no-anchors"
    empty.mkdir(exist_ok=True)
    return cli("journal", "verify", str(state / f"{table}.journal"), "--key", str(state / "journal.key"),
               "--anchor-dir", str(empty), *more)


def key(state: Path) -> bytes:
    return load_key(state / "journal.key")


def seq_of(state: Path, kind: str, nth: int = 0, **fields: str) -> int:
    """The seq of the ``nth`` published record of type ``kind`` (with those ``fields``) in t01's journal."""
    import sqlite3
    from contextlib import closing

    with closing(sqlite3.connect(state / "t01.journal")) as db:
        seqs = [int(s) for s, b in db.execute("SELECT seq, body FROM outbox ORDER BY seq")
                if json.loads(b)["type"] == kind and all(json.loads(b).get(k) == v for k, v in fields.items())]
    return seqs[nth]


def test_the_journal_as_played_agrees_with_the_recorder(state: Path, recorded: str) -> None:
    done = verify(state, "--against", recorded)
    assert done.returncode == 0, done.stderr
    assert "recorder at seq" in done.stdout and "chain heads of t01 equal" in done.stdout
    done = verify(state, "--against", recorded, "--json")
    out = json.loads(done.stdout)
    assert out["ok"] and "recorder" in out["vouched"]


def test_the_insiders_tool_changes_nothing_when_it_edits_nothing(state: Path, recorded: str) -> None:
    """The control: rewriting every row under the real key gives the same hashes, so the refusals below come
    from the edits alone."""
    rechain(state / "t01.journal", key(state))
    assert verify(state, "--against", recorded).returncode == 0


def test_a_settled_payout_edited_and_chained_again_with_the_key_is_refused_by_the_recorder(
        state: Path, recorded: str) -> None:
    target = seq_of(state, "payout", 2, outcome="lose")

    def edit(seq: int, body: str) -> str:
        if seq != target:
            return body
        data = json.loads(body)
        assert data["outcome"] == "lose", data
        data["outcome"], data["payout"] = "win", data["wager"]  # a lost hand paid instead
        return json.dumps(data, separators=(",", ":"))

    rechain(state / "t01.journal", key(state), edit_record=edit)
    alone = verify(state)
    assert alone.returncode == NO_WITNESS, f"the journal's own check was expected to pass: {alone.stderr}"
    one_line(verify(state, "--against", recorded), 2, "t01", f"seq {target}", "body differs", "payout",
             'outcome: published "lose", journal "win"')


def test_an_input_edited_and_chained_again_keeps_the_bodies_but_not_the_heads(state: Path, recorded: str) -> None:
    """A bet input's amount edited, its records left as they were: every body equals what was published, but
    the chain head at every later seq does not."""
    import sqlite3
    from contextlib import closing

    with closing(sqlite3.connect(state / "t01.journal")) as db:
        bet = next(int(i) for i, e in db.execute("SELECT id, event FROM inputs ORDER BY id")
                   if json.loads(e).get("type") == "bet")
        first_after = int(db.execute("SELECT MIN(seq) FROM outbox WHERE input_id >= ?", (bet,)).fetchone()[0])

    def edit(input_id: int, text: str) -> str:
        if input_id != bet:
            return text
        data = json.loads(text)
        data["amount"] *= 10
        return json.dumps(data, separators=(",", ":"))

    rechain(state / "t01.journal", key(state), edit_input=edit)
    assert verify(state).returncode == NO_WITNESS
    one_line(verify(state, "--against", recorded), 2, "t01", f"seq {first_after}", "chain head differs")


def test_a_journal_truncated_and_chained_again_is_behind_the_recorder(state: Path, recorded: str) -> None:
    import sqlite3
    from contextlib import closing

    with closing(sqlite3.connect(state / "t01.journal")) as db:
        last_input = int(db.execute("SELECT MAX(id) FROM inputs").fetchone()[0])
    rechain(state / "t01.journal", key(state), upto_input=last_input // 2)
    assert verify(state).returncode == NO_WITNESS
    one_line(verify(state, "--against", recorded), 2, "t01", "the journal ends at seq", "recorder holds")


def test_a_journal_swapped_for_another_tables_is_refused(state: Path, recorded: str) -> None:
    shutil.copy(state / "t02.journal", state / "t01.journal")
    assert verify(state).returncode == NO_WITNESS
    one_line(verify(state, "--against", recorded), 2, "t01", "another journal")


def test_a_journal_swapped_for_another_tables_with_the_other_id_is_refused(state: Path, recorded: str) -> None:
    """The insider also copies t01's journal id into t02's journal, chained again under it: the bodies differ."""
    import sqlite3
    from contextlib import closing

    with closing(sqlite3.connect(state / "t01.journal")) as db:
        own_id = db.execute("SELECT value FROM meta WHERE key = 'journal_id'").fetchone()[0]
    shutil.copy(state / "t02.journal", state / "t01.journal")
    with closing(sqlite3.connect(state / "t01.journal")) as db, db:
        db.execute("UPDATE meta SET value = ? WHERE key = 'journal_id'", (own_id,))
    rechain(state / "t01.journal", key(state))
    assert verify(state).returncode == NO_WITNESS
    one_line(verify(state, "--against", recorded), 2, "t01", "seq ")


def test_a_recorder_that_has_not_caught_up_still_vouches_for_what_it_holds(state: Path, store_url: str) -> None:
    with open_store(store_url) as store:
        record(store, state, upto={"t01": 40, "t02": 40})
    done = verify(state, "--against", store_url)
    assert done.returncode == 0, done.stderr
    assert "recorder at seq 40" in done.stdout


def test_against_a_database_that_is_missing_or_not_a_recorders_is_refused_in_one_line(state: Path) -> None:
    one_line(verify(state, "--against", str(state / "nothing.db")), 2, "no recorder database")
    one_line(verify(state, "--against", str(state / "t02.journal")), 2, "not a recorder's database")


def test_against_a_table_the_recorder_does_not_hold_is_refused(state: Path, store_url: str) -> None:
    with open_store(store_url) as store:
        store.add_event("t09", 1, '{"seq":1,"ts":1.0,"type":"table_opened"}')
    one_line(verify(state, "--against", store_url), 2, "holds no table t01")


def test_against_a_postgres_that_is_down_is_a_runtime_failure(state: Path) -> None:
    from controller.mqtt.ports import free_port

    one_line(verify(state, "--against", f"postgresql://postgres@127.0.0.1:{free_port()}/recorder"), 1,
             "cannot connect")


# -- an archived journal: its rows before the cut are in the archive -------------------------------------------

SNAP = 40  # inputs between snapshots here (500 in production): the journal can be archived after a few rounds


@pytest.fixture(scope="module")
def archived(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """A demo table played, its journal archived (``tablectl journal archive``), then played on: the state dir
    and the archive file."""
    from controller.service import core

    mp = pytest.MonkeyPatch()
    mp.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("xdg-archived")))
    mp.setitem(core.TableCore.__init__.__kwdefaults__, "snapshot_every", SNAP)  # type: ignore[arg-type]
    state = tmp_path_factory.mktemp("archived") / "state"

    def demo(rounds: int) -> None:
        assert tablectl(["demo", "--tables", "1", "--rounds", str(rounds), "--seed", "4", "--speed", "max",
                         "--state-dir", str(state), "--no-dashboard", "--quiet"]) == 0

    try:
        demo(4)
        assert tablectl(["journal", "archive", str(state / "t01.journal"), "--to", str(state / "archive")]) == 0
        demo(6)
        (archive,) = (state / "archive").glob("*.journal")
        yield state, archive
    finally:
        mp.undo()


def record_archived(url: str, state: Path, archive: Path, edit_seq: int | None = None) -> int:
    """What the recorder holds of the archived table: every row it published, the archive's then the live
    journal's; ``edit_seq``: that row's body as it was published, other than the archive's (the insider's
    rewrite of the archive and of the continuation's chain, seen from the recorder's side). The cut's seq."""
    from controller.journal import Journal

    with open_store(url) as store:
        for path in (archive, state / "t01.journal"):
            with Journal.open_readonly(path, key=key(state)) as journal:
                position = store.position("t01")
                held = position.seq if position is not None else 0
                for row in journal.records(max(held, journal.base.seq) + 1):
                    body = row.body
                    if row.seq == edit_seq:
                        body = body.replace('"type":', '"note":"published","type":', 1)
                    store.add_event("t01", row.seq, body)
                    head = journal.row_hash("outbox", row.seq)
                    assert head is not None
                    store.note_state("t01", row.seq, journal.journal_id, head.hex(), None)
                base = journal.base.seq
    return base


def test_with_after_the_archives_rows_are_held_against_the_recorder_too(archived: tuple[Path, Path],
                                                                         tmp_path: Path) -> None:
    state, archive = archived
    url = str(tmp_path / "recorder.db")
    cut = record_archived(url, state, archive)
    assert cut > 10
    done = verify(state, "--after", str(archive), "--against", url)
    assert done.returncode == 0, done.stderr
    assert f"{cut} of them in {archive.name}" in done.stdout
    assert verify(state, "--against", url).returncode == 0  # the live journal alone: from its chain base


def test_an_archive_that_differs_from_the_recorder_is_refused_naming_it(archived: tuple[Path, Path],
                                                                        tmp_path: Path) -> None:
    state, archive = archived
    url = str(tmp_path / "recorder.db")
    record_archived(url, state, archive, edit_seq=5)
    assert verify(state, "--against", url).returncode == 0, "seq 5 is only in the archive"
    one_line(verify(state, "--after", str(archive), "--against", url), 2, f"archive {archive}", "t01 seq 5",
             "body differs", "note: published")
