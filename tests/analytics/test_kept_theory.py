"""The theory a table keeps beside its journal (``<state_dir>/.theory/theory-<digest>.json``) is published only when
it checks (controller/kept_figures.py): an edited file, another table's, one for other rules under this name, one
cut short, a link planted in its place, a folder or file open to others: the theory is worked out again, the
file replaced, a warning logged; the published ``analytics`` carry the rules' own figures, to the last bit.

Each start runs in a process of its own (the theory is kept in memory per process): a table service on a keyed
journal in a folder opens and publishes its ``analytics``; the start reports what it published, the exact
figures, how many children worked the theory out, and the warnings it logged."""

from __future__ import annotations

import dataclasses
import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from controller import kept_figures
from controller.analytics import live
from controller.game.rules import rules_digest
from controller.journal import Journal
from controller.profiles import load_rules

KEY = "11" * 32
OTHER_KEY = "22" * 32
RULES = load_rules("house-h17")

START = """
import asyncio, dataclasses, json, logging, sys, time
from pathlib import Path
from typing import cast
from controller.analytics import live
from controller.game import events as ev
from controller.journal import Journal
from controller.mqtt.publisher import MemoryPublisher
from controller.profiles import load_rules
from controller.service.core import TableCore
from controller.service.table_service import TableService
from drivers.base import Device
from drivers.group import DeviceGroup

live.THEORY_DELAY_S = 0.0  # no pause after the start: the test is not a table coming back from a crash
children = 0
run_child = live._run_child
def counted(*args, **kw):
    global children
    children += 1
    return run_child(*args, **kw)
live._run_child = counted

warnings = []
class Kept(logging.Handler):
    def emit(self, record):
        warnings.append([record.getMessage(), getattr(record, "error", "")])
logging.getLogger().addHandler(Kept(logging.WARNING))

class Shoe:
    async def lock_dealing(self): ...
    async def enable_dealing(self): ...
    async def reveal_hole(self): ...

async def main():
    folder, key, changes = Path(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
    rules = dataclasses.replace(load_rules("house-h17"), **changes)
    with Journal(folder / "t01.journal", key=bytes.fromhex(key) if key else None) as journal:
        publisher = MemoryPublisher(journal)
        core = TableCore("t01", rules, journal, publisher)
        service = TableService(core, DeviceGroup(shoe=cast(Device, Shoe())), tick_every=0)
        await publisher.start()
        service.apply(ev.TableOpened(now=time.time()))
        published = None
        deadline = time.monotonic() + 120
        while published is None:
            assert time.monotonic() < deadline, f"no analytics with the theory: {warnings}"
            await asyncio.sleep(0.05)
            found = [json.loads(p) for t, p, _ in publisher.messages if t.endswith("/analytics")]
            published = next((a for a in reversed(found) if a["theoretical_edge"] is not None), None)
        theory = live.theory_for(rules).result()  # the process's own: the one it published
        print(json.dumps({"published": {k: published[k] for k in ("theoretical_edge", "sigma", "covariance",
                                                                  "sigma_source")},
                          "exact": [repr(theory.edge), repr(theory.spread.sigma), repr(theory.spread.covariance),
                                    theory.spread.source],
                          "children": children, "warnings": warnings}))

asyncio.run(main())
"""


def start(folder: Path, key: str | None = KEY, **changes: Any) -> dict[str, Any]:
    """A table's analytics started on the journal in ``folder`` in a process of its own: what it published."""
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([sys.executable, "-c", START, str(folder), key or "", json.dumps(changes)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def kept_file(folder: Path, **changes: Any) -> Path:
    return folder / ".theory" / f"theory-{rules_digest(dataclasses.replace(RULES, **changes))}.json"


def theory_key(folder: Path, key: str = KEY) -> bytes:
    """The key the folder's journal seals its kept theory under (as the table service derives it)."""
    with Journal(folder / "t01.journal", key=bytes.fromhex(key)) as journal:
        return kept_figures.subkey(journal.seal, live.SEAL_PURPOSE)


@pytest.fixture(scope="module")
def honest(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The figures a table works out for itself (nothing kept yet), and the file it keeps."""
    folder = tmp_path_factory.mktemp("honest")
    first = start(folder)
    assert first["children"] == 1 and first["warnings"] == []
    return {**first, "file": kept_file(folder).read_bytes()}


def worked_out_again(result: dict[str, Any], honest: dict[str, Any], folder: Path, why: str) -> None:
    """The start published the rules' own figures (exact), worked them out again, said why, and kept them anew."""
    assert result["published"] == honest["published"] and result["exact"] == honest["exact"]
    assert result["children"] == 1, "the kept figures were taken"
    assert any("do not check" in m and why in e for m, e in result["warnings"]), result["warnings"]
    path = kept_file(folder)
    assert not path.is_symlink() and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert kept_figures.read_sealed(path, theory_key(folder), live.FIELDS) is not None  # kept anew, sealed
    again = start(folder)
    assert again["children"] == 0 and again["warnings"] == [] and again["exact"] == honest["exact"]


def test_kept_figures_come_back_bit_identical_without_a_child(tmp_path: Path, honest: dict[str, Any]) -> None:
    start(tmp_path)
    path = kept_file(tmp_path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    again = start(tmp_path)
    assert again["children"] == 0 and again["warnings"] == []
    assert again["exact"] == honest["exact"] and again["published"] == honest["published"]
    assert again["exact"][0] == repr(live.theory_for(RULES).result(timeout=120).edge)  # the process's own, exact


@pytest.mark.parametrize("field", ["edge", "sigma", "covariance", "rules"])
def test_an_edited_figure_is_not_published(tmp_path: Path, honest: dict[str, Any], field: str) -> None:
    start(tmp_path)
    path = kept_file(tmp_path)
    kept = json.loads(path.read_text())
    kept[field] = kept[field] * 2 if isinstance(kept[field], float) else "0" * 64
    path.write_text(json.dumps(kept))
    worked_out_again(start(tmp_path), honest, tmp_path, "seal does not check")


def test_a_file_kept_under_another_key_is_not_trusted(tmp_path: Path, honest: dict[str, Any]) -> None:
    start(tmp_path, OTHER_KEY)
    for name in ("t01.journal", "t01.journal-wal", "t01.journal-shm"):  # the same table, a journal under a new key
        (tmp_path / name).unlink(missing_ok=True)
    worked_out_again(start(tmp_path), honest, tmp_path, "seal does not check")


def test_a_file_for_other_rules_under_this_name_is_not_used(tmp_path: Path, honest: dict[str, Any]) -> None:
    s17 = start(tmp_path, dealer_hits_soft_17=False)
    assert s17["exact"][0] != honest["exact"][0]
    os.rename(kept_file(tmp_path, dealer_hits_soft_17=False), kept_file(tmp_path))  # sealed, mode 0600, renamed
    worked_out_again(start(tmp_path), honest, tmp_path, "other rules")


@pytest.mark.parametrize("damage", ["truncated", "not json", "empty", "a list"])
def test_a_damaged_file_is_worked_out_again(tmp_path: Path, honest: dict[str, Any], damage: str) -> None:
    start(tmp_path)
    path = kept_file(tmp_path)
    text = path.read_bytes()
    path.write_bytes({"truncated": text[: len(text) // 2], "not json": b"edge = 0.5\n", "empty": b"",
                      "a list": b"[0.5]"}[damage])
    worked_out_again(start(tmp_path), honest, tmp_path, "not JSON" if damage != "a list" else "not the fields")


@pytest.mark.parametrize("change", ["extra", "missing"])
def test_a_sealed_file_with_a_field_more_or_less_is_not_used(tmp_path: Path, honest: dict[str, Any],
                                                              change: str) -> None:
    start(tmp_path)
    path = kept_file(tmp_path)
    kept = json.loads(path.read_text())
    del kept["seal"]
    if change == "extra":
        kept["note"] = "kept by hand"
    else:
        del kept["covariance"]
    kept["seal"] = kept_figures.seal_of(theory_key(tmp_path), kept)  # sealed with the right key all the same
    path.write_text(json.dumps(kept))
    worked_out_again(start(tmp_path), honest, tmp_path, "not the fields")


def test_an_unsealed_file_of_an_older_version_is_worked_out_again(tmp_path: Path, honest: dict[str, Any]) -> None:
    start(tmp_path)
    path = kept_file(tmp_path)
    path.write_text(json.dumps({"digest": rules_digest(RULES), "edge": 0.5, "sigma": 1.0, "sigma_source": "old",
                                "covariance": 0.0}))
    worked_out_again(start(tmp_path), honest, tmp_path, "not the fields")


def test_a_link_planted_in_place_of_the_file_is_never_followed(tmp_path: Path, honest: dict[str, Any]) -> None:
    start(tmp_path / "other")  # a sealed file of the same table's figures elsewhere
    victim = tmp_path / "victim.json"
    victim.write_bytes(kept_file(tmp_path / "other").read_bytes())
    (tmp_path / ".theory").mkdir(mode=0o700)
    kept_file(tmp_path).symlink_to(victim)
    lock_victim = tmp_path / "lock-victim"
    kept_file(tmp_path).with_name(kept_file(tmp_path).name + ".lock").symlink_to(lock_victim)
    before = victim.read_bytes()
    worked_out_again(start(tmp_path), honest, tmp_path, "a link")
    assert victim.read_bytes() == before, "written through the link"
    assert not lock_victim.exists(), "the lock opened through a link"


def test_a_link_planted_in_place_of_the_folder_is_never_written_through(tmp_path: Path,
                                                                         honest: dict[str, Any]) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (tmp_path / "table").mkdir()
    (tmp_path / "table" / ".theory").symlink_to(elsewhere)
    result = start(tmp_path / "table")
    assert result["published"] == honest["published"] and result["exact"] == honest["exact"]
    assert list(elsewhere.iterdir()) == [], "kept through the link"
    assert any("not a directory" in e for _, e in result["warnings"]), result["warnings"]


@pytest.mark.parametrize("opened", ["folder", "file"])
def test_a_folder_or_file_open_to_others_is_not_trusted(tmp_path: Path, honest: dict[str, Any],
                                                         opened: str) -> None:
    start(tmp_path)
    path = kept_file(tmp_path)
    os.chmod(path.parent if opened == "folder" else path, 0o755 if opened == "folder" else 0o644)
    worked_out_again(start(tmp_path), honest, tmp_path, "open to others")


def test_a_journal_without_a_key_keeps_nothing_on_disk(tmp_path: Path, honest: dict[str, Any]) -> None:
    for _ in range(2):
        result = start(tmp_path, None)
        assert result["children"] == 1 and result["exact"] == honest["exact"]  # worked out off the loop, each time
    assert not (tmp_path / ".theory").exists()
