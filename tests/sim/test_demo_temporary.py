"""A demo without ``--state-dir`` leaves nothing behind (issue #35: journals stayed in /tmp/tablectl-demo-*, their
anchors in the user's state folder); the subscribe command it prints asks for one message, not the whole tree
(``#`` printed 9 MB in 45 s)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def test_a_demo_without_a_state_dir_removes_its_journals_and_anchors(tmp_path: Path) -> None:
    tmp, xdg = tmp_path / "tmp", tmp_path / "xdg"
    tmp.mkdir()
    done = subprocess.run([sys.executable, "-m", "controller.cli", "demo", "--rounds", "2", "--speed", "max",
                           "--no-dashboard", "--quiet"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "TMPDIR": str(tmp), "XDG_STATE_HOME": str(xdg)})
    assert done.returncode == 0, done.stderr
    assert "removed at exit" in done.stdout
    assert not list(tmp.glob("tablectl-demo-*")), [str(p) for p in tmp.rglob("*")]
    assert not list((xdg / "tablectl" / "anchors").glob("*.anchor")), "the demo's anchors stayed"
    [subscribe] = [line for line in done.stdout.splitlines() if line.startswith("Subscribe:")]
    assert "/t01/state' -C 1" in subscribe and "/#" not in subscribe, subscribe


def test_a_demo_on_a_state_dir_keeps_it(tmp_path: Path) -> None:
    state, xdg = tmp_path / "state", tmp_path / "xdg"
    done = subprocess.run([sys.executable, "-m", "controller.cli", "demo", "--rounds", "2", "--speed", "max",
                           "--no-dashboard", "--quiet", "--state-dir", str(state)], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "XDG_STATE_HOME": str(xdg)})
    assert done.returncode == 0, done.stderr
    assert (state / "t01.journal").exists() and list((xdg / "tablectl" / "anchors").glob("t01.*.anchor"))
    assert "removed at exit" not in done.stdout
