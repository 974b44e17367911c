"""``tablectl profiles``: the list of shipped profiles, and a profile checked by name or by path.

README: ``tablectl profiles [NAME|PATH ...]`` lists the shipped profiles, or validates files; exit 0 on
success, 2 on bad input with one line on stderr naming what and why. The shipped set is read here from
``config/profiles/`` itself (DESIGN's place for them), never from the code under test.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from controller.cli import main

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted(ROOT.glob("config/profiles/*.toml"))
#: the console script as a child process (as tests/drivers/conftest.py runs it)
TABLECTL = [sys.executable, "-c", "import sys; from controller.cli import main; sys.exit(main())"]
#: stderr is compared whole: a checkout whose compiled engine is older than its source warns about it on
#: stderr at import (controller/__init__.py), which says nothing about this command
ENV = {**os.environ, "PYTHONWARNINGS": "ignore:the compiled round engine is older:UserWarning"}


def tablectl(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TABLECTL, *args], capture_output=True, text=True, timeout=60, cwd=cwd, env=ENV)


def _description(path: Path) -> str:
    description = tomllib.loads(path.read_text(encoding="utf-8"))["description"]
    assert isinstance(description, str)
    return description


def test_the_six_profiles_of_the_readme_ship() -> None:
    assert {p.stem for p in SHIPPED} >= {"ny-4620", "nj-shoe", "nj-hand-dealt", "european-6d", "house-h17",
                                          "house-shoe-surrender"}


def test_the_list_names_every_shipped_profile_once_with_its_description(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["profiles"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    lines = out.splitlines()
    assert [line.split()[0] for line in lines] == [p.stem for p in SHIPPED]  # one line each, sorted by name
    for line, path in zip(lines, SHIPPED, strict=True):
        _, description = line.split(maxsplit=1)
        assert description == _description(path), line


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_a_shipped_profile_checks_out_by_name(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["profiles", path.stem]) == 0
    out, err = capsys.readouterr()
    assert (out, err) == (f"{path.stem}: ok ({path.stem})\n", "")


def test_a_profile_checks_out_by_path_relative_or_absolute(tmp_path: Path) -> None:
    absolute = ROOT / "config" / "profiles" / "nj-shoe.toml"
    r = tablectl("profiles", str(absolute), cwd=tmp_path)
    assert (r.returncode, r.stdout, r.stderr) == (0, f"{absolute}: ok (nj-shoe)\n", "")
    r = tablectl("profiles", "config/profiles/european-6d.toml", cwd=ROOT)
    assert (r.returncode, r.stdout, r.stderr) == (0, "config/profiles/european-6d.toml: ok (european-6d)\n", "")


def test_several_profiles_are_checked_in_the_order_given(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lab = tmp_path / "lab-card.toml"
    lab.write_text('name = "lab card 7"\ndecks = 2\n', encoding="utf-8")
    assert main(["profiles", "house-h17", str(lab), "ny-4620"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "house-h17: ok (house-h17)",
        f"{lab}: ok (lab card 7)",  # the name the file gives, not its file name
        "ny-4620: ok (ny-4620)",
    ]


def test_a_lab_profile_of_only_the_documented_keys_loads_named_after_its_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # DESIGN: every added key has a default, so a profile naming only the documented keys loads
    lab = tmp_path / "downtown-2d.toml"
    lab.write_text(
        "decks = 2\nspots = 6\nmin_bet = 10\nmax_bet = \"500\"\ndealer_hits_soft_17 = true\nhole_card = \"peek\"\n"
        "peek_on = [\"A\", \"T\"]\ndealer_blackjack_takes = \"original\"\nnatural_pays = \"3:2\"\nties = \"push\"\n"
        "double_on = \"any\"\ndouble_for_less = false\ndouble_after_split = true\nsplit_by = \"rank\"\nmax_hands = 4\n"
        "resplit_aces = false\nsplit_aces_one_card = true\ninsurance = \"up_to_half\"\neven_money = true\n"
        "surrender = \"late\"\nburn = 1\npenetration = 0.7\ndeck_change_hours = 8\n",
        encoding="utf-8",
    )
    assert main(["profiles", str(lab)]) == 0
    assert capsys.readouterr().out == f"{lab}: ok (downtown-2d)\n"


def test_an_unknown_profile_exits_2_with_one_line_naming_it_and_the_shipped_ones() -> None:
    r = tablectl("profiles", "atlantis")
    assert r.returncode == 2
    assert r.stdout == ""
    assert r.stderr.count("\n") == 1 and r.stderr.endswith("\n"), r.stderr
    assert r.stderr.startswith("tablectl profiles: ") and "'atlantis'" in r.stderr
    for path in SHIPPED:
        assert path.stem in r.stderr  # the message says what would have worked


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("decks = 9\n", "decks"),  # DESIGN: decks 1 to 8
        ('natural_pays = "7:5"\n', "natural_pays"),
        ("shuffle_machine = true\n", "shuffle_machine: unknown key"),
        ("decks = \n", "not valid TOML"),
    ],
    ids=["decks-out-of-range", "bad-natural-payout", "unknown-key", "not-toml"],
)
def test_a_bad_profile_file_exits_2_with_one_line_naming_the_file_and_the_key(
    tmp_path: Path, text: str, named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(text, encoding="utf-8")
    assert main(["profiles", str(bad)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and str(bad) in err and named in err, err


def test_a_missing_profile_file_exits_2_with_one_line(tmp_path: Path) -> None:
    r = tablectl("profiles", str(tmp_path / "nowhere.toml"))
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr.count("\n") == 1 and "nowhere.toml" in r.stderr and "no such profile file" in r.stderr


def test_a_profile_file_that_is_not_utf8_exits_2_with_one_line(tmp_path: Path) -> None:
    latin1 = tmp_path / "cafe.toml"
    latin1.write_bytes('description = "Café de Paris"\n'.encode("latin-1"))
    r = tablectl("profiles", str(latin1))
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr.count("\n") == 1 and "cafe.toml" in r.stderr, r.stderr
