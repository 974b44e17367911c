"""``tablectl report --db URL``: the "Table analytics" figures per table (the same as each table's journal
gives), per pit and for the floor, from the recorder's database, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path

import pytest

from controller.cli import main as tablectl
from controller.recorder.store import open_store
from tests.recorder.conftest import PITS, ROUNDS

FIGURES = ("rounds", "hands", "decisions", "handle", "house_net", "initial_wagers", "theoretical_edge",
           "theoretical_win", "hold", "win_z", "sigma", "started", "ended", "play_s", "idle_s", "rounds_per_hour",
           "hands_per_hour", "decisions_per_hour", "mean_round_s")


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = tablectl(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def journal_report(played: Path, table: str, capsys: pytest.CaptureFixture[str], *more: str) -> dict[str, object]:
    code, out, err = run(capsys, "report", str(played / f"{table}.journal"), "--json", *more)
    assert code == 0, err
    data: dict[str, object] = json.loads(out)
    return data


def cents(text: object) -> int:
    from controller.game.money import parse_money

    return parse_money(str(text))


def test_each_tables_figures_are_its_journals(played: Path, recorded: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "report", "--db", recorded, "--json")
    assert code == 0, err
    data = json.loads(out)
    assert sorted(data["tables"]) == ["t01", "t02", "t03"]
    for table, figures in data["tables"].items():
        mine = journal_report(played, table, capsys)
        assert {k: figures[k] for k in FIGURES} == {k: mine[k] for k in FIGURES}, table
        assert figures["rounds"] == ROUNDS and figures["pit"] == (PITS[table] or "unassigned")
        assert figures["profile"] == mine["profile"]


def test_pits_and_the_floor_sum_their_tables(played: Path, recorded: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "report", "--db", recorded, "--all", "--json")
    assert code == 0, err
    data = json.loads(out)
    journals = {t: journal_report(played, t, capsys) for t in ("t01", "t02", "t03")}
    groups = {"pit-1": ["t01", "t02"], "unassigned": ["t03"]}
    assert sorted(data["pits"]) == sorted(groups)
    for name, figures in [*((p, data["pits"][p]) for p in groups), ("floor", data["floor"])]:
        members = groups.get(name, ["t01", "t02", "t03"])
        tables = [journals[t] for t in members]
        assert figures["tables"] == len(members)
        for key in ("rounds", "hands", "decisions"):
            assert figures[key] == sum(t[key] for t in tables)  # type: ignore[misc]
        for key in ("handle", "house_net", "initial_wagers", "theoretical_win"):
            assert cents(figures[key]) == sum(cents(t[key]) for t in tables), (name, key)
        net = sum(cents(t["house_net"]) for t in tables)
        theo = sum(cents(t["theoretical_win"]) for t in tables)
        assert figures["hold"] == pytest.approx(net / sum(cents(t["handle"]) for t in tables), abs=1e-6)
        assert figures["theoretical_edge"] == pytest.approx(theo / sum(cents(t["initial_wagers"]) for t in tables),
                                                            abs=1e-6)
        # over the tables' summed variances (each table's win_sd squared), none below the minimum sample
        sds = [cents(t["win_sd"]) for t in tables]
        assert cents(figures["win_sd"]) == pytest.approx(math.sqrt(sum(s * s for s in sds)), abs=2)
        if figures["rounds"] < figures["min_rounds"]:
            assert figures["win_z"] is None and all(t["win_z"] is None for t in tables)
        else:
            assert figures["win_z"] == pytest.approx((net - theo) / math.sqrt(sum(s * s for s in sds)), rel=1e-3)
        hours = sum(float(t["play_s"]) + float(t["idle_s"]) for t in tables) / 3600  # type: ignore[arg-type]
        assert figures["rounds_per_hour"] == pytest.approx(figures["rounds"] / hours, rel=1e-4)


def test_a_shift_is_the_journals_shift(played: Path, recorded: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "recall", str(played / "t02.journal"), "--json", "--last", "100")
    assert code == 0
    rounds = json.loads(out)
    since = datetime.fromtimestamp(rounds[2]["started"], UTC).isoformat()
    until = datetime.fromtimestamp(rounds[4]["started"], UTC).isoformat()
    code, out, err = run(capsys, "report", "--db", recorded, "--table", "t02", "--since", since, "--until", until,
                         "--json")
    assert code == 0, err
    data = json.loads(out)
    mine = journal_report(played, "t02", capsys, "--since", since, "--until", until)
    assert list(data["tables"]) == ["t02"] and data["floor"]["tables"] == 1
    assert {k: data["tables"]["t02"][k] for k in FIGURES} == {k: mine[k] for k in FIGURES}
    assert 0 < data["tables"]["t02"]["rounds"] < ROUNDS


def test_text_and_html(recorded: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "report", "--db", recorded)
    assert code == 0
    assert "floor" in out and "pit pit-1" in out and "pit unassigned" in out and "t03 (unassigned)" in out
    # each table's ROUNDS (6) are too few for a z; pit-1's 12 and the floor's 18 are not
    lines = {line.split()[0] + (" " + line.split()[1] if line.startswith("pit") else ""): line.split()
             for line in out.splitlines() if line.strip()}
    assert lines["t03"][-2] == "few" and lines["pit unassigned"][-2] == "few" and "too few rounds" in out
    assert lines["pit pit-1"][-2] != "few" and lines["floor"][-2] != "few"
    page = tmp_path / "floor.html"
    code, out, _ = run(capsys, "report", "--db", recorded, "--html", str(page))
    assert code == 0 and "floor report written" in out
    text = page.read_text()
    assert "<table id='pits'>" in text and ">pit-1<" in text and ">t03<" in text
    assert text.count("<td>too few rounds</td>") == 4  # the three tables and the unassigned pit


def test_a_table_whose_rules_are_not_a_known_profile_needs_profile(played: Path, store_url: str,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """A table playing its profile with overrides publishes another digest: the report will not guess."""
    from controller.journal import Journal

    with open_store(store_url) as store, Journal.open_readonly(played / "t01.journal") as journal:
        for row in journal.records():
            body = json.loads(row.body)
            if body["type"] == "rules_changed":
                body["digest"] = "0123456789abcdef"
            store.add_event("t01", row.seq, json.dumps(body, separators=(",", ":")))
    code, _, err = run(capsys, "report", "--db", store_url)
    assert code == 2 and "table t01" in err and "give --profile" in err and len(err.strip().splitlines()) == 1
    code, out, err = run(capsys, "report", "--db", store_url, "--profile", "house-h17", "--json")
    assert code == 0, err
    assert json.loads(out)["tables"]["t01"]["rounds"] == ROUNDS


@pytest.mark.parametrize(("args", "expected"), [
    (["--db", "{missing}"], "no recorder database"),
    (["--db", "{journal}"], "not a recorder's database"),
    (["--db", "{db}", "--table", "t42"], "holds no such table"),
    (["{journal}", "--db", "{db}"], "not both"),
    (["{journal}", "--all"], "go with --db"),
    (["--db", "{db}", "--profile", "no-such-profile"], "no-such-profile"),
])
def test_bad_db_arguments_are_refused_in_one_line(played: Path, recorded: str, tmp_path: Path, args: list[str],
                                                  expected: str, capsys: pytest.CaptureFixture[str]) -> None:
    names = {"missing": str(tmp_path / "none.db"), "journal": str(played / "t01.journal"), "db": recorded}
    code, _, err = run(capsys, "report", *[a.format(**names) for a in args])
    assert code == 2 and expected in err and len(err.strip().splitlines()) == 1, err


def test_the_table_and_all_are_one_or_the_other(recorded: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        tablectl(["report", "--db", recorded, "--table", "t01", "--all"])
    assert e.value.code == 2


def test_a_table_with_nothing_recorded_yet_is_listed_not_counted(played: Path, store_url: str,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """A table the recorder saw only a state of, or events past a gap of: the floor's report still comes."""
    from tests.recorder.floor import record

    with open_store(store_url) as store:
        record(store, played, PITS)
        store.note_state("t09", 40, "a" * 32, None, "pit-9")
        store.add_event("t10", 5, '{"seq":5,"ts":1.0,"type":"bet"}')
    code, out, err = run(capsys, "report", "--db", store_url, "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["unrecorded"] == ["t09", "t10"] and sorted(data["tables"]) == ["t01", "t02", "t03"]
    assert data["floor"]["tables"] == 3
