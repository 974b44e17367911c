"""The readers' ``--db URL`` when the recorder's database cannot be reached now: one line naming it, exit 1 (a
runtime failure, not bad input: ``controller/cli/recorder_db.py``), the same for every reader."""

from __future__ import annotations

import pytest

from controller.cli import main
from controller.mqtt.ports import free_port


@pytest.mark.parametrize("command", [["recall", "--table", "t01"], ["recall", "--dealer", "a.ames"], ["ratings"],
                                     ["report"], ["report", "--by", "dealer"]])
def test_a_recorder_database_that_cannot_be_reached_is_one_line_and_exit_1(
        command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    url = f"postgresql://reader@127.0.0.1:{free_port()}/recorder"
    assert main([command[0], "--db", url, *command[1:]]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"tablectl {command[0]}: --db: {url}: cannot connect") and err.count("\n") == 1, err
