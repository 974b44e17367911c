"""benchmarks/floor_acceptance.py's own judgements: a table's move after a kill is timed from events stamped after
the kill (a redelivered older event does not count), a table with none is named, and the recorder's conflicts are
read from its warnings and its final tally (its '0 conflict(s)' is none)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.floor_acceptance import Arrivals, moved, recorder_conflicts  # noqa: E402


def test_a_tables_move_is_timed_from_events_stamped_after_the_kill() -> None:
    seen = Arrivals()
    killed = 1000.0
    seen.on("tables/t01/events", b'{"seq": 7, "ts": 990.0}', 1001.0)  # before the kill, delivered after it
    seen.on("tables/t01/events", b'{"seq": 7, "ts": 990.0}', 1050.0)  # redelivered: not the table's move
    seen.on("tables/t01/events", b'{"seq": 8, "ts": 1012.0}', 1020.0)
    seen.on("tables/t02/events", b'{"seq": 3, "ts": 1000.5}', 1001.0)
    seen.on("tables/t03/events", b'{"seq": 3, "ts": 999.0}', 1030.0)  # only older events: silent
    seen.on("tables/t03/events", b"not json", 1031.0)
    resumed, silent = moved(seen, ["t01", "t02", "t03", "t04"], killed)
    assert resumed == {"t01": 20.0, "t02": 1.0}
    assert silent == ["t03", "t04"]


def test_the_recorders_conflicts_come_from_its_warnings_and_its_tally(tmp_path: Path) -> None:
    clean = tmp_path / "recorder-1.log"
    clean.write_text("recorder stopped: 9 event(s) stored, 2 repeat(s) dropped, 0 held, 0 conflict(s), 0 unreadable\n")
    assert recorder_conflicts([clean]) == ([], 0)
    killed = tmp_path / "recorder-2.log"  # killed: no tally, but its warning
    killed.write_text("21:00:00 recorder WARNING t01: a second, different event at seq 5: the first is kept\n")
    tallied = tmp_path / "recorder-3.log"
    tallied.write_text("recorder stopped: 9 event(s) stored, 0 repeat(s) dropped, 0 held, 2 conflict(s), "
                       "0 unreadable\n")
    warnings, total = recorder_conflicts([clean, killed, tallied])
    assert len(warnings) == 1 and "seq 5" in warnings[0]
    assert total == 2
