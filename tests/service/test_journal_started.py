"""A journal created on purpose names itself in its first published record, ``journal_started`` (with who and
why when given), so the central recorder can follow it (docs/journal.md, "The recorder")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from controller.cli import main as tablectl
from controller.journal.admission import Adoption, open_table_journal


def _open(tmp_path: Path, adopt: Adoption | None = None, *, new: bool = True) -> tuple[str, list[dict[str, object]]]:
    """The journal's id and its published records, opened as the table opens it."""
    journal = open_table_journal(tmp_path / "state" / "t01.journal", table_id="t01", key_file=tmp_path / "key",
                                 anchor_dir=tmp_path / "anchors", new=new, adopt=adopt)
    try:
        assert journal.last_input_id == 0
        return journal.journal_id, [json.loads(r.body) for r in journal.records()]
    finally:
        journal.close()


def test_a_new_journal_starts_with_journal_started_naming_it_and_who_started_it(tmp_path: Path) -> None:
    (tmp_path / "state").mkdir()
    journal_id, [first] = _open(tmp_path, Adoption("s.jones", "table PC replaced, ticket 4412"))
    assert (first["seq"], first["type"], first["journal_id"]) == (1, "journal_started", journal_id)
    assert (first["operator"], first["reason"]) == ("s.jones", "table PC replaced, ticket 4412")
    # its next start adds nothing: started once
    assert [r["seq"] for r in _open(tmp_path, new=False)[1]] == [1]


def test_without_who_it_still_names_the_journal(tmp_path: Path) -> None:
    (tmp_path / "state").mkdir()
    journal_id, [first] = _open(tmp_path)
    assert (first["type"], first["journal_id"]) == ("journal_started", journal_id) and "operator" not in first


@pytest.mark.parametrize(("args", "message"), [
    (["--new-journal", "--operator", "s.jones"], "--new-journal takes --operator NAME and --reason TEXT together"),
    (["--new-journal", "--reason", "disk"], "--new-journal takes --operator NAME and --reason TEXT together"),
    (["--operator", "s.jones", "--reason", "disk"], "--operator and --reason go with --adopt-journal or --new-journal"),
    (["--new-journal", "--operator", "S Jones", "--reason", "disk"], "--operator 'S Jones': a user name"),
])
def test_who_started_a_journal_is_given_whole_or_not_at_all(tmp_path: Path, args: list[str], message: str,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert tablectl(["run", "--config", str(tmp_path / "absent.toml"), *args]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err
