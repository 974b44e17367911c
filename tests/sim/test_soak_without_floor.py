"""``tablectl soak --cluster 3`` without the floor extra: one line and exit 2, nothing started (issue 33: a
traceback). The extra's missing module is simulated: ``sys.modules[name] = None`` makes its import fail."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

RUN = """
import sys
sys.modules[{missing!r}] = None  # as if the floor extra were not installed
from controller.cli import main
sys.exit(main(["soak", "--cluster", "3", "--tables", "1", "--rounds", "1", "--seed", "1", "--state-dir", {d!r}]))
"""


@pytest.mark.parametrize("missing", ["bcrypt", "nkeys", "nats"])
def test_soak_on_a_cluster_without_the_floor_extra_says_so_in_one_line(tmp_path: Path, missing: str) -> None:
    d = tmp_path / "soak"
    done = subprocess.run([sys.executable, "-c", RUN.format(missing=missing, d=str(d))], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    line = done.stderr.strip()
    assert len(line.splitlines()) == 1, line
    assert line.startswith("tablectl soak: --cluster") and "floor" in line and missing in line, line
    assert not (d / "cluster").exists()
