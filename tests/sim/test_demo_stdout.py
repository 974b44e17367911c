"""``tablectl demo`` run inside a host program (a test session, mutmut's runner) writes to the standard output of the
moment it runs, not to the one there was when :mod:`controller.sim.demo` was first imported: that one may since have
been replaced and closed ("I/O operation on closed file" at the demo's first line, which kept the journal's mutation
benchmark from running, docs/testing.md). Played in a child Python, so no other test sees the module imported so."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

HOST = """
import io, sys
earlier, sys.stdout = sys.stdout, io.StringIO()
import controller.sim.demo  # imported while another stream is sys.stdout
sys.stdout.close()
sys.stdout = earlier
from controller.cli import main
sys.exit(main(["demo", "--tables", "1", "--rounds", "1", "--seed", "5", "--speed", "max",
               "--state-dir", sys.argv[1], "--no-dashboard", "--quiet"]))
"""


def test_a_demo_prints_to_the_stdout_it_runs_with_not_the_one_at_import(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "xdg")}
    done = subprocess.run([sys.executable, "-c", HOST, str(tmp_path / "state")], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "MQTT broker: " in done.stdout
