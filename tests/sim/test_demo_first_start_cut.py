"""A demo killed in its first start, after its journal key was made and before any journal was, resumes (it was
refused for good: "no such journal (a new journal only on purpose ...)"; met by the kill-and-restart test under load).
A state dir where any table's journal or anchor exists still refuses each missing journal
(tests/service/test_anchor_witnesses.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(300)

TABLECTL = [sys.executable, "-m", "controller.cli"]


def _demo(state: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TABLECTL, "demo", "--rounds", "1", "--speed", "max", "--no-dashboard", "--quiet",
                           "--state-dir", str(state)], capture_output=True, text=True, timeout=240, env=env)


def test_a_state_dir_with_only_its_key_starts_its_journals(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "xdg")}
    first = tmp_path / "first"
    assert _demo(first, env).returncode == 0
    cut = tmp_path / "cut"  # what a first start killed between its key and its journal leaves
    cut.mkdir(mode=0o700)
    for name in ("journal.key", "demo.json"):
        shutil.copy2(first / name, cut / name)
    done = _demo(cut, {**env, "XDG_STATE_HOME": str(tmp_path / "xdg-cut")})  # its own anchors: none yet
    assert done.returncode == 0, done.stderr
    assert (cut / "t01.journal").exists()
    shutil.rmtree(cut / "broker")  # (its embedded broker's files, unrelated) the same key, first's anchors: refused
    for side in cut.glob("t01.journal*"):
        side.unlink()
    again = _demo(cut, env)
    assert again.returncode == 2 and "t01.journal: missing, but its anchor" in again.stderr, again.stderr
