"""The central recorder (DESIGN, "The casino floor"): every table's published events, chain heads and ratings,
kept gapless per table in one database (:mod:`controller.recorder.store`), and the casino-wide readers of it."""

from controller.recorder.store import (
    Head,
    Position,
    Rating,
    RecorderStore,
    StoredEvent,
    StoreError,
    StoreRefused,
    StoreUnavailable,
    TableRecord,
    open_store,
)

__all__ = [
    "Head",
    "Position",
    "Rating",
    "RecorderStore",
    "StoreError",
    "StoreRefused",
    "StoreUnavailable",
    "StoredEvent",
    "TableRecord",
    "open_store",
]
