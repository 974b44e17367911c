"""The anchor file's text (``controller/journal/anchor.py``): written at every commit, read at every start.

Its layout changed (issue #40: the signed JSON text reused as the file's, ``mac`` last, instead of a second sorted
dump): an anchor a table wrote before must still vouch for its journal, and the one written now must record every
field of the point, signed as before (an older reader checks the same ``mac``).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pytest

from controller.journal.anchor import ANCHOR_SIZE, Anchor
from controller.journal.chain import AnchorPoint, Mac
from controller.journal.errors import JournalError

KEY = b"k" * 32
POINT = AnchorPoint("9d8df28975da4fc7919827865958c087", 1234, 5678, "outbox", 5678, "ab" * 32)


def _mac(fields: dict[str, object]) -> str:
    """The ``mac`` as every version signs it: compact JSON, keys sorted, under the journal key."""
    return Mac(KEY)(b"tablectl anchor " + json.dumps(fields, sort_keys=True, separators=(",", ":")).encode()).hex()


def test_an_anchor_records_every_field_of_its_point_signed_as_before(tmp_path: Path) -> None:
    anchor = Anchor(tmp_path, "t01", KEY)
    anchor.write(POINT)
    text = anchor.path.read_bytes()
    assert len(text) == ANCHOR_SIZE and text.endswith(b"\n")
    data = json.loads(text)
    fields = {"table_id": "t01", **asdict(POINT)}
    assert data == {**fields, "mac": _mac(fields)}
    assert anchor.read() == POINT
    anchor.record(AnchorPoint(POINT.journal_id, 1235, 5680, "outbox", 5680, "cd" * 32))  # in place, same size
    assert anchor.path.stat().st_size == ANCHOR_SIZE
    assert anchor.read() == AnchorPoint(POINT.journal_id, 1235, 5680, "outbox", 5680, "cd" * 32)
    anchor.close()


def test_an_anchor_written_in_the_earlier_layout_still_vouches(tmp_path: Path) -> None:
    anchor = Anchor(tmp_path, "t01", KEY)
    fields = {"table_id": "t01", **asdict(POINT)}
    earlier = json.dumps({**fields, "mac": _mac(fields)}, sort_keys=True).encode()  # sorted, spaced: before
    anchor.directory.mkdir(parents=True, exist_ok=True)
    anchor.path.write_bytes(earlier.ljust(ANCHOR_SIZE - 1) + b"\n")
    assert anchor.read() == POINT
    altered = earlier.replace(b'"seq": 5678', b'"seq": 5679')
    anchor.path.write_bytes(altered.ljust(ANCHOR_SIZE - 1) + b"\n")
    with pytest.raises(JournalError, match="does not check"):
        anchor.read()
