"""Hand-made public records of a table with dealers on duty, in the shapes of DESIGN "The dealer on duty" and the
coordinator's spec (``dealer_changed``; ``dealer_id`` on ``no_more_bets`` and ``round_settled``)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from controller.game.money import format_money


class Row(NamedTuple):
    seq: int
    body: str


@dataclass
class Records:
    """A table's public records, written one by one, the engine's running totals kept as the engine keeps them."""

    ts: float = 1_795_334_400.0
    bodies: list[dict[str, Any]] = field(default_factory=list)
    rounds: int = 0
    handle: int = 0  # cents
    house_net: int = 0

    def add(self, kind: str, dt: float = 1.0, **fields: Any) -> dict[str, Any]:
        self.ts += dt
        body = {"seq": len(self.bodies) + 1, "ts": round(self.ts, 3), "type": kind, **fields}
        self.bodies.append(body)
        return body

    def opened(self) -> None:
        self.rounds = self.handle = self.house_net = 0
        self.add("table_opened")

    def dealer(self, dealer: str | None, previous: str | None, by: str = "badge", dt: float = 1.0) -> None:
        self.add("dealer_changed", dt, dealer=dealer, previous=previous, by=by)

    def alarm(self, code: str, *, halts: bool = False) -> None:
        self.add("alarm", id=len(self.bodies), code=code, message=code, halts=halts, integrity=False)

    def round(self, dealer: str | None, wagers: dict[int, int], nets: dict[int, int], *, relieved_by: Any = "-",
              alarms: tuple[str, ...] = (), named: bool = True, dt: float = 10.0) -> None:
        """One round: a bet on each spot (cents), betting closed by ``dealer``, ``alarms`` raised in it, each spot's
        net to the player (cents) settled. ``named`` False: records from before dealers (no ``dealer_id``)."""
        for spot, amount in wagers.items():
            self.add("bet", spot=spot, amount=format_money(amount))
        self.rounds += 1
        who: dict[str, Any] = {"dealer_id": dealer} if named else {}
        self.add("no_more_bets", round=self.rounds, wagers={str(s): format_money(a) for s, a in wagers.items()},
                 **who)
        for code in alarms:
            self.alarm(code)
        self.handle += sum(wagers.values())
        self.house_net -= sum(nets.values())
        relief = {} if relieved_by == "-" else {"relieved_by": relieved_by}
        self.add("round_settled", dt=dt, round=self.rounds,
                 nets={str(s): format_money(n) for s, n in nets.items()},
                 totals={"rounds": self.rounds, "handle": format_money(self.handle),
                         "house_net": format_money(self.house_net)}, **who, **relief)

    def closed(self) -> None:
        self.add("table_closed")


class Log:
    """:class:`controller.records.PublicLog` over the records (a journal's outbox, as a restart reads it)."""

    def __init__(self, bodies: list[dict[str, Any]], path: str = "t01.journal") -> None:
        self.rows = [Row(b["seq"], json.dumps(b, separators=(",", ":"))) for b in bodies]
        self.path = path

    @property
    def last_seq(self) -> int:
        return len(self.rows)

    def records(self, from_seq: int = 1, to_seq: int | None = None) -> list[Row]:
        return self.rows[from_seq - 1:(to_seq if to_seq is not None else len(self.rows))]
