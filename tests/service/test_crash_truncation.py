"""A journal that lost commits never plays on unseen (issue #33, DESIGN "Journal integrity and game recall": the
anchor never lags what a crash can keep).

The move, on real files and a real process: a demo plays, is killed (``kill -9``), and the last commits are cut
off its journal's ``-wal`` with ``truncate`` (no key, no sqlite3). The chain left is valid. The anchor used to be
written every 16 commits, so a journal cut back by fewer than that restarted silently (``journal verify`` said
"vouched for by its anchor at seq 234" on a journal cut back from 244). Now it is written with every commit that
adds rows, before anything of that commit leaves the process: every cut, of one commit, two or many, is refused
at start naming the anchor and both positions.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.service.wal_cut import cut_back, last_seq

TABLECTL = [sys.executable, "-m", "controller.cli"]
pytestmark = pytest.mark.xdist_group("crash_truncation")




def _demo(state: Path, env: dict[str, str], rounds: int) -> list[str]:
    return [*TABLECTL, "demo", "--tables", "1", "--rounds", str(rounds), "--seed", "7", "--speed", "fast",
            "--state-dir", str(state), "--no-dashboard", "--quiet"]


@pytest.fixture(scope="module")
def crashed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A demo's state directory and anchors as a ``kill -9`` in mid-play left them (kept aside: each case copies)."""
    base = tmp_path_factory.mktemp("crashed")
    env = {**os.environ, "XDG_STATE_HOME": str(base / "xdg")}
    state = base / "state"
    proc = subprocess.Popen(_demo(state, env, 100_000), env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    journal = state / "t01.journal"
    try:
        deadline = time.monotonic() + 60
        while last_seq(journal) < 120:
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            assert time.monotonic() < deadline, "the demo did not get to seq 120 in 60 s"
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    assert Path(f"{journal}-wal").stat().st_size > 0, "kill -9 left no -wal (checkpointed?)"
    return base, env


@pytest.mark.parametrize("commits", [1, 2, 40])
def test_a_journal_cut_back_after_a_crash_is_refused_by_its_anchor(
        crashed: tuple[Path, dict[str, str]], tmp_path: Path, commits: int) -> None:
    base, env = crashed
    case = tmp_path / "case"
    shutil.copytree(base, case, symlinks=True)
    env = {**env, "XDG_STATE_HOME": str(case / "xdg")}
    journal = case / "state" / "t01.journal"
    (_, whole_seq), (_, cut_seq) = cut_back(journal, commits)
    assert cut_seq < whole_seq
    done = subprocess.run(_demo(case / "state", env, 1), env=env, capture_output=True, text=True, timeout=120)
    err = done.stderr.strip()
    assert done.returncode == 2, f"a journal cut back by {commits} commit(s) started: {err}"
    assert len(err.splitlines()) == 1, err
    found = re.search(r"behind its anchor (\S+): the journal ends at seq (\d+) but its anchor \S+ holds seq (\d+)",
                      err)
    assert found, err
    assert found[1] == str(case / "xdg" / "tablectl" / "anchors" / found[1].rsplit("/", 1)[1])
    assert int(found[2]) == cut_seq
    assert int(found[3]) == whole_seq, f"the anchor lags the journal the crash kept (seq {whole_seq}): {err}"


def _until(done: Any, proc: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + 60
    while not done():
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        assert time.monotonic() < deadline, f"the demo did not get to {what} in 60 s"
        time.sleep(0.02)


@pytest.mark.parametrize("tamper", ["deleted", "replaced by an older copy", "moved away"])
def test_an_anchor_tampered_with_while_the_table_plays_is_written_again_before_a_cut_back(
        tmp_path: Path, tamper: str) -> None:
    """The anchor's file is checked once each commit's news has left (off the card's path, issue #40), no longer
    before its write: one deleted, swapped for an older copy or moved away while the table plays is written again
    at its path, so a crash and a cut back after it are refused as before."""
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "xdg")}
    state, anchors = tmp_path / "state", tmp_path / "xdg" / "tablectl" / "anchors"
    journal = state / "t01.journal"
    proc = subprocess.Popen(_demo(state, env, 100_000), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _until(lambda: last_seq(journal) >= 40, proc, "seq 40")
        (anchor,) = anchors.glob("t01.*.anchor")
        older = anchor.read_bytes()
        _until(lambda: last_seq(journal) >= 80, proc, "seq 80")
        if tamper == "deleted":
            anchor.unlink()
        elif tamper == "moved away":
            anchor.rename(anchors / "elsewhere")
        else:
            swap = anchors / "swap"
            swap.write_bytes(older)
            os.replace(swap, anchor)
        tampered = last_seq(journal)
        _until(lambda: last_seq(journal) >= tampered + 20, proc, f"seq {tampered + 20}")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    (_, whole_seq), (_, cut_seq) = cut_back(journal, 1)
    done = subprocess.run(_demo(state, env, 1), env=env, capture_output=True, text=True, timeout=120)
    err = done.stderr.strip()
    assert done.returncode == 2, f"a journal cut back after its anchor was {tamper} started: {err}"
    found = re.search(r"the journal ends at seq (\d+) but its anchor \S+ holds seq (\d+)", err)
    assert found, err
    assert (int(found[1]), int(found[2])) == (cut_seq, whole_seq), err
