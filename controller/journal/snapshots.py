"""Snapshots: the engine's state saved at an input, sealed to that input's chain hash (derived data, pruned).

Recovery takes the newest snapshot that checks and replays the inputs after it; one that does not check
(altered, or not JSON) is passed over for an older one or a replay from the start.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller.journal.chain import Mac, link_snapshot
from controller.journal.errors import JournalIntegrityError

__all__ = ["Snapshot", "check_snapshot"]


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Engine state after input ``input_id`` (when the last record had ``seq``)."""

    input_id: int
    seq: int
    ts: float
    state: Any


def check_snapshot(mac: Mac, path: Path, row: Sequence[Any], input_hash: Callable[[int], bytes]) -> None:
    """:class:`JournalIntegrityError` unless the snapshot ``row`` (input id, seq, ts, state, hash) is sealed to
    the chain hash ``input_hash`` gives of its input."""
    iid, seq, ts, state, stored = row
    try:
        ok = link_snapshot(mac, input_hash(int(iid)), int(iid), int(seq), float(ts), str(state)) == stored
    except (TypeError, ValueError, struct.error):
        ok = False
    if not ok:
        raise JournalIntegrityError(path, "snapshots", int(iid), "snapshot",
                                    "its hash does not match its content and its input's (altered)")
