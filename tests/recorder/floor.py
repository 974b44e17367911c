"""Test helpers of the recorder's readers: real journals (a demo played by the real table code), a recorder's
database filled from them through the store's API exactly as the recorder service fills it, and the moves of
a root user holding the journal key.

``record(store, state_dir, pits)`` writes, for each ``<table>.journal``: every outbox body with
``add_event`` (what the table published on ``events``), then for every seq ``note_state`` with the journal's
id, the outbox row's chain hash (the ``head`` the table's ``state`` carries at that seq) and the table's pit,
and every rating with ``add_rating`` (what it published on ``ratings`` and ``ratings/open``).

``rechain(path, key, ...)``: the insider's tool. It writes the journal again under the real key and the same
journal id, input by input with each input's records, through the table's own :class:`Journal`: a row it
does not edit gets the very hash it had; every row after an edit gets a new, valid one. ``upto_input`` drops
what follows (a truncation).
"""

from __future__ import annotations

import json
import sqlite3
from collections import defaultdict
from collections.abc import Callable, Mapping
from contextlib import closing
from pathlib import Path

from controller.journal import Journal
from controller.journal.anchor import load_key
from controller.recorder.store import RecorderStore
from controller.reports.ratings import journal_ratings

Edit = Callable[[int, str], str]


def record(store: RecorderStore, state: Path, pits: Mapping[str, str | None] | None = None, *,
           upto: Mapping[str, int] | None = None) -> None:
    """Fill ``store`` from every journal of the demo state dir ``state`` (``upto``: a table's last seq sent)."""
    key = load_key(state / "journal.key")
    for path in sorted(state.glob("*.journal")):
        table = path.name.removesuffix(".journal")
        last = (upto or {}).get(table)
        with Journal.open_readonly(path, key=key) as journal:
            for row in journal.records(1, last):
                assert store.add_event(table, row.seq, row.body) == "stored"
                head = journal.row_hash("outbox", row.seq)
                assert head is not None
                store.note_state(table, row.seq, journal.journal_id, head.hex(), (pits or {}).get(table))
        # the ratings it published: each ended one (``ratings``), and the ones still open (``ratings/open``)
        published, _ = journal_ratings(path, None)
        for rating in published:
            store.add_rating(table, json.dumps(rating, separators=(",", ":")))


def rechain(path: Path, key: bytes, *, edit_input: Edit | None = None, edit_record: Edit | None = None,
            upto_input: int | None = None) -> None:
    """Write ``path`` again under ``key`` and its own journal id, editing inputs/records on the way."""
    with closing(sqlite3.connect(path)) as db:
        journal_id = str(db.execute("SELECT value FROM meta WHERE key = 'journal_id'").fetchone()[0])
        inputs = db.execute("SELECT id, ts, event FROM inputs ORDER BY id").fetchall()
        records: dict[int, list[tuple[int, str]]] = defaultdict(list)
        for seq, input_id, body in db.execute("SELECT seq, input_id, body FROM outbox ORDER BY seq"):
            records[int(input_id)].append((int(seq), str(body)))
    new = path.with_name(path.name + ".new")
    Journal(new, key=key, synchronous="NORMAL").close()
    with closing(sqlite3.connect(new)) as db, db:
        db.execute("UPDATE meta SET value = ? WHERE key = 'journal_id'", (journal_id,))
    with Journal(new, key=key, synchronous="NORMAL") as journal:
        # the records before the first input (a new journal's journal_started), then each input with its own
        journal.add_records([json.loads(edit_record(seq, body) if edit_record else body) for seq, body in records[0]])
        for input_id, ts, text in inputs:
            if upto_input is not None and input_id > upto_input:
                break
            event = edit_input(input_id, text) if edit_input else text
            bodies = [json.loads(edit_record(seq, body) if edit_record else body) for seq, body in records[input_id]]
            journal.commit_event(event, bodies, ts=float(ts))
    for suffix in ("-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)
    new.replace(path)
    for suffix in ("-wal", "-shm", ".lock"):
        path.with_name(new.name + suffix).unlink(missing_ok=True)
