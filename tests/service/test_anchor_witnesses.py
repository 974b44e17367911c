"""Nothing starts a table from zero silently: the journal's witnesses (DESIGN, "Journal integrity and game
recall"; ``docs/journal.md``, "Witnesses").

Each case is an insider's move on real files, tried as a lab tried it on the code before: a missing anchor
was silence, so a rolled-back, emptied or foreign journal started when the anchor was deleted, its folder
moved, ``XDG_STATE_HOME`` changed or the journal path made a symlink to an older copy (the anchor was keyed by
the resolved path). Now the anchor is keyed by the table id (and the key), checks the journal's own id, and a
journal no witness vouches for is refused unless a person adopts it (journaled). The broker's part, under the
ACL ``tablectl broker-config`` generates, is in ``tests/mqtt/test_pit_witness.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import pytest

from controller.cli import main as tablectl
from controller.mqtt.ports import free_port
from controller.sim import demo as _demo_module  # noqa: F401  # now: run_demo's ``out`` default is this sys.stdout

ROUNDS = 5
ROOT = Path(__file__).resolve().parents[2]


def _xdg() -> Path:
    return Path(os.environ["XDG_STATE_HOME"])


def _anchors() -> Path:
    return _xdg() / "tablectl" / "anchors"


@pytest.fixture(autouse=True)
def _anchors_in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The demo keeps its anchors in the user's state folder: here, one of the test's own."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))


def _demo(state: Path, rounds: int, capsys: pytest.CaptureFixture[str], *extra: str,
          tables: int = 1) -> tuple[int, str]:
    code = tablectl(["demo", "--tables", str(tables), "--rounds", str(rounds), "--seed", "3", "--speed", "max",
                     "--state-dir", str(state), "--no-dashboard", "--quiet", *extra])
    return code, capsys.readouterr().err


def _last_seq(journal: Path) -> int:
    with closing(sqlite3.connect(journal)) as db:
        return int(db.execute("SELECT COALESCE(MAX(seq), 0) FROM outbox").fetchone()[0])


def _refused(state: Path, capsys: pytest.CaptureFixture[str], *expected: str, rounds: int = ROUNDS + 3,
             tables: int = 1) -> str:
    before = {p.name: _last_seq(p) for p in state.glob("*.journal") if not p.is_symlink() and p.stat().st_size}
    code, err = _demo(state, rounds, capsys, tables=tables)
    line = err.strip()
    assert code == 2, f"the table went online (exit {code}): {err}"
    assert len(line.splitlines()) == 1 and "Traceback" not in line, err
    for part in expected:
        assert part in line, line
    after = {p.name: _last_seq(p) for p in state.glob("*.journal") if not p.is_symlink() and p.stat().st_size}
    assert after == before, "nothing may be played on a refused journal"
    return line


@dataclass
class Rolled:
    """A demo state dir after ROUNDS rounds (``backup``), then played 3 more (``live``)."""

    live: Path
    backup: Path
    anchors_backup: Path
    behind: int
    ahead: int

    def put_back(self) -> None:
        shutil.rmtree(self.live)
        shutil.copytree(self.backup, self.live)


@pytest.fixture
def rolled(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Rolled:
    live, backup = tmp_path / "state", tmp_path / "backup"
    assert _demo(live, ROUNDS, capsys, tables=2)[0] == 0
    shutil.copytree(live, backup)
    shutil.copytree(_anchors(), tmp_path / "anchors-backup")
    behind = _last_seq(live / "t01.journal")
    assert _demo(live, ROUNDS + 3, capsys, tables=2)[0] == 0
    return Rolled(live, backup, tmp_path / "anchors-backup", behind, _last_seq(live / "t01.journal"))


NOBODY = "no witness vouches for it"
ADOPT = "tablectl demo --state-dir DIR ... --adopt-journal --operator NAME --reason TEXT"


# -- a missing anchor is not silence -----------------------------------------------------------------------


def test_a_rolled_back_journal_with_its_anchor_deleted_is_refused_not_started(
        rolled: Rolled, capsys: pytest.CaptureFixture[str]) -> None:
    rolled.put_back()
    shutil.rmtree(_anchors())
    line = _refused(rolled.live, capsys, "t01.journal: no witness vouches for it", ADOPT, tables=2)
    assert "no anchor of t01 under this key" in line, line


def test_a_rolled_back_journal_with_its_anchor_folder_moved_is_refused(
        rolled: Rolled, capsys: pytest.CaptureFixture[str]) -> None:
    rolled.put_back()
    _anchors().rename(_xdg() / "elsewhere")
    _refused(rolled.live, capsys, NOBODY, ADOPT, tables=2)


def test_a_rolled_back_journal_under_another_xdg_state_home_is_refused(
        rolled: Rolled, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    rolled.put_back()
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "another-xdg"))
    _refused(rolled.live, capsys, NOBODY, tables=2)
    # the honest journal (not rolled back) is refused the same way: nobody can tell them apart without a witness
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "a-third-xdg"))
    _refused(rolled.backup, capsys, NOBODY, tables=2)


def test_a_journal_path_made_a_symlink_to_an_older_copy_is_behind_its_anchor(
        rolled: Rolled, capsys: pytest.CaptureFixture[str]) -> None:
    journal = rolled.live / "t01.journal"
    journal.unlink()
    journal.symlink_to(rolled.backup / "t01.journal")  # the anchor was keyed by the resolved path: none was found
    line = _refused(rolled.live, capsys, "t01.journal: behind its anchor", tables=2)
    assert f"the journal ends at seq {rolled.behind} but its anchor" in line, line
    assert f"holds seq {rolled.ahead} (input " in line, line


def test_another_tables_journal_in_its_place_is_refused_naming_both_journals(
        rolled: Rolled, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copyfile(rolled.live / "t02.journal", rolled.live / "t01.journal")
    ids = {}
    for t in ("t01", "t02"):
        with closing(sqlite3.connect(rolled.backup / f"{t}.journal")) as db:
            ids[t] = db.execute("SELECT value FROM meta WHERE key = 'journal_id'").fetchone()[0]
    line = _refused(rolled.live, capsys, "t01.journal: refused by its anchor", tables=2)
    assert f"it records journal {ids['t01']} for table t01, but this is journal {ids['t02']}" in line, line
    # and with t01's anchor gone too, nobody vouches: still refused
    for anchor in _anchors().glob("t01.*.anchor"):
        anchor.unlink()
    _refused(rolled.live, capsys, NOBODY, tables=2)


def test_a_new_empty_journal_or_an_empty_file_in_its_place_is_refused(
        rolled: Rolled, capsys: pytest.CaptureFixture[str]) -> None:
    from controller.journal import Journal
    from controller.journal.anchor import load_key

    journal = rolled.live / "t01.journal"
    for side in rolled.live.glob("t01.journal*"):
        side.unlink()
    with Journal(journal, key=load_key(rolled.live / "journal.key")) as j:  # a valid chain of nothing, same key
        new_id = j.journal_id
    line = _refused(rolled.live, capsys, "refused by its anchor", f"but this is journal {new_id}", tables=2)
    assert "another table's journal, a new one or a swapped file" in line
    for side in rolled.live.glob("t01.journal*"):
        side.unlink()
    journal.write_bytes(b"")
    _refused(rolled.live, capsys, "t01.journal: an empty file, but its anchor", tables=2)
    for anchor in _anchors().glob("t01.*.anchor"):
        anchor.unlink()
    _refused(rolled.live, capsys, "t01.journal: an empty file, not a journal (a new journal only on purpose: "
             "a demo on a fresh --state-dir)", tables=2)


def test_a_demo_creates_no_journal_in_a_state_dir_it_resumes(rolled: Rolled,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    for side in rolled.live.glob("t02.journal*"):
        side.unlink()
    for anchor in _anchors().glob("t02.*.anchor"):
        anchor.unlink()  # journal and anchor both gone: before, the demo started t02 again from zero
    _refused(rolled.live, capsys, "t02.journal: no such journal (a new journal only on purpose: a demo on a "
             "fresh --state-dir)", tables=2)


# -- the anchor itself, attacked --------------------------------------------------------------------------------


def test_an_anchor_replaced_by_another_tables_anchor_is_refused(rolled: Rolled,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    (t01,) = _anchors().glob("t01.*.anchor")
    (t02,) = _anchors().glob("t02.*.anchor")
    shutil.copyfile(t02, t01)
    _refused(rolled.live, capsys, "refused by its anchor", "it is the anchor of table 't02', not t01", tables=2)


@pytest.mark.parametrize("damage", ["signature", "json", "fields", "symlink"])
def test_an_anchor_that_does_not_check_is_refused_in_one_line(rolled: Rolled, damage: str,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    (anchor,) = _anchors().glob("t01.*.anchor")
    data = json.loads(anchor.read_text())
    if damage == "signature":
        data["seq"] += 100  # an anchor pushed ahead (or back) by hand
        anchor.write_text(json.dumps(data))
        expected = "its signature does not check under this key"
    elif damage == "json":
        anchor.write_text('{"journal_id": "x", "seq": ')
        expected = "unreadable (not an anchor's JSON"
    elif damage == "fields":
        anchor.write_text(json.dumps(["not", "an", "anchor"]))
        expected = "unreadable (not an anchor)"
    else:
        shutil.copyfile(anchor, rolled.backup / "kept.anchor")
        anchor.unlink()
        anchor.symlink_to(rolled.backup / "kept.anchor")
        expected = "unreadable (a symbolic link)"
    _refused(rolled.live, capsys, "t01.journal: refused by its anchor", expected, tables=2)


def test_an_anchor_copied_back_from_a_backup_only_vouches_for_where_it_was(
        rolled: Rolled, capsys: pytest.CaptureFixture[str]) -> None:
    """An older anchor of the same journal (same id, an earlier position) still vouches: the journal went on
    from there. It is no rollback of the journal: the anchor is rewritten at this start."""
    shutil.rmtree(_anchors())
    shutil.copytree(rolled.anchors_backup, _anchors())
    code, err = _demo(rolled.live, ROUNDS + 4, capsys, tables=2)
    assert code == 0, err
    (anchor,) = _anchors().glob("t01.*.anchor")
    assert json.loads(anchor.read_text())["seq"] == _last_seq(rolled.live / "t01.journal") > rolled.ahead


# -- adopting a journal on purpose --------------------------------------------------------------------------


def test_a_journal_nobody_vouches_for_goes_online_only_when_adopted_and_the_adoption_is_journaled(
        rolled: Rolled, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.rmtree(_anchors())  # e.g. the table PC's anchor disk replaced
    _refused(rolled.live, capsys, NOBODY, tables=2)
    for operator, reason, why in [("S.Jones", "anchor disk replaced", "--operator 'S.Jones': a user name"),
                                  ("s.jone\u0455", "anchor disk replaced", "--operator 's.jone\u0455': a user name"),
                                  ("s.jones", "   ", "--reason: say why")]:
        code, err = _demo(rolled.live, ROUNDS + 4, capsys, "--adopt-journal", "--operator", operator, "--reason",
                          reason, tables=2)
        assert code == 2 and len(err.strip().splitlines()) == 1 and why in err, err
    code, err = _demo(rolled.live, ROUNDS + 3, capsys, "--adopt-journal", "--operator", "s.jones", tables=2)
    assert code == 2 and "--adopt-journal needs --operator NAME and --reason TEXT" in err, err
    code, err = _demo(rolled.live, ROUNDS + 4, capsys, "--adopt-journal", "--operator", "s.jones", "--reason",
                      "anchor disk replaced, ticket 4411", tables=2)
    assert code == 0, err
    for t in ("t01", "t02"):
        with closing(sqlite3.connect(rolled.live / f"{t}.journal")) as db:
            (body,) = db.execute("SELECT body FROM outbox WHERE body LIKE '%journal_adopted%'").fetchone()
        adopted = json.loads(body)
        assert adopted["seq"] == rolled.ahead + 1 if t == "t01" else True
        assert (adopted["operator"], adopted["reason"]) == ("s.jones", "anchor disk replaced, ticket 4411")
        assert "no anchor of" in adopted["witnesses"]
    done = subprocess.run([sys.executable, "-m", "controller.cli", "journal", "verify",
                           str(rolled.live / "t01.journal")], capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env={**os.environ})
    assert done.returncode == 0 and "vouched for by its anchor" in done.stdout, done.stdout + done.stderr
    code, err = _demo(rolled.live, ROUNDS + 5, capsys, tables=2)  # anchored again: an ordinary restart
    assert code == 0, err


# -- tablectl run ----------------------------------------------------------------------------------------------


def _run_config(tmp: Path, anchor_dir: Path | None = None) -> Path:
    """tests/service/test_run.py's table t05 (state in ``tmp/state``, anchors in ``tmp/anchors``), on a port
    where no broker listens."""
    from tests.service.test_run import _config

    config = _config(tmp, f"mqtt://127.0.0.1:{free_port()}", tmp / "no-devices")
    if anchor_dir is not None:
        text = config.read_text().replace(f'anchor_dir = "{tmp / "anchors"}"', f'anchor_dir = "{anchor_dir}"')
        config.write_text(text)
    return config


async def _start(config: Path, **kw: object) -> None:
    """``tablectl run`` up to its devices: a JournalError if the journal is refused; PortNotFound (the devices
    are absent here) once it is admitted."""
    from controller.service.runner import run_table
    from controller.service.settings import load_settings

    await run_table(load_settings(config), **kw)  # type: ignore[arg-type]


@pytest.fixture
def run_journal(tmp_path: Path) -> Iterator[Path]:
    """A table PC's journal made with ``--new-journal`` (run until its devices are found missing)."""
    import asyncio

    from drivers.errors import PortNotFound

    config = _run_config(tmp_path)
    with pytest.raises(PortNotFound):
        asyncio.run(_start(config, new_journal=True))
    yield config


async def test_run_without_new_journal_never_starts_from_zero_when_the_anchor_is_gone(run_journal: Path,
                                                                                   tmp_path: Path) -> None:
    from controller.journal import JournalError
    from drivers.errors import PortNotFound

    journal = tmp_path / "state" / "t05.journal"
    with pytest.raises(PortNotFound):
        await _start(run_journal)  # its anchor vouches
    shutil.rmtree(tmp_path / "anchors")
    for side in journal.parent.glob("t05.journal*"):
        side.unlink()
    journal.write_bytes(b"")  # emptied: before, the table chained a new journal into it and played from zero
    with pytest.raises(JournalError, match=r"t05.journal: an empty file, not a journal \(a new journal only on "
                                           r"purpose: tablectl run --config FILE --new-journal\)$"):
        await _start(run_journal)
    assert journal.stat().st_size == 0
    journal.unlink()
    with pytest.raises(JournalError, match=r"t05\.journal: no such journal"):
        await _start(run_journal)
    assert not journal.exists()


async def test_run_refuses_a_journal_nobody_vouches_for_unless_adopted(run_journal: Path, tmp_path: Path) -> None:
    from controller.journal import JournalError
    from controller.journal.admission import Adoption
    from drivers.errors import PortNotFound

    shutil.rmtree(tmp_path / "anchors")
    with pytest.raises(JournalError) as refused:
        await _start(run_journal)  # and the broker is not there to vouch either
    line = str(refused.value)
    assert "t05.journal: no witness vouches for it (its anchor" in line and "could not ask mqtt://" in line, line
    assert line.endswith("tablectl run --config FILE --adopt-journal --operator NAME --reason TEXT"), line
    with pytest.raises(PortNotFound):
        await _start(run_journal, adopt=Adoption("s.jones", "anchor disk replaced"))
    with pytest.raises(PortNotFound):
        await _start(run_journal)  # anchored again


def test_run_new_journal_is_refused_where_a_journal_exists_even_an_empty_file(run_journal: Path,
                                                                             tmp_path: Path) -> None:
    from tests.service.test_run import _run_sync

    done = _run_sync(["run", "--config", str(run_journal), "--new-journal"])
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().endswith("t05.journal: already exists (--new-journal only creates a journal; a "
                                        "journal is never started again from zero)"), done.stderr
    journal = tmp_path / "state" / "t05.journal"
    for side in journal.parent.glob("t05.journal*"):
        side.unlink()
    journal.write_bytes(b"")
    done = _run_sync(["run", "--config", str(run_journal), "--new-journal"])
    assert done.returncode == 2 and "already exists" in done.stderr, done.stderr
    done = _run_sync(["run", "--config", str(run_journal), "--new-journal", "--adopt-journal", "--operator", "a",
                      "--reason", "b"])
    assert done.returncode == 2 and "give one of them" in done.stderr, done.stderr


def test_run_refuses_an_anchor_dir_inside_the_state_dir_or_a_symlink(tmp_path: Path) -> None:
    from tests.service.test_run import _run_sync

    config = _run_config(tmp_path, tmp_path / "state" / "anchors")
    done = _run_sync(["run", "--config", str(config), "--new-journal"])
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "anchors: inside state_dir" in done.stderr, done.stderr
    (tmp_path / "real-anchors").mkdir()
    (tmp_path / "linked").symlink_to(tmp_path / "real-anchors")
    config = _run_config(tmp_path, tmp_path / "linked")
    done = _run_sync(["run", "--config", str(config), "--new-journal"])
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "linked: a symbolic link" in done.stderr, done.stderr


def test_a_table_pcs_anchor_never_defaults_inside_its_state_dir_or_home() -> None:
    """docs/deploy.md's layout: the service user's home is the state directory, /var/lib/tablectl. The anchor
    used to default to $XDG_STATE_HOME or ~/.local/state, inside it: restored with it, it caught no rollback."""
    from controller.service.settings import TableSettings

    fields = TableSettings.model_fields
    state_dir, anchor_dir = fields["state_dir"].default, fields["anchor_dir"].default
    assert state_dir == Path("/var/lib/tablectl")
    assert anchor_dir == Path("/var/lib/tablectl-anchor")
    assert not anchor_dir.is_relative_to(state_dir)
    deploy = (ROOT / "docs" / "deploy.md").read_text()
    assert "--home /var/lib/tablectl " in deploy and "/var/lib/tablectl-anchor" in deploy


# -- tablectl journal verify ----------------------------------------------------------------------------------


def test_journal_verify_says_which_witnesses_vouched_and_refuses_a_journal_behind_one(
        rolled: Rolled, tmp_path: Path) -> None:
    def verify(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "controller.cli", "journal", "verify", *args],
                              capture_output=True, text=True, cwd=ROOT, timeout=120, env={**os.environ})

    path = rolled.live / "t01.journal"
    done = verify(str(path))
    assert done.returncode == 0, done.stderr
    assert f"vouched for by its anchor {_anchors()}/t01." in done.stdout, done.stdout
    assert f" at seq {rolled.ahead}; " in done.stdout, done.stdout
    data = json.loads(verify(str(path), "--json").stdout)
    assert data["vouched"] == [w["witness"] for w in data["witnesses"]] and data["witnesses"][0]["seq"] == rolled.ahead
    moved = tmp_path / "moved-anchors"
    _anchors().rename(moved)
    done = verify(str(path), "--json")
    assert done.returncode == 3 and json.loads(done.stdout)["vouched"] == [], done.stdout  # intact, none vouched
    done = verify(str(path), "--anchor-dir", str(moved))
    assert done.returncode == 0 and "vouched for by its anchor" in done.stdout, done.stdout
    done = verify(str(rolled.backup / "t01.journal"), "--anchor-dir", str(moved))  # put back from the backup
    line = done.stderr.strip()
    assert done.returncode == 2 and len(line.splitlines()) == 1, line
    assert f"behind its anchor {moved}/t01." in line and f"holds seq {rolled.ahead}" in line, line


def test_a_demo_whose_state_dir_lost_its_key_is_refused_without_making_a_new_one(
        rolled: Rolled, capsys: pytest.CaptureFixture[str]) -> None:
    """Without its key a state dir looks fresh: its journals are still there, so nothing is created (no new key
    left behind either: the next start must still name the key as missing, not as the wrong one)."""
    (rolled.live / "journal.key").unlink()
    _refused(rolled.live, capsys, "t01.journal: already exists", tables=2)
    assert not (rolled.live / "journal.key").exists()


def test_another_journal_given_the_anchored_id_is_refused_by_its_own_chain(rolled: Rolled,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """The id the anchor checks cannot be copied onto another journal: the chain starts from it (its first row
    is chained to HMAC(key, genesis || journal id)), so the first row no longer checks."""
    journal = rolled.live / "t01.journal"
    with closing(sqlite3.connect(journal)) as db:
        (t01_id,) = db.execute("SELECT value FROM meta WHERE key = 'journal_id'").fetchone()
    for side in rolled.live.glob("t01.journal*"):
        side.unlink()
    shutil.copyfile(rolled.live / "t02.journal", journal)
    with closing(sqlite3.connect(journal)) as db, db:
        db.execute("UPDATE meta SET value = ? WHERE key = 'journal_id'", (t01_id,))
    _refused(rolled.live, capsys, "t01.journal: ", "does not match", tables=2)  # the first seal or row
