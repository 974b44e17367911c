"""``tablectl demo`` run inside a host program (a test session, mutmut's runner) writes to the standard output of the
moment it runs, not to the one there was when :mod:`controller.sim.demo` was first imported: that one may since have
been replaced and closed ("I/O operation on closed file" at the demo's first line, which kept the journal's mutation
benchmark from running, docs/testing.md)."""

from __future__ import annotations

import importlib
import io
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import controller.sim.demo
from controller.cli import main as tablectl


@pytest.fixture
def demo_imported_under_another_stdout(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The demo's module imported while another stream was ``sys.stdout``, that stream closed since."""
    earlier = io.StringIO()
    with monkeypatch.context() as m:
        m.setattr(sys, "stdout", earlier)
        importlib.reload(controller.sim.demo)
    earlier.close()
    yield
    importlib.reload(controller.sim.demo)  # as imported under this session's own stdout


@pytest.mark.usefixtures("demo_imported_under_another_stdout")
def test_a_demo_prints_to_the_stdout_it_runs_with(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    code = tablectl(["demo", "--tables", "1", "--rounds", "1", "--seed", "5", "--speed", "max",
                     "--state-dir", str(tmp_path / "state"), "--no-dashboard", "--quiet"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "MQTT broker: " in out.out
