"""``tablectl recorder`` on a real Mosquitto: a real table's journal lands in the database seq for seq; repeats,
conflicts and gaps as the contract says; killed -9 mid-stream and restarted, nothing is missing; SIGTERM
stops it cleanly. The bodies are the journal's own: the demo's table plays real rounds through its devices."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiomqtt

from controller.floor.nats_client import NatsError
from controller.profiles import load_rules
from controller.recorder.store import open_store
from controller.sim.demo import DemoOptions, DemoTable
from tests.mqtt_broker import Mosquitto
from tests.recorder.helpers import (
    assert_holds_the_journal,
    recorded_seq,
    recorder_process,
    recording,
    stop_process,
    until,
)


def _opts(rounds: int, seed: int = 5, prefix: str = "tables", carded: int = 0) -> DemoOptions:
    return DemoOptions(rules=load_rules("house-h17"), rounds=rounds, seed=seed, speed="fast", prefix=prefix,
                       quiet=True, dashboard=False, tick_every=5.0, carded=carded)


@contextlib.asynccontextmanager
async def playing(table_id: str, opts: DemoOptions, state: Path, broker: str) -> AsyncIterator[
        tuple[DemoTable, asyncio.Task[None]]]:
    state.mkdir(parents=True, exist_ok=True)
    table = DemoTable(table_id, opts, state, broker, io.StringIO())
    task = asyncio.create_task(table.run())
    try:
        yield table, task
    finally:
        task.cancel()
        with contextlib.suppress(BaseException):
            await task
        await table.close()


class Watcher:
    """The recorder's retained topics as a subscriber sees them."""

    def __init__(self) -> None:
        self.last: dict[str, Any] = {}
        self.changed = asyncio.Event()

    async def wait(self, topic: str, check: Any, timeout: float = 30) -> Any:
        async with asyncio.timeout(timeout):
            while topic not in self.last or not check(self.last[topic]):
                self.changed.clear()
                await self.changed.wait()
        return self.last[topic]


@contextlib.asynccontextmanager
async def watching(broker: Mosquitto, prefix: str = "tables") -> AsyncIterator[Watcher]:
    w = Watcher()
    async with aiomqtt.Client(broker.host, broker.port) as c:
        await c.subscribe(f"{prefix}/recorder/#", qos=1)

        async def pump() -> None:
            async for m in c.messages:
                w.last[m.topic.value] = json.loads(bytes(m.payload))  # type: ignore[arg-type]
                w.changed.set()

        task = asyncio.create_task(pump())
        try:
            yield w
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


def _event(seq: int, **extra: Any) -> bytes:
    return json.dumps({"seq": seq, "ts": 1795334400.0 + seq, "type": "tick"} | extra).encode()


async def test_a_real_tables_journal_lands_seq_for_seq_and_its_position_is_published(
        mosquitto: Mosquitto, tmp_path: Path) -> None:
    db = tmp_path / "recorder.db"
    async with watching(mosquitto) as watch, recording([mosquitto.url], str(db)) as rec, \
            playing("t01", _opts(rounds=6, carded=2), tmp_path / "state", mosquitto.url) as (table, task):
        await asyncio.wait_for(task, 120)
        await table.publisher.wait_drained(60)
        last = table.journal.last_seq
        await until(lambda: recorded_seq(db, "t01") >= last, 60, f"the recorder to hold seq {last}")
        assert_holds_the_journal(db, "t01", table.journal)
        position = await watch.wait("tables/recorder/t01", lambda p: p["seq"] == last)
        assert set(position) == {"table_id", "seq", "journal_id", "head_seq", "head", "ts"}
        assert position["table_id"] == "t01"
        with open_store(str(db), create=False) as store:
            record = store.table("t01")
            ratings = store.ratings()
        assert record is not None and record.journal_id == position["journal_id"]
        # the carded players' ratings, as the table published them (open ones from the retained ratings/open)
        assert {r.table_id for r in ratings} == {"t01"} and len({r.player for r in ratings}) == 2
        assert rec.tally.conflicts == 0 and rec.tally.dropped == 0 and rec.tally.stored == last


async def test_a_repeat_is_dropped_a_conflict_is_an_alarm_and_a_gap_is_an_alarm_until_filled(
        mosquitto: Mosquitto, tmp_path: Path) -> None:
    db = tmp_path / "recorder.db"
    topic = "tables/t07/events"
    async with watching(mosquitto) as watch, recording([mosquitto.url], str(db)) as rec, \
            aiomqtt.Client(mosquitto.host, mosquitto.port) as table:
        for seq in (1, 2, 2, 4, 5):  # 2 again (the same body), then 3 missing
            await table.publish(topic, _event(seq), qos=1)
        gap = await watch.wait("tables/recorder/alarms", lambda a: len(a) == 1)
        assert gap[0] | {"ts": 0} == {"table_id": "t07", "code": "recorder_gap", "from_seq": 3, "to_seq": 3,
                                      "message": gap[0]["message"], "ts": 0}
        assert (await watch.wait("tables/recorder/t07", lambda p: p["seq"] == 2))["head_seq"] is None
        # a state's chain head at a seq beyond the gapless prefix is kept, vouched for only once the prefix reaches it
        head = "c0" * 32
        await table.publish("tables/t07/state", json.dumps({"seq": 5, "journal_id": "ab" * 16, "head": head,
                                                             "pit": "p1"}).encode(), qos=1)
        await table.publish(topic, _event(3), qos=1)  # the gap fills: 3, then the held 4 and 5
        await watch.wait("tables/recorder/alarms", lambda a: a == [])
        position = await watch.wait("tables/recorder/t07", lambda p: p["seq"] == 5 and p["head_seq"] == 5)
        assert position | {"ts": 0} == {"table_id": "t07", "seq": 5, "journal_id": "ab" * 16, "head_seq": 5,
                                        "head": head, "ts": 0}
        await table.publish(topic, _event(4, forged=True), qos=1)  # another body at a seq held: kept, never replaced
        conflict = await watch.wait("tables/recorder/alarms", lambda a: len(a) == 1)
        assert conflict[0]["code"] == "recorder_conflict" and conflict[0]["from_seq"] == conflict[0]["to_seq"] == 4
        assert rec.tally.repeats == 1 and rec.tally.held == 2 and rec.tally.conflicts == 1
    with open_store(str(db), create=False) as store:
        assert [e.body.encode() for e in store.events("t07")] == [_event(s) for s in range(1, 6)]


class MemorySource:
    """The floor's ``TABLES`` stream as the recorder reads it (:class:`controller.recorder.backfill.StreamSource`):
    ``held`` its bodies by seq; each read fails first with what ``failures`` holds, in turn."""

    def __init__(self, held: dict[int, bytes], failures: list[Exception]) -> None:
        self.held, self.failures, self.reads = held, failures, 0

    async def events(self, table_id: str, from_seq: int, to_seq: int) -> list[tuple[int, str]]:
        self.reads += 1
        if self.failures:
            raise self.failures.pop(0)
        return [(s, self.held[s].decode()) for s in range(from_seq, to_seq + 1) if s in self.held]


async def test_a_gap_is_read_from_the_stream_again_after_a_failed_read(mosquitto: Mosquitto, tmp_path: Path,
                                                                        caplog: Any) -> None:
    """The stream cannot be read at first (no node answers, no leader: NatsError): the gap is looked for again
    every ``fill_after`` and filled once it can be, each failure named."""
    db = tmp_path / "recorder.db"
    source = MemorySource({3: _event(3), 4: _event(4)}, [NatsError("no node answers"), NatsError("no leader")])
    async with recording([mosquitto.url], str(db), stream=source, fill_after=0.2) as rec, \
            aiomqtt.Client(mosquitto.host, mosquitto.port) as table:
        for seq in (1, 2, 5):
            await table.publish("tables/t09/events", _event(seq), qos=1)
        await until(lambda: recorded_seq(db, "t09") == 5 and rec.tally.filled == 2, 30, "seqs 3 and 4 filled")
    assert source.reads == 3
    assert [r.getMessage() for r in caplog.records if "not read from the stream" in r.getMessage()] == [
        "t09: seqs 3 to 4 not read from the stream (no node answers)",
        "t09: seqs 3 to 4 not read from the stream (no leader)"]


async def test_a_gap_the_stream_does_not_hold_is_a_warning_once_and_asked_for_again(
        mosquitto: Mosquitto, tmp_path: Path, caplog: Any) -> None:
    """The stream lacks the gap (NATS acknowledges a table's publish without waiting for ``TABLES`` to store it):
    one warning (the recorder's log is at WARNING on the floor), then the gap is still asked for, quietly."""
    caplog.set_level(logging.INFO, logger="controller.recorder")
    db = tmp_path / "recorder.db"
    source = MemorySource({}, [])
    async with recording([mosquitto.url], str(db), stream=source, fill_after=0.2), \
            aiomqtt.Client(mosquitto.host, mosquitto.port) as table:
        for seq in (1, 2, 5):
            await table.publish("tables/t10/events", _event(seq), qos=1)
        await until(lambda: source.reads >= 3, 30, "the gap asked for three times")
    said = [(r.levelname, r.getMessage()) for r in caplog.records if "not in the stream" in r.getMessage()]
    assert said[0] == ("WARNING", "t10: seqs 3 to 4 are not in the stream either (asked again every 0.2 s)")
    assert len(said) >= 3 and {level for level, _ in said[1:]} == {"INFO"}
    assert recorded_seq(db, "t10") == 2


async def test_a_gap_filled_by_the_table_is_forgotten_by_the_gap_filler(mosquitto: Mosquitto, tmp_path: Path) -> None:
    """A recorder runs for months: what it notes of a gap it looked for in the stream (when, and that the stream
    lacked it) goes once the gap is filled, here by the table's own events, or its memory grows with every gap."""
    db = tmp_path / "recorder.db"
    source = MemorySource({}, [])
    async with recording([mosquitto.url], str(db), stream=source, fill_after=0.1) as rec, \
            aiomqtt.Client(mosquitto.host, mosquitto.port) as table:
        for gap in range(5):  # five gaps in turn, each looked for, then sent by the table
            first = 3 * gap + 1
            reads = source.reads
            for seq in (first, first + 2):
                await table.publish("tables/t11/events", _event(seq), qos=1)
            await until(lambda reads=reads: source.reads > reads, 30, f"gap {gap} looked for in the stream")
            await table.publish("tables/t11/events", _event(first + 1), qos=1)
            await until(lambda last=first + 2: recorded_seq(db, "t11") == last, 30, f"gap {gap} filled")
        await until(lambda: rec.gaps_noted == 0, 30, "the filled gaps forgotten")


async def test_unreadable_messages_are_dropped_and_named_and_the_rest_recorded(
        mosquitto: Mosquitto, tmp_path: Path, caplog: Any) -> None:
    db = tmp_path / "recorder.db"
    async with recording([mosquitto.url], str(db)) as rec, aiomqtt.Client(mosquitto.host, mosquitto.port) as table:
        for payload in (b"not json", b'{"no": "seq"}', b'{"seq": 1, "type": "x"}', b"\xff\xfe", _event(1)):
            await table.publish("tables/t08/events", payload, qos=1)
        # counted once back from the commit (a reader may see the row first)
        await until(lambda: recorded_seq(db, "t08") == 1 and rec.tally.dropped >= 4, 30, "seq 1 of t08")
        assert rec.tally.dropped == 4
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("dropped")]
    assert any("tables/t08/events: the payload is not JSON" in line for line in lines)
    assert any("no numeric ts" in line for line in lines)  # the store's own check of a table's event


async def test_killed_9_mid_stream_and_restarted_it_catches_up_from_its_session_with_nothing_missing(
        mosquitto: Mosquitto, tmp_path: Path) -> None:
    db = tmp_path / "recorder.db"
    log = tmp_path / "recorder.log"
    async with watching(mosquitto) as watch:
        first = recorder_process(mosquitto.url, db, log)
        await watch.wait("tables/recorder/alarms", lambda a: True, timeout=60)  # subscribed: its session exists
    try:
        async with playing("t02", _opts(rounds=14, seed=9), tmp_path / "state", mosquitto.url) as (table, task):
            await until(lambda: recorded_seq(db, "t02") >= 40, 90, "the recorder to hold 40 events")
            first.send_signal(signal.SIGKILL)  # mid-stream: some messages delivered, not yet acknowledged
            first.wait(10)
            down_at = table.journal.last_seq
            await until(lambda: table.journal.last_seq >= down_at + 60 or task.done(), 90,
                        "the table to play on while the recorder is down")
            second = recorder_process(mosquitto.url, db, log)
            try:
                await asyncio.wait_for(task, 180)
                await table.publisher.wait_drained(60)
                last = table.journal.last_seq
                assert last > down_at
                await until(lambda: recorded_seq(db, "t02") >= last, 90, f"the restarted recorder to reach {last}")
                assert_holds_the_journal(db, "t02", table.journal)
            finally:
                assert stop_process(second) == 0, log.read_text()
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()


async def test_sigterm_stops_it_cleanly_with_exit_0_and_a_summary(mosquitto: Mosquitto, tmp_path: Path) -> None:
    log = tmp_path / "recorder.log"
    db = tmp_path / "recorder.db"
    async with watching(mosquitto) as watch:
        proc = recorder_process(mosquitto.url, db, log)
        await watch.wait("tables/recorder/alarms", lambda a: True, timeout=60)  # subscribed: its session exists
    try:
        async with aiomqtt.Client(mosquitto.host, mosquitto.port) as table:
            await table.publish("tables/t09/events", _event(1), qos=1)
            await until(lambda: recorded_seq(db, "t09") == 1, 60, "seq 1 of t09")
        assert stop_process(proc) == 0
        text = log.read_text()
        assert "recorder stopped: 1 event(s) stored" in text and "Traceback" not in text
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


async def test_a_message_is_acknowledged_only_once_stored_so_a_kill_9_before_the_commit_loses_nothing(
        mosquitto: Mosquitto, tmp_path: Path) -> None:
    """The insider's move against "nothing lost": messages delivered to the recorder while its database is
    locked (no commit possible), then the recorder killed -9. Had it acknowledged them on receipt (the MQTT
    library's default), the broker would have forgotten them; they come again to the next recorder."""
    import sqlite3

    db = tmp_path / "recorder.db"
    log = tmp_path / "recorder.log"
    async with watching(mosquitto) as watch:
        first = recorder_process(mosquitto.url, db, log, extra=("--log-level", "DEBUG"))
        await watch.wait("tables/recorder/alarms", lambda a: True, timeout=60)
    lock = sqlite3.connect(db, isolation_level=None)
    try:
        lock.execute("BEGIN EXCLUSIVE")  # the recorder can read its messages, not commit them
        async with aiomqtt.Client(mosquitto.host, mosquitto.port) as table:
            for seq in range(1, 11):
                await table.publish("tables/t10/events", _event(seq), qos=1)
        await until(lambda: log.read_text().count("'tables/t10/events'") >= 10, 60,
                    "the recorder to have received the 10 events")
        first.send_signal(signal.SIGKILL)
        first.wait(10)
    finally:
        lock.execute("ROLLBACK")
        lock.close()
        if first.poll() is None:
            first.kill()
            first.wait()
    assert recorded_seq(db, "t10") == 0
    second = recorder_process(mosquitto.url, db, log)
    try:
        await until(lambda: recorded_seq(db, "t10") == 10, 60, "the 10 events from the recorder's session")
    finally:
        assert stop_process(second) == 0
    with open_store(str(db), create=False) as store:
        assert [e.body.encode() for e in store.events("t10")] == [_event(s) for s in range(1, 11)]
