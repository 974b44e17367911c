"""The dealer's outcomes a rated table keeps beside its journal (controller/service/strategy_cache.py): taken back
at the next start only when they check (sealed under the journal's key, for the exact rules and sources), else
worked out again; the edge and EVs the same either way.

Each start runs in a process of its own (the strategy's caches live as long as the process), counting how many
times the dealer's cards were walked (550: every situation worked out; 0: all taken back)."""

from __future__ import annotations

import dataclasses
import json
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from controller import kept_figures
from controller.journal import Journal
from controller.profiles import load_rules
from controller.service import strategy_cache
from tests.service import test_run

KEY = "11" * 32
OTHER_KEY = "22" * 32

START = """
import dataclasses, json, sys, threading
from pathlib import Path
from controller.journal import Journal
from controller.profiles import load_rules
from controller.service.core import TableCore
from controller.service.ratings import enable_ratings
from controller.strategy import ev
from controller.strategy.edge import house_edge

walks = 0
walked_on = []
walk = ev._dealer_recursion
def counted(*args):
    global walks
    walks += 1
    walked_on.append(threading.current_thread().name)
    return walk(*args)
ev._dealer_recursion = counted

folder, key, ahead, changes = Path(sys.argv[1]), sys.argv[2], sys.argv[3] == "ahead", json.loads(sys.argv[4])
rules = dataclasses.replace(load_rules("house-h17"), **changes)
if ahead:  # as tablectl run does before the journal's check
    from controller.service import strategy_cache
    strategy_cache.work_ahead(rules, folder / "t01.journal")
    threads = [t.name for t in threading.enumerate() if t.name == "dealer-outcomes"]
with Journal(folder / "t01.journal", key=bytes.fromhex(key) if key else None) as journal:
    core = TableCore("t01", rules, journal)
    ratings = enable_ratings(core)
    print(json.dumps({"walks": walks, "book_edge": ratings.book.edge, "edge": house_edge(rules).house_edge,
                      "ev": ev.situation_ev(ev.Context.of(rules), 10, 6, 10).actions(),
                      **({"ahead": threads, "walked_on": sorted(set(walked_on))} if ahead else {})}))
"""


def start(folder: Path, key: str | None = KEY, *, ahead: bool = False, **changes: Any) -> dict[str, Any]:
    """A rated table's core made on the journal in ``folder`` in a process of its own: what it priced with.
    ``ahead``: the outcomes worked out ahead first, as ``tablectl run`` does before the journal's check."""
    out = subprocess.run([sys.executable, "-c", START, str(folder), key or "", "ahead" if ahead else "",
                          json.dumps(changes)], capture_output=True, text=True, check=True).stdout
    result: dict[str, Any] = json.loads(out)
    return result


def kept_file(folder: Path) -> Path:
    (path,) = (folder / ".theory").glob("dealer-*.json")
    return path


def test_a_start_keeps_the_outcomes_and_the_next_takes_them_back_with_the_same_figures(tmp_path: Path) -> None:
    first = start(tmp_path)
    assert first["walks"] == 550  # every starting situation worked out
    path = kept_file(tmp_path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    again = start(tmp_path)
    assert again["walks"] == 0  # none worked out again
    assert again == {**first, "walks": 0}  # the same edge, to the last bit, and the same EVs
    assert again["book_edge"] == again["edge"] > 0


def test_an_edited_outcome_is_not_trusted_and_is_kept_anew(tmp_path: Path) -> None:
    honest = start(tmp_path)
    path = kept_file(tmp_path)
    kept = json.loads(path.read_text())
    for entry in kept["outcomes"]:
        entry[3] = 0.0  # no dealer blackjack, ever: the house edge falls
    path.write_text(json.dumps(kept))
    edited = start(tmp_path)
    assert edited["walks"] == 550
    assert edited == {**honest, "walks": 550}
    assert json.loads(path.read_text())["outcomes"][0][3] > 0  # kept anew, as worked out
    assert start(tmp_path)["walks"] == 0


def test_outcomes_kept_under_another_key_are_not_trusted(tmp_path: Path) -> None:
    start(tmp_path, OTHER_KEY)
    theirs = kept_file(tmp_path).read_bytes()
    (tmp_path / "t01.journal").unlink()  # a journal of the same table under another key, its outcomes left there
    for suffix in ("-wal", "-shm"):
        (tmp_path / f"t01.journal{suffix}").unlink(missing_ok=True)
    assert start(tmp_path)["walks"] == 550
    assert kept_file(tmp_path).read_bytes() != theirs


def test_outcomes_kept_for_other_rules_are_not_used_even_under_their_name(tmp_path: Path) -> None:
    h17 = start(tmp_path)
    s17_fresh = start(tmp_path / "fresh", dealer_hits_soft_17=False)
    assert s17_fresh["edge"] != h17["edge"]
    h17_file = kept_file(tmp_path)
    s17 = start(tmp_path, dealer_hits_soft_17=False)
    assert s17 == s17_fresh  # worked out for its own rules (550 walks), not the h17 table's
    assert s17["walks"] == 550
    s17_file = next(p for p in (tmp_path / ".theory").glob("dealer-*.json") if p != h17_file)
    s17_file.write_bytes(h17_file.read_bytes())  # the h17 outcomes, sealed, put under the s17 rules' name
    assert start(tmp_path, dealer_hits_soft_17=False) == s17_fresh
    assert start(tmp_path, dealer_hits_soft_17=False)["walks"] == 0  # its own outcomes kept in their place again
    # rules that differ in a field the dealer's outcomes do not read: kept apart all the same (the exact rules)
    assert start(tmp_path, double_after_split=not load_rules("house-h17").double_after_split)["walks"] == 550


def test_outcomes_kept_by_other_sources_are_stale(tmp_path: Path) -> None:
    start(tmp_path)
    path = kept_file(tmp_path)
    kept = json.loads(path.read_text())
    del kept["seal"]
    kept["method"] = "0" * 64  # kept by an older version of the arithmetic, sealed under the right key
    with Journal(tmp_path / "t01.journal", key=bytes.fromhex(KEY)) as journal:
        kept["seal"] = kept_figures.seal_of(kept_figures.subkey(journal.seal, strategy_cache.SEAL_PURPOSE), kept)
    path.write_text(json.dumps(kept))
    assert start(tmp_path)["walks"] == 550
    assert json.loads(path.read_text())["method"] == strategy_cache.method_key()


def test_a_journal_without_a_key_keeps_nothing(tmp_path: Path) -> None:
    assert start(tmp_path, None)["walks"] == 550
    assert not (tmp_path / ".theory").exists()


def test_an_unreadable_kept_file_is_worked_out_again(tmp_path: Path) -> None:
    start(tmp_path)
    path = kept_file(tmp_path)
    path.write_text("not json")
    assert start(tmp_path)["walks"] == 550
    assert start(tmp_path)["walks"] == 0


def test_the_rules_key_tells_every_field_apart() -> None:
    rules = load_rules("house-h17")
    assert strategy_cache.rules_key(rules) == strategy_cache.rules_key(load_rules("house-h17"))
    for change in ({"decks": rules.decks + 2}, {"dealer_hits_soft_17": False}, {"name": "other"}):
        assert strategy_cache.rules_key(dataclasses.replace(rules, **change)) != strategy_cache.rules_key(rules)


def test_worked_out_ahead_when_none_are_kept_once_and_not_again_when_they_are(tmp_path: Path) -> None:
    first = start(tmp_path, ahead=True)
    assert first["ahead"] == ["dealer-outcomes"] and first["walked_on"] == ["dealer-outcomes"]
    assert first["walks"] == 550  # on the thread only: the start waited for it and took its outcomes
    assert {k: v for k, v in first.items() if k not in ("ahead", "walked_on")} == {**start(tmp_path / "b"),
                                                                                   "walks": 550}
    kept_file(tmp_path)  # kept, as without working ahead
    again = start(tmp_path, ahead=True)
    assert again["ahead"] == [] and again["walks"] == 0  # kept: nothing worked out ahead


def test_a_refused_journal_of_a_rated_table_exits_2_in_one_line_and_keeps_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_config = test_run._config

    def rated(tmp: Path, broker: str, links: Path, **extra: str) -> Path:  # the chip sensors with card readers
        path = real_config(tmp, broker, links, **extra)
        path.write_text(path.read_text().replace("[devices.chips]\n", "[devices.chips]\ncard_readers = true\n"))
        return path

    monkeypatch.setattr(test_run, "_config", rated)
    # exit 2, one line naming the row, though the outcomes were being worked out meanwhile
    test_run.test_run_on_a_journal_with_a_corrupt_row_exits_2_in_one_line_naming_it(tmp_path)
    assert "card_readers = true" in (tmp_path / "t05.toml").read_text()
    assert not (tmp_path / "state" / ".theory").exists()  # nothing kept: the check refused the journal first


def test_a_link_in_place_of_the_kept_file_or_a_file_open_to_others_is_not_trusted(tmp_path: Path) -> None:
    """The one rule of every figure file kept beside the journal (controller/kept_figures.py) holds here too."""
    start(tmp_path)
    path = kept_file(tmp_path)
    path.chmod(0o644)
    assert start(tmp_path)["walks"] == 550  # open to others: worked out again, kept anew, 0600
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and start(tmp_path)["walks"] == 0
    elsewhere = tmp_path / "elsewhere.json"
    path.rename(elsewhere)  # a sealed file, moved out and linked back
    path.symlink_to(elsewhere)
    kept = elsewhere.read_bytes()
    assert start(tmp_path)["walks"] == 550  # never read through the link
    assert not path.is_symlink() and elsewhere.read_bytes() == kept  # replaced, not written through
