"""``tablectl ratings --db URL``: every table's ratings from the recorder's database (issue #27 on #26's record),
the same ratings as each table's journal gives, a player's across tables from one query."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from controller.cli import main as tablectl
from controller.recorder.store import open_store


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = tablectl(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def from_journals(played: Path, capsys: pytest.CaptureFixture[str], *more: str) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for table in ("t01", "t02", "t03"):
        code, text, err = run(capsys, "ratings", str(played / f"{table}.journal"), "--json", *more)
        assert code == 0, err
        out += [{"table_id": table, **r} for r in json.loads(text)["ratings"]]
    return sorted(out, key=lambda r: (r["started"], r["table_id"], r["rating_id"]))  # type: ignore[arg-type,return-value]


def test_the_recorders_ratings_are_the_tables_ratings(played: Path, recorded: str,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "ratings", "--db", recorded, "--json")
    assert code == 0, err
    data = json.loads(out)
    expected = from_journals(played, capsys)
    assert expected, "the demo seats carded players"
    assert data["ratings"] == expected
    assert sum(p["ratings"] for p in data["players"].values()) == len(expected)
    assert "unrated" not in data


def test_one_players_ratings_come_from_one_query(played: Path, recorded: str,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    player = str(from_journals(played, capsys)[-1]["player"])
    code, out, err = run(capsys, "ratings", "--db", recorded, "--player", player, "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["ratings"] == from_journals(played, capsys, "--player", player)
    assert list(data["players"]) == [player]


def test_a_player_rated_at_two_tables_is_summed_across_them(store_url: str, played: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """The same card at t01 and t02 (the recorder's very point): one player line summing both ratings."""
    rated = from_journals(played, capsys)
    first = next(r for r in rated if r["table_id"] == "t01")
    second = next(r for r in rated if r["table_id"] == "t02")
    with open_store(store_url) as store:
        store.add_rating("t01", json.dumps({k: v for k, v in first.items() if k != "table_id"}))
        moved = {k: v for k, v in second.items() if k != "table_id"}
        moved["player"] = first["player"]
        store.add_rating("t02", json.dumps(moved))
    code, out, err = run(capsys, "ratings", "--db", store_url, "--player", str(first["player"]), "--json")
    assert code == 0, err
    data = json.loads(out)
    assert sorted(r["table_id"] for r in data["ratings"]) == ["t01", "t02"]
    assert [r["started"] for r in data["ratings"]] == sorted(r["started"] for r in data["ratings"])
    summed = data["players"][first["player"]]
    assert summed["ratings"] == 2 and summed["rounds"] == int(first["rounds"]) + int(second["rounds"])  # type: ignore[call-overload]


def test_since_and_until_keep_the_ratings_of_the_shift(played: Path, recorded: str,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "ratings", "--db", recorded, "--until", "2000-01-01T00:00", "--json")
    assert code == 0 and json.loads(out)["ratings"] == []
    code, out, _ = run(capsys, "ratings", "--db", recorded, "--since", "2000-01-01T00:00", "--json")
    assert code == 0 and json.loads(out)["ratings"] == from_journals(played, capsys)


def test_text_and_html(recorded: str, played: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    player = str(from_journals(played, capsys)[0]["player"])
    code, out, _ = run(capsys, "ratings", "--db", recorded)
    assert code == 0 and player in out and "skill theo" in out
    page = tmp_path / "r.html"
    code, out, _ = run(capsys, "ratings", "--db", recorded, "--html", str(page))
    assert code == 0 and player in page.read_text()


def test_a_database_with_no_ratings_says_so(store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    with open_store(store_url) as store:
        store.add_event("t01", 1, '{"seq":1,"ts":1.0,"type":"table_opened"}')
    code, out, _ = run(capsys, "ratings", "--db", store_url)
    assert code == 0 and "no ratings" in out


@pytest.mark.parametrize(("args", "expected"), [
    (["--db", "{missing}"], "no recorder database"),
    (["--db", "{journal}"], "not a recorder's database"),
    (["{journal}", "--db", "{db}"], "not both"),
    (["--db", "{db}", "--profile", "house-h17"], "--profile"),
])
def test_bad_db_arguments_are_refused_in_one_line(played: Path, recorded: str, tmp_path: Path, args: list[str],
                                                  expected: str, capsys: pytest.CaptureFixture[str]) -> None:
    names = {"missing": str(tmp_path / "none.db"), "journal": str(played / "t01.journal"), "db": recorded}
    code, _, err = run(capsys, "ratings", *[a.format(**names) for a in args])
    assert code == 2 and expected in err and len(err.strip().splitlines()) == 1, err
