"""The recorder on PostgreSQL (Debian's server, started by tests/postgres.py): a real table's journal lands seq
for seq, and PostgreSQL restarted mid-stream loses nothing: the messages wait unacknowledged and are written
once it is back."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.mqtt_broker import Mosquitto
from tests.postgres import PostgresServer
from tests.recorder.helpers import assert_holds_the_journal, recorded_seq, recording, until
from tests.recorder.test_recorder_service import _opts, playing


async def test_postgres_restarted_mid_stream_loses_nothing(mosquitto: Mosquitto, postgres_server: PostgresServer,
                                                           tmp_path: Path) -> None:
    db = postgres_server.fresh_database()
    async with recording([mosquitto.url], db, store_retry_max=0.5) as rec, \
            playing("t03", _opts(rounds=12, seed=11), tmp_path / "state", mosquitto.url) as (table, task):
        await until(lambda: rec.tally.stored >= 30, 90, "30 events in PostgreSQL")
        try:
            await asyncio.to_thread(postgres_server.stop)  # the casino's PostgreSQL restarts: sessions cut
            down_at = table.journal.last_seq
            await until(lambda: table.journal.last_seq >= down_at + 30 or task.done(), 90,
                        "the table to play on while PostgreSQL is down")
        finally:
            await asyncio.to_thread(postgres_server.start)
        await asyncio.wait_for(task, 180)
        await table.publisher.wait_drained(60)
        last = table.journal.last_seq
        await until(lambda: recorded_seq(db, "t03") >= last, 90, f"PostgreSQL to hold seq {last}")
        assert_holds_the_journal(db, "t03", table.journal)
        assert rec.tally.store_outages >= 1 and rec.tally.conflicts == 0
