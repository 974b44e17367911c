"""Recall and the history topic name each round's dealer (controller/records.py; DESIGN "The dealer on duty"):
``dealer_id`` on every rebuilt round, ``relieved_by`` on a round dealt across a relief, from the engine's own
records; a round journaled before dealers were known has ``dealer_id`` null."""

from __future__ import annotations

import json
from typing import Any

from controller.game import events as ev
from controller.game.effects import Record
from controller.game.table import Table
from controller.profiles import load_rules
from controller.records import RoundHistory, rounds


def _published(*inputs: ev.Event) -> list[dict[str, Any]]:
    """The engine's public records of ``inputs``, numbered as the journal's outbox numbers them."""
    table = Table(load_rules("nj-shoe"))
    out: list[dict[str, Any]] = []
    for event in inputs:
        for effect in table.handle(event):
            if isinstance(effect, Record):
                out.append({"seq": len(out) + 1, "ts": 1000.0 + len(out), "type": effect.type, **effect.data})
    return out


def _round(*between: ev.Event) -> list[ev.Event]:
    return [ev.BetPlaced(1, 1000), ev.NoMoreBets(), *(ev.CardDrawn(c) for c in ("TS", "7H", "KD", "TD")), *between,
            ev.Decision(spot=1, action="stand")]


class _Log:
    def __init__(self, events: list[dict[str, Any]]) -> None:
        self.events = events

    @property
    def last_seq(self) -> int:
        return len(self.events)

    def records(self, from_seq: int = 1, to_seq: int | None = None) -> list[Any]:
        class Row:
            def __init__(self, e: dict[str, Any]) -> None:
                self.seq, self.body = e["seq"], json.dumps({k: v for k, v in e.items() if k != "seq"})

        return [Row(e) for e in self.events if e["seq"] >= from_seq and (to_seq is None or e["seq"] <= to_seq)]


def test_each_round_names_its_dealer_and_the_one_who_relieved_it() -> None:
    events = _published(ev.TableOpened(now=0.0), ev.ShuffleDone(count=416), ev.CardDrawn("2C"), *_round(),
                        ev.DealerAssigned("d.ames", "badge"), *_round(),
                        *_round(ev.DealerAssigned("d.brun", "s.jones")), *_round(ev.DealerAssigned(None, "badge")),
                        *_round())
    got = [(r["round"], r["dealer_id"], r.get("relieved_by", "-")) for r in rounds(events)]
    assert got == [(1, None, "-"), (2, "d.ames", "-"), (3, "d.ames", "d.brun"), (4, "d.brun", None), (5, None, "-")]
    # the history topic is the same rounds
    history = RoundHistory(keep=10)
    history.load(_Log(events))
    assert [(r["round"], r["dealer_id"]) for r in json.loads(history.payload())] == [
        (1, None), (2, "d.ames"), (3, "d.ames"), (4, "d.brun"), (5, None)]


def test_a_round_journaled_before_dealers_has_none() -> None:
    events = _published(ev.TableOpened(now=0.0), ev.ShuffleDone(count=416), ev.CardDrawn("2C"), *_round())
    for e in events:
        e.pop("dealer_id", None)  # as an engine of before wrote them
    (r,) = rounds(events)
    assert r["dealer_id"] is None and "relieved_by" not in r
