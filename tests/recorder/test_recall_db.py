"""``tablectl recall --db URL --table T``: the rounds of any table of the floor from the recorder's database, the
same as from the table's own journal (the same bodies, the same code), on SQLite and on PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from controller.cli import main as tablectl
from controller.recorder.store import open_store
from tests.recorder.conftest import ROUNDS
from tests.recorder.floor import record


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = tablectl(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def one_line(err: str, *expected: str) -> None:
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    for part in expected:
        assert part in err, err


@pytest.mark.parametrize("table", ["t01", "t02"])
@pytest.mark.parametrize("more", [[], ["--last", "3"], ["--last", str(ROUNDS + 5)], ["--round", "2"]])
def test_recall_from_the_recorder_is_recall_from_the_journal(played: Path, recorded: str, table: str,
                                                              more: list[str],
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    code, from_journal, _ = run(capsys, "recall", str(played / f"{table}.journal"), "--json", *more)
    assert code == 0
    code, from_db, err = run(capsys, "recall", "--db", recorded, "--table", table, "--json", *more)
    assert code == 0, err
    rounds = json.loads(from_db)
    assert rounds == json.loads(from_journal)
    assert rounds and all(r["events"] for r in rounds)
    code, text_journal, _ = run(capsys, "recall", str(played / f"{table}.journal"), *more)
    code, text_db, _ = run(capsys, "recall", "--db", recorded, "--table", table, *more)
    assert text_db == text_journal


def test_recall_html_from_the_recorder_names_the_table(recorded: str, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "t01.html"
    code, out, err = run(capsys, "recall", "--db", recorded, "--table", "t01", "--html", str(page))
    assert code == 0, err
    assert "Hand history: table t01" in page.read_text() and f"{ROUNDS} rounds written" in out


def test_a_recorder_behind_the_table_recalls_the_rounds_it_holds(played: Path, store_url: str,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    with open_store(store_url) as store:
        record(store, played, upto={"t01": 150, "t02": 1, "t03": 1})
        settled = sum(1 for e in store.events("t01") if e.type == "round_settled")
    code, out, err = run(capsys, "recall", "--db", store_url, "--table", "t01", "--json", "--last", "100")
    assert code == 0, err
    assert len(json.loads(out)) == settled and 0 < settled < ROUNDS


def test_an_unknown_table_is_refused_naming_the_tables_held(recorded: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "recall", "--db", recorded, "--table", "t42")
    assert code == 2
    one_line(err, "--table t42", "holds no such table", "t01, t02, t03")


def test_a_round_not_in_the_record_is_refused(recorded: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "recall", "--db", recorded, "--table", "t01", "--round", "999")
    assert code == 2
    one_line(err, "round 999 is not in table t01", f"rounds 1 to {ROUNDS}")


@pytest.mark.parametrize(("args", "expected"), [
    (["--db", "{missing}", "--table", "t01"], "no recorder database"),
    (["--db", "{journal}", "--table", "t01"], "not a recorder's database"),
    (["--db", "{db}"], "--db needs --table"),
    (["{journal}", "--db", "{db}", "--table", "t01"], "not both"),
    (["--db", "{db}", "--table", "t01", "--key", "{key}"], "journal verify PATH --against URL"),
    (["{journal}", "--table", "t01"], "--table goes with --db"),
])
def test_bad_db_arguments_are_refused_in_one_line(played: Path, recorded: str, tmp_path: Path, args: list[str],
                                                  expected: str, capsys: pytest.CaptureFixture[str]) -> None:
    names = {"missing": str(tmp_path / "none.db"), "journal": str(played / "t01.journal"), "db": recorded,
             "key": str(played / "journal.key")}
    code, _, err = run(capsys, "recall", *[a.format(**names) for a in args])
    assert code == 2
    one_line(err, expected)


def test_a_postgres_that_is_down_is_a_runtime_failure(capsys: pytest.CaptureFixture[str]) -> None:
    from controller.mqtt.ports import free_port

    code, _, err = run(capsys, "recall", "--db", f"postgresql://u:pw@127.0.0.1:{free_port()}/x", "--table", "t01")
    assert code == 1
    one_line(err, "cannot connect", "u:***@")


def test_every_round_recalled_by_number_is_the_journals(played: Path, recorded: str,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """``--round R`` finds the round's settlement by one query and reads from the settlement before it: each
    round so read is the one the journal gives, the first round (read from the start) and the last included."""
    from controller.recorder.table_log import TableLog

    with open_store(recorded, create=False) as store:
        log = TableLog(store, "t03")
        settlements = [e.seq for e in store.events("t03") if e.type == "round_settled"]
        assert [log.round_start(r) for r in range(1, ROUNDS + 1)] == [0, *settlements[:-1]]
        assert log.round_start(ROUNDS + 1) is None
    for r in range(1, ROUNDS + 1):
        _, from_journal, _ = run(capsys, "recall", str(played / "t03.journal"), "--json", "--round", str(r))
        code, from_db, err = run(capsys, "recall", "--db", recorded, "--table", "t03", "--json", "--round", str(r))
        assert code == 0, err
        assert json.loads(from_db) == json.loads(from_journal) and json.loads(from_db)[0]["round"] == r
