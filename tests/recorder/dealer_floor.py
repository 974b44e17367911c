"""Two tables' hand-made records with dealers on duty, and a recorder's database holding them (both backends)."""

from __future__ import annotations

import json

from controller.recorder.store import open_store
from tests.analytics.dealer_records import Records


def two_tables() -> dict[str, Records]:
    """t01: d.ames deals 3 rounds, relieved by d.bo during the 3rd, d.bo deals 2; t02: d.bo 2 rounds, no dealer 1."""
    t1 = Records()
    t1.opened()
    t1.dealer("d.ames", None)
    t1.round("d.ames", {1: 1000}, {1: 0})
    t1.round("d.ames", {1: 1000}, {1: 1000})
    t1.round("d.ames", {1: 1000}, {1: -1000}, relieved_by="d.bo")
    t1.dealer("d.bo", "d.ames")
    t1.round("d.bo", {2: 500}, {2: 0})
    t1.round("d.bo", {2: 500}, {2: 500})
    t2 = Records(ts=1_795_334_405.0)
    t2.opened()
    t2.dealer("d.bo", None)
    t2.round("d.bo", {1: 1000}, {1: 0})
    t2.round("d.bo", {1: 1000}, {1: 0})
    t2.dealer(None, "d.bo")
    t2.round(None, {1: 1000}, {1: 0})
    return {"t01": t1, "t02": t2}


def fill(store_url: str) -> str:
    """The recorder's database of :func:`two_tables` at ``store_url``: its URL."""
    with open_store(store_url) as store:
        for table, records in two_tables().items():
            for b in records.bodies:
                assert store.add_event(table, b["seq"], json.dumps(b, separators=(",", ":"))) == "stored"
    return store_url
