"""The recorder's pure parts: what a message carries (intake) and when positions and alarms go out (board);
and ``tablectl recorder``'s bad input: one line, exit 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from controller.recorder.board import Board
from controller.recorder.intake import EventIn, RatingsIn, StateIn, Unreadable, parse, subscriptions


def test_intake_places_each_table_topic_and_skips_the_recorders_own() -> None:
    body = b'{"seq": 3, "ts": 1.5, "type": "card"}'
    assert parse("pit/a", "pit/a/t01/events", body) == EventIn("t01", 3, body.decode())
    assert parse("tables", "tables/t02/state", b'{"seq": 9, "journal_id": "ab", "head": "cd", "pit": "p3"}') == \
        StateIn("t02", 9, "ab", "cd", "p3")
    assert parse("tables", "tables/t02/state", b'{"seq": 9}') == StateIn("t02", 9, None, None, None)
    assert parse("tables", "tables/t02/ratings", b'{"rating_id": "x"}') == RatingsIn("t02", ('{"rating_id": "x"}',))
    assert parse("tables", "tables/t02/ratings/open", b'[{"rating_id": "x"}, {"rating_id": "y"}]') == \
        RatingsIn("t02", ('{"rating_id":"x"}', '{"rating_id":"y"}'))
    assert parse("tables", "tables/recorder/events", b'{"seq": 1}') is None  # its own topics: a table named events
    assert parse("tables", "tables/t02/ratings/open", b"") is None  # a retained message cleared
    assert [t for t, _ in subscriptions("tables")] == ["tables/+/events", "tables/+/ratings", "tables/+/ratings/open",
                                                       "tables/+/state"]
    assert dict(subscriptions("tables"))["tables/+/state"] == 0


@pytest.mark.parametrize(("topic", "payload", "why"), [
    ("tables/t01/events", b"{", "not JSON"),
    ("tables/t01/events", b"\xff", "not UTF-8"),
    ("tables/t01/events", b'{"seq": 0}', "no positive integer seq"),
    ("tables/t01/events", b'{"seq": true}', "no positive integer seq"),
    ("tables/t01/events", b"[1]", "no positive integer seq"),
    ("tables/t01/state", b'{"phase": "betting"}', "no positive integer seq"),
    ("tables/t01/ratings", b"[]", "a JSON object"),
    ("tables/t01/ratings/open", b"[1]", "list of objects"),
    ("tables/t01/history", b"{}", "not a table's events"),
    ("other/t01/events", b"{}", "not under the prefix"),
])
def test_intake_names_the_topic_and_why_a_message_cannot_be_placed(topic: str, payload: bytes, why: str) -> None:
    with pytest.raises(Unreadable, match=why) as info:
        parse("tables", topic, payload)
    assert str(info.value).startswith(topic) and "\n" not in str(info.value)


def test_board_publishes_each_table_at_most_every_interval_and_always_its_last_change() -> None:
    board = Board(interval=0.2)
    assert board.wait(0.0) is None and board.due(0.0) == ([], False)
    board.changed("t01")
    assert board.wait(10.0) == 0.0 and board.due(10.0) == (["t01"], False)
    board.changed("t01")  # a hundred events a second: one position per interval, the last one included
    board.changed("t02")
    assert board.due(10.1) == (["t02"], False)
    assert board.wait(10.1) == pytest.approx(0.1)
    assert board.due(10.2) == (["t01"], False)
    assert not board.pending()


def test_board_raises_a_gap_per_missing_range_and_clears_it_once_filled() -> None:
    board = Board()
    assert board.set_gaps("t01", [(3, 3), (6, 9)], 100.0)
    assert not board.set_gaps("t01", [(3, 3), (6, 9)], 101.0)  # unchanged: not published again
    assert board.due(101.0) == ([], True)
    alarms = [a.as_dict() for a in board.alarms()]
    assert [(a["code"], a["from_seq"], a["to_seq"], a["ts"]) for a in alarms] == [
        ("recorder_gap", 3, 3, 100.0), ("recorder_gap", 6, 9, 100.0)]
    assert alarms[1]["message"] == "t01: seqs 6 to 9 missing; later events held until they come"
    assert board.set_gaps("t01", [(6, 9)], 102.0) and board.alarms()[0].ts == 100.0  # still since it was raised
    assert board.set_gaps("t01", [], 103.0) and board.alarms() == [] and not board.has_gaps("t01")
    assert board.conflict("t02", 7, "event", 104.0) and not board.conflict("t02", 7, "event", 105.0)
    assert [a.code for a in board.alarms()] == ["recorder_conflict"]
    board.reconnected(["t01", "t02"])
    assert board.due(106.0) == (["t01", "t02"], True)


def _recorder(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "controller.cli", "recorder", *args], capture_output=True, text=True,
                          timeout=60, env=env)


@pytest.mark.parametrize(("args", "needle"), [
    ([], "--broker"),
    (["--broker", "http://x"], "scheme must be"),
    (["--broker", " , "], "at least one broker"),
    (["--broker", "mqtt://a,mqtts://b"], "not a mix"),
    (["--broker", "mqtt://127.0.0.1:1", "--prefix", "a/#"], "--prefix"),
    (["--broker", "mqtt://127.0.0.1:1", "--username", "Rec"], "--username"),
    (["--broker", "mqtt://127.0.0.1:1", "--tls-ca", "/no/such/ca.crt"], "--tls-ca"),
    (["--broker", "mqtt://127.0.0.1:1", "--password-file", "/no/such/file"], "--password-file"),
    (["--broker", "mqtt://127.0.0.1:1", "--db", "/etc/hostname"], "--db"),
    (["--broker", "mqtt://u:s3cret@127.0.0.1:1", "--db", "/etc/hostname"], "not a recorder's database"),
    (["--broker", "mqtt://u:s3cret@127.0.0.1:1:2"], "bad port"),
    (["--broker", "mqtt://127.0.0.1:1", "--stream", "http://x:4222"], "--stream: stream address"),
    (["--broker", "mqtt://127.0.0.1:1", "--stream", "nats://127.0.0.1:4222"], "floor-admin password is needed"),
])
def test_bad_input_exits_2_with_one_line(args: list[str], needle: str, tmp_path: Path) -> None:
    out = _recorder(*args)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tablectl recorder: ") and needle in lines[0], out.stderr
    assert "s3cret" not in out.stderr


def test_an_empty_password_file_is_refused(tmp_path: Path) -> None:
    empty = tmp_path / "password"
    empty.write_text("\n")
    empty.chmod(0o600)  # a password file others may read is refused first (tests/service/test_secret_files.py)
    out = _recorder("--broker", "mqtt://127.0.0.1:1", "--password-file", str(empty))
    assert out.returncode == 2 and out.stderr.strip() == f"tablectl recorder: --password-file {empty}: empty"
