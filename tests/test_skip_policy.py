"""A skip fails the run in CI (``CI=true``) and stays a skip elsewhere: checked on a throwaway test file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(("ci", "code", "says"), [("true", 1, "skipped in CI"), ("", 0, "1 skipped")])
def test_a_skip_is_a_failure_only_in_ci(tmp_path: Path, ci: str, code: int, says: str) -> None:
    (tmp_path / "test_needs_a_tool.py").write_text(
        "import pytest\n\ndef test_it() -> None:\n    pytest.skip('mosquitto is not installed')\n")
    env = {**os.environ, "CI": ci}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "tests.skip_policy", "-p", "no:cacheprovider",
                           "--rootdir", str(tmp_path), str(tmp_path)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == code, done.stdout + done.stderr
    assert says in done.stdout, done.stdout
    if ci:
        assert "mosquitto is not installed" in done.stdout, "the failure says why it skipped"
