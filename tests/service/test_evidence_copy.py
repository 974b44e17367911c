"""``tablectl journal verify`` and ``tablectl recall`` on a read-only evidence copy, and verify's exit status when no
witness vouched (issue #33, item 7; DESIGN "Journal integrity and game recall").

A lab gets a journal as a file and a folder without write bits. The code before failed on it ("unable to open
database file": SQLite in WAL mode wanted a ``-shm`` beside it), and ``journal verify`` exited 0 when no witness
vouched, so a truncated copy checked away from the table passed. Now both read it without writing anything beside it,
and verify exits 0 only when a witness vouched, 3 when every row checks but none did.

The copy is made unwritable with its mode bits and, for root (whom mode bits do not stop), ``chattr +i``.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.journal import Journal

TABLECTL = [sys.executable, "-m", "controller.cli"]


def _immutable(paths: list[Path], on: bool) -> None:
    if os.geteuid() != 0:
        return
    done = subprocess.run(["chattr", "+i" if on else "-i", *map(str, paths)], capture_output=True, text=True)
    if on and done.returncode != 0:
        pytest.skip(f"running as root and chattr +i is not available: {done.stderr.strip()}")


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A demo's state directory and anchors."""
    base = tmp_path_factory.mktemp("played")
    env = {**os.environ, "XDG_STATE_HOME": str(base / "xdg")}
    done = subprocess.run([*TABLECTL, "demo", "--rounds", "3", "--seed", "4", "--speed", "max", "--state-dir",
                           str(base / "state"), "--no-dashboard", "--quiet"], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return base / "state", base / "xdg" / "tablectl" / "anchors"


@pytest.fixture
def evidence(played: tuple[Path, Path], tmp_path: Path) -> Iterator[Path]:
    """The journal and its key as a lab gets them: a folder and files without write bits."""
    state, _ = played
    folder = tmp_path / "evidence"
    folder.mkdir()
    for name in ("t01.journal", "journal.key"):
        shutil.copyfile(state / name, folder / name)
        os.chmod(folder / name, 0o400)
    os.chmod(folder, 0o500)
    files = [folder / "t01.journal", folder / "journal.key", folder]
    _immutable(files, True)
    try:
        yield folder
    finally:
        _immutable(files, False)
        os.chmod(folder, 0o700)


def _tablectl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TABLECTL, *args], capture_output=True, text=True, timeout=120)


def test_verify_and_recall_read_a_read_only_copy_and_write_nothing_beside_it(
        evidence: Path, played: tuple[Path, Path]) -> None:
    _, anchors = played
    journal, key = evidence / "t01.journal", evidence / "journal.key"
    assert not os.access(evidence, os.W_OK) or os.geteuid() == 0
    done = _tablectl("journal", "verify", str(journal), "--key", str(key), "--anchor-dir", str(anchors))
    assert done.returncode == 0, done.stderr
    assert "vouched for by its anchor" in done.stdout, done.stdout
    recall = _tablectl("recall", str(journal), "--key", str(key), "--last", "2", "--json")
    assert recall.returncode == 0, recall.stderr
    assert len(json.loads(recall.stdout)) == 2
    assert sorted(p.name for p in evidence.iterdir()) == ["journal.key", "t01.journal"]  # no -wal, no -shm
    assert stat.S_IMODE(journal.stat().st_mode) == 0o400


def test_verify_with_no_witness_vouching_exits_3_not_0(evidence: Path, tmp_path: Path) -> None:
    """A copy checked away from the table (no anchor there): every row checks, but nothing says it is whole."""
    journal, key = evidence / "t01.journal", evidence / "journal.key"
    nowhere = tmp_path / "no-anchors"
    done = _tablectl("journal", "verify", str(journal), "--key", str(key), "--anchor-dir", str(nowhere))
    assert done.returncode == 3, done.stdout + done.stderr
    assert len(done.stdout.strip().splitlines()) == 1, done.stdout
    assert "vouched for by none" in done.stdout, done.stdout
    as_json = _tablectl("journal", "verify", str(journal), "--key", str(key), "--anchor-dir", str(nowhere), "--json")
    assert as_json.returncode == 3
    found = json.loads(as_json.stdout)
    assert found["ok"] is True and found["vouched"] == [], found


def test_a_live_journal_is_still_read_beside_its_wal(played: tuple[Path, Path], tmp_path: Path) -> None:
    """A writable journal with a ``-wal`` (a table's, or a crashed one's copy): the WAL's commits are read."""
    state, anchors = played
    folder = tmp_path / "live"
    shutil.copytree(state, folder)
    with Journal(folder / "t01.journal", key=bytes.fromhex((folder / "journal.key").read_text().strip())) as j:
        before = j.last_seq
    done = _tablectl("journal", "verify", str(folder / "t01.journal"), "--anchor-dir", str(anchors), "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["last_seq"] == before
