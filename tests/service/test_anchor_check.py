"""An anchor recorded at a commit is one ``pwrite``; whether its file is still the one at its path is checked
after (:meth:`Anchor.check`, run by the table once the commit's news has left: issue #40, the card's path)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from controller.game import events as ev
from controller.journal import Journal
from controller.journal.anchor import Anchor
from controller.journal.chain import AnchorPoint
from controller.profiles import load_rules
from controller.service.core import TableCore

KEY = b"k" * 32
JOURNAL = "9d8df28975da4fc7919827865958c087"


def _point(seq: int) -> AnchorPoint:
    return AnchorPoint(JOURNAL, seq // 2, seq, "outbox", seq, f"{seq:064x}")


@pytest.fixture
def stats(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths ``os.stat`` was asked about from here on."""
    asked: list[str] = []
    stat = os.stat

    def counted(path: os.PathLike[str] | str, *args: object, **kw: object) -> os.stat_result:
        asked.append(str(path))
        return stat(path, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "stat", counted)
    return asked


def test_a_commit_checked_after_leaves_the_next_commits_anchor_one_pwrite(tmp_path: Path,
                                                                          stats: list[str]) -> None:
    anchor = Anchor(tmp_path, "t01", KEY)
    anchor.write(_point(10))
    for seq in (11, 12, 13):
        del stats[:]
        anchor.record(_point(seq))
        assert stats == []  # no stat before the write: the card's state is still to leave
        anchor.check()
        assert stats == [str(anchor.path)]
    assert anchor.read() == _point(13)
    anchor.close()


def test_a_record_after_one_not_checked_checks_first(tmp_path: Path, stats: list[str]) -> None:
    anchor = Anchor(tmp_path, "t01", KEY)
    anchor.write(_point(10))
    anchor.record(_point(11))  # not checked after (a commit whose caller does not check)
    anchor.path.unlink()
    del stats[:]
    anchor.record(_point(12))
    assert stats[:1] == [str(anchor.path)]
    assert anchor.read() == _point(12)  # written again at its path
    anchor.close()


@pytest.mark.parametrize("tamper", ["deleted", "replaced", "moved away"])
def test_an_anchor_file_tampered_with_between_commits_is_written_again_at_the_check(tmp_path: Path,
                                                                                    tamper: str) -> None:
    anchor = Anchor(tmp_path, "t01", KEY)
    anchor.write(_point(10))
    older = anchor.path.read_bytes()
    anchor.record(_point(11))
    anchor.check()
    if tamper == "deleted":
        anchor.path.unlink()
    elif tamper == "moved away":
        anchor.path.rename(tmp_path / "elsewhere")
    else:
        (tmp_path / "older").write_bytes(older)
        os.replace(tmp_path / "older", anchor.path)
    anchor.record(_point(12))  # in place, into the file held open: not the one at the path any more
    anchor.check()
    assert anchor.read() == _point(12)
    anchor.record(_point(13))
    anchor.check()
    assert anchor.read() == _point(13)  # and in place again from there
    anchor.close()


def test_a_check_with_nothing_written_since_does_nothing(tmp_path: Path, stats: list[str]) -> None:
    anchor = Anchor(tmp_path, "t01", KEY)
    anchor.write(_point(10))
    inode = anchor.path.stat().st_ino
    del stats[:]
    anchor.check()
    anchor.record(_point(11))
    anchor.check()
    anchor.check()
    assert stats == [str(anchor.path)]
    assert anchor.path.stat().st_ino == inode
    anchor.close()


class _StatsAtPublish:
    """A publisher noting how many ``stat`` calls had been made when each ``state`` was handed to it."""

    def __init__(self, stats: list[str]) -> None:
        self.stats = stats
        self.at_state: list[int] = []

    connected = True

    def notify(self) -> None:
        return None

    def publish_state(self, seq: int, state: object) -> None:
        self.at_state.append(len(self.stats))

    def publish_alarms(self, alarms: object) -> None:
        return None

    async def start(self) -> None:
        return None

    async def close(self, timeout: float = 5.0) -> None:
        return None


def test_the_table_checks_its_anchor_only_once_a_commits_state_is_handed_on(tmp_path: Path,
                                                                           stats: list[str]) -> None:
    with Journal(tmp_path / "t01.journal", key=KEY) as journal:
        anchor = Anchor(tmp_path / "anchors", "t01", KEY)
        anchor.write(journal.anchor_point())
        journal.anchor = anchor
        publisher = _StatsAtPublish(stats)
        core = TableCore("t01", load_rules("house-h17"), journal, publisher, clock=lambda: 1_000.0)  # type: ignore[arg-type]
        core.apply(ev.TableOpened(now=1_000.0))
        core.apply(ev.ShuffleDone(count=core.rules.cards_in_shoe))
        for amount in (1000, 2000, 3000):
            del stats[:]
            publisher.at_state.clear()
            core.apply(ev.BetPlaced(1, amount))
            assert publisher.at_state == [0], "a stat before the commit's state was handed on"
            assert str(anchor.path) in stats  # checked, after
        assert anchor.read() == journal.anchor_point()
