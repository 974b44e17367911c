"""Every component of ``anchor_dir``'s path is free of symbolic links (issue #33, item 5).

The anchor is kept apart so that a state directory put back from a backup is caught; a link anywhere on its path
lets whoever can change the link point the table at another folder (an older anchor that agrees with an older
journal). The code before checked only the last component: a link in a parent folder was followed silently. Now
``tablectl run`` and the demo refuse it in one line, exit 2, naming the link.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.service.test_run import _config

TABLECTL = [sys.executable, "-m", "controller.cli"]


def _linked(tmp_path: Path) -> Path:
    """``tmp/link`` -> ``tmp/real``: a parent folder that is a symbolic link."""
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "link")
    return tmp_path / "link"


def test_run_refuses_an_anchor_dir_under_a_symlinked_parent(tmp_path: Path) -> None:
    link = _linked(tmp_path)
    path = _config(tmp_path, "mqtt://127.0.0.1:1883", tmp_path / "nowhere")
    text = path.read_text().replace(f'anchor_dir = "{tmp_path / "anchors"}"', f'anchor_dir = "{link / "anchors"}"')
    path.write_text(text)
    done = subprocess.run([*TABLECTL, "run", "--config", str(path), "--new-journal"], capture_output=True, text=True,
                          timeout=60)
    line = done.stderr.strip()
    assert done.returncode == 2, line
    assert len(line.splitlines()) == 1 and "Traceback" not in line, line
    assert f"anchor_dir {link / 'anchors'}: {link} is a symbolic link (to {tmp_path / 'real'})" in line, line
    assert not (tmp_path / "real" / "anchors").exists()  # nothing written through the link


def test_the_demo_refuses_anchors_under_a_symlinked_state_home(tmp_path: Path) -> None:
    link = _linked(tmp_path)
    env = {**os.environ, "XDG_STATE_HOME": str(link / "xdg")}
    done = subprocess.run([*TABLECTL, "demo", "--rounds", "1", "--speed", "max", "--state-dir", str(tmp_path / "s"),
                           "--no-dashboard", "--quiet"], env=env, capture_output=True, text=True, timeout=120)
    line = done.stderr.strip()
    assert done.returncode == 2, line
    assert len(line.splitlines()) == 1 and "Traceback" not in line, line
    assert f"{link} is a symbolic link" in line, line


def test_a_real_path_is_taken(tmp_path: Path) -> None:
    from controller.journal.anchor import Anchor

    anchor = Anchor(tmp_path / "real" / "deeper" / "anchors", "t01", b"k" * 32)  # not made yet: no link either
    assert anchor.directory == tmp_path / "real" / "deeper" / "anchors"
