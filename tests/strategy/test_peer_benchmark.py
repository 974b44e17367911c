"""benchmarks/peer.py on bad input: the peer is not a dependency, so a machine without it gets one line saying
what to install and exit 2, never a traceback; numbers below 1 the same."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PEER = ROOT / "benchmarks" / "peer.py"


def _run(args: list[str], path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(path)}
    return subprocess.run([sys.executable, str(PEER), *args], env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(("peer", "install"), [("jackblack", "pip install jackblack==0.8.0"),
                                               ("py21", "pip install py21==1.6.0 altair")])
def test_a_missing_peer_exits_2_naming_what_to_install(tmp_path: Path, peer: str, install: str) -> None:
    # whether or not the peer is installed here, a module of its name that cannot be imported comes first
    (tmp_path / f"{peer}.py").write_text("raise ImportError('not installed')\n")
    done = _run(["--peer", peer, "--rounds", "10", "--repeat", "1"], tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(f"peer.py: the peer {peer} is not installed")
    assert done.stderr.rstrip().endswith(install)


@pytest.mark.parametrize("args", [["--rounds", "0"], ["--repeat", "0"]])
def test_rounds_or_repeat_below_one_exit_2_in_one_line(tmp_path: Path, args: list[str]) -> None:
    done = _run(args, tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == "peer.py: --rounds and --repeat must be at least 1\n"
