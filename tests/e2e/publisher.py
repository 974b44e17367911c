"""A stand-in table service for the dashboard's browser tests: DESIGN-shaped MQTT for two tables.

How it works: one aiomqtt client per table (client id ``e2e-<prefix>-<table>``), each with the
last will ``offline`` on ``<prefix>/<table>/status`` (retained, QoS 1), as the real service does.
On start every table publishes ``status`` ``online``, its ``alarms`` list and its first
``state`` snapshot (all retained) and prints ``ready``. Every ``state`` carries ``ts`` (now) and
``phase_since`` (when the table last changed phase; at start a few seconds to a minute ago, never
long enough to look idle). Table ``t01`` then plays one scripted
round (:data:`ROUND`: betting, dealing with the hole card ``null``, three players' decisions,
the hole card turned, the dealer's draw, settlement, the next round's betting); ``t02`` sits in
the players phase with a split, insurance against an ace, a late deck change and an alarm.
Each table also publishes its retained ``history`` (its last settled rounds, the shape of
``tablectl recall --json``: :func:`initial_history`) and its retained ``analytics`` (hold against
theoretical and pace, the shape :mod:`controller.analytics.live` publishes: :func:`initial_analytics`;
``t01`` inside its control limits, ``t02`` outside them with a failed shoe and a flagged spot) at start,
and ``t01`` both again when its round settles.

Driven line by line on stdin (each answered by one line on stdout)::

    step            t01 publishes its next frame (events, then state)  -> "step <n> <phase> <seq>"
    alarm t01       raise a procedure alarm on t01                      -> "alarm t01 <id>"
    stop            publish ``offline`` explicitly, disconnect, exit    -> "stopped"

End of input is ``stop``. With ``--auto SECONDS`` it steps on its own, round after round.
Kill it with SIGKILL and the broker publishes the wills: every table goes ``offline``.

Commands: ``<prefix>/<table>/cmd/<role>/<user>/ack_alarm`` with ``{"alarm_id": N, "id": ...}`` is
answered on ``.../ack_alarm/result`` (``{"ok": true, "verb": "ack_alarm", "id": ..., "operator": user}``,
or ``ok`` false with an ``error``); an accepted ack clears the alarm (``alarms``, ``state.alarms`` and
an ``alarm_ack`` event naming the operator are republished).

Run: ``python -m tests.e2e.publisher --port 1883 [--prefix tables] [--auto 1.5]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import copy
import json
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import aiomqtt

from controller.game.cards import hand_total

Json = dict[str, Any]



def _ago(**delta: float) -> str:
    return (datetime.now(UTC) - timedelta(**delta)).isoformat(timespec="seconds").replace("+00:00", "Z")


def _hand(cards: list[str | None], total: int, wager: str, status: str, *, soft: bool = False,
          outcome: str | None = None, payout: str | None = None) -> Json:
    return {"cards": cards, "total": total, "soft": soft, "wager": wager, "status": status,
            "outcome": outcome, "payout": payout}


def _spot(*hands: Json, insurance: Json | None = None) -> Json:
    return {"hands": list(hands), "insurance": insurance}


@dataclass
class Frame:
    """One step of a table: the events it publishes, then the state fields that change."""

    events: list[Json]
    state: Json
    alarms: list[Json] | None = None


# t01: round 57 at spots 1, 3 and 6. The dealer shows 9H; the hole card is `null` until turned (7C).
ROUND: list[Frame] = [
    Frame(
        [{"type": "bet", "spot": 1, "amount": "10"}, {"type": "bet", "spot": 3, "amount": "25"},
         {"type": "bet", "spot": 6, "amount": "5"}],
        {"round": 57, "phase": "betting", "active": None,
         "spots": {"1": _spot(_hand([], 0, "10", "waiting")), "3": _spot(_hand([], 0, "25", "waiting")),
                   "6": _spot(_hand([], 0, "5", "waiting"))},
         "dealer": {"cards": [], "total": 0, "blackjack": None}},
    ),
    Frame(
        [{"type": "no_more_bets"}, {"type": "card", "spot": 1, "card": "8S"}, {"type": "card", "spot": 3, "card": "TD"},
         {"type": "card", "spot": 6, "card": "AH"}, {"type": "card", "to": "dealer", "card": "9H"},
         {"type": "card", "spot": 1, "card": "3D"}, {"type": "card", "spot": 3, "card": "6C"},
         {"type": "card", "spot": 6, "card": "7S"}, {"type": "hole_card", "to": "dealer"}],
        {"phase": "players", "active": {"spot": 1, "hand": 0},
         "spots": {"1": _spot(_hand(["8S", "3D"], 11, "10", "active")),
                   "3": _spot(_hand(["TD", "6C"], 16, "25", "waiting")),
                   "6": _spot(_hand(["AH", "7S"], 18, "5", "waiting", soft=True))},
         "dealer": {"cards": ["9H", None], "total": 9, "blackjack": None},
         "shoe_dealt": 9},
    ),
    Frame(
        [{"type": "decision", "spot": 1, "action": "double", "amount": "10"},
         {"type": "card", "spot": 1, "card": "KH"}],
        {"active": {"spot": 3, "hand": 0},
         "spots": {"1": _spot(_hand(["8S", "3D", "KH"], 21, "20", "doubled")),
                   "3": _spot(_hand(["TD", "6C"], 16, "25", "active")),
                   "6": _spot(_hand(["AH", "7S"], 18, "5", "waiting", soft=True))},
         "shoe_dealt": 10},
    ),
    Frame(
        [{"type": "card", "spot": 3, "card": "9D"}],
        {"active": {"spot": 6, "hand": 0},
         "spots": {"1": _spot(_hand(["8S", "3D", "KH"], 21, "20", "doubled")),
                   "3": _spot(_hand(["TD", "6C", "9D"], 25, "25", "bust")),
                   "6": _spot(_hand(["AH", "7S"], 18, "5", "active", soft=True))},
         "shoe_dealt": 11},
    ),
    Frame(
        [{"type": "decision", "spot": 6, "action": "stand"}, {"type": "dealer_reveal", "card": "7C"}],
        {"phase": "dealer", "active": None,
         "spots": {"1": _spot(_hand(["8S", "3D", "KH"], 21, "20", "doubled")),
                   "3": _spot(_hand(["TD", "6C", "9D"], 25, "25", "bust")),
                   "6": _spot(_hand(["AH", "7S"], 18, "5", "stood", soft=True))},
         "dealer": {"cards": ["9H", "7C"], "total": 16, "blackjack": False}},
    ),
    Frame(
        [{"type": "card", "to": "dealer", "card": "2S"}],
        {"dealer": {"cards": ["9H", "7C", "2S"], "total": 18, "blackjack": False}, "shoe_dealt": 12},
    ),
    Frame(
        [{"type": "round_settled", "round": 57, "house_net": "-15.00"}],
        {"phase": "settled",
         "spots": {"1": _spot(_hand(["8S", "3D", "KH"], 21, "20", "doubled", outcome="win", payout="20")),
                   "3": _spot(_hand(["TD", "6C", "9D"], 25, "25", "bust", outcome="lose", payout="-25")),
                   "6": _spot(_hand(["AH", "7S"], 18, "5", "stood", soft=True, outcome="push", payout="0"))},
         "totals": {"rounds": 57, "handle": "1290.00", "house_net": "36.50"}},
    ),
    Frame(
        [{"type": "round_started", "round": 58}, {"type": "bet", "spot": 2, "amount": "15"}],
        {"round": 58, "phase": "betting", "active": None,
         "spots": {"2": _spot(_hand([], 0, "15", "waiting"))},
         "dealer": {"cards": [], "total": 0, "blackjack": None}},
    ),
]


def initial_state(table: str) -> Json:
    """The first snapshot of each table (``t01`` before its round, ``t02`` mid-round)."""
    now = round(time.time(), 3)
    base: Json = {
        "seq": 0, "table_id": table, "round": 56, "phase": "betting", "halted": None,
        "spots": {}, "active": None, "dealer": {"cards": [], "total": 0, "blackjack": None},
        "shoe": {"decks": 6, "cards_dealt": 141, "penetration": 0.45, "cut_card_reached": False},
        "deck_set": {"id": "B", "opened_at": _ago(hours=3, minutes=20),
                     "change_due_in_s": 8 * 3600 + 40 * 60},
        "limits": {"min_bet": "5", "max_bet": "500"},
        "devices": {"shoe": "ok", "shuffler": "ok", "chips": "ok", "console": "ok"},
        "alarms": 0,
        "totals": {"rounds": 56, "handle": "1240.00", "house_net": "31.50"},
        "profile": "ny-4620",
        "ts": now, "phase_since": now - 12,
    }
    if table == "t01":
        base["seq"] = 1040
        return base
    if table != "t02":  # more tables (screenshots): quiet ones, each a little different
        n = sum(map(ord, table)) % 7
        base.update({
            "seq": 300 + 97 * n, "round": 20 + 9 * n, "phase": ("betting", "shuffling", "settled")[n % 3],
            "shoe": {"decks": 6, "cards_dealt": 24 * n, "penetration": round(24 * n / 312, 3),
                     "cut_card_reached": False},
            "totals": {"rounds": 19 + 9 * n, "handle": f"{410 * (n + 1)}.00", "house_net": f"{-12 + 17 * n}.50"},
        })
        base["deck_set"]["change_due_in_s"] = 3600 * (2 + n)
        base["phase_since"] = now - 9 * (n + 1)
        return base
    base.update({
        "seq": 2210, "round": 131, "phase": "players",
        "spots": {
            "2": _spot(_hand(["8D", "3C", "9S"], 20, "50", "stood"), _hand(["8H", "JS"], 18, "50", "active")),
            "4": _spot(_hand(["KC", "QD"], 20, "25", "waiting"), insurance={"wager": "12.50", "payout": None}),
            "5": _spot(_hand(["5H", "6S"], 11, "100", "waiting")),
        },
        "active": {"spot": 2, "hand": 1},
        "dealer": {"cards": ["AC", None], "total": 11, "blackjack": False},
        "shoe": {"decks": 6, "cards_dealt": 221, "penetration": 0.71, "cut_card_reached": True},
        "deck_set": {"id": "A", "opened_at": _ago(hours=11, minutes=45),
                     "change_due_in_s": 15 * 60},
        "limits": {"min_bet": "25", "max_bet": "2000"},
        "devices": {"shoe": "ok", "shuffler": "ok", "chips": "fault", "console": "ok"},
        "alarms": 1,
        "totals": {"rounds": 130, "handle": "18455.00", "house_net": "512.50"},
        "phase_since": now - 41,
    })
    return base


Hands = dict[str, list[tuple[list[str], str, str, str]]]


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def history_round(number: int, ended: float, dealer: list[str], total: int, spots: Hands,
                  *, blackjack: bool = False, first_seq: int = 1) -> Json:
    """One settled round as the ``history`` topic carries it (``spots``: spot -> [(cards, wager, outcome, payout)])."""
    out: Json = {}
    for n, hands in spots.items():
        net = sum(_cents(p) for *_, p in hands)
        out[n] = {"wager": hands[0][1], "insurance": None, "net": _money(net), "hands": [
            {"cards": c, "total": hand_total(c)[0], "soft": hand_total(c)[1], "wager": w, "status": None,
             "outcome": o, "payout": p} for c, w, o, p in hands]}
    started = ended - 20
    return {"round": number, "started": started, "ended": ended, "started_at": _iso(started), "ended_at": _iso(ended),
            "seq": [first_seq, first_seq + 30], "wagers": {n: h[0][1] for n, h in spots.items()}, "cards": [],
            "dealer": {"cards": dealer, "total": total, "blackjack": blackjack}, "spots": out, "decisions": [],
            "insurance": None, "alarms": [], "totals": None,
            "events": [{"seq": first_seq + 30, "ts": ended, "type": "round_settled", "round": number}]}


def _cents(v: str) -> int:
    whole, _, frac = v.lstrip("-").partition(".")
    c = int(whole) * 100 + int(frac.ljust(2, "0") or 0)
    return -c if v.startswith("-") else c


def _money(c: int) -> str:
    whole, frac = divmod(abs(c), 100)
    return ("-" if c < 0 else "") + (f"{whole}.{frac:02d}" if frac else str(whole))


def initial_history(table: str) -> list[Json]:
    """The last settled rounds each table has at start (oldest first); ``t01``'s end with round 56."""
    now = time.time()
    if table == "t01":
        return [
            history_round(54, now - 300, ["TS", "7D"], 17, {"1": [(["9C", "9D"], "10", "win", "10")]}, first_seq=950),
            history_round(55, now - 200, ["AS", "KH"], 21, {"2": [(["5C", "6D", "TD"], "25", "lose", "-25")],
                                                              "6": [(["AH", "QC"], "5", "push", "0")]},
                          blackjack=True, first_seq=985),
            history_round(56, now - 100, ["6H", "TC", "9S"], 25,
                          {"1": [(["8S", "8C", "3H"], "10", "win", "10"), (["8H", "7S"], "10", "win", "10")],
                           "4": [(["TH", "6S", "KD"], "15", "lose", "-15")]}, first_seq=1010),
        ]
    if table == "t02":
        return [history_round(130, now - 60, ["4C", "TD", "5H"], 19, {"5": [(["JD", "QS"], "100", "win", "100")]},
                              first_seq=2170)]
    return []


#: t01's round 57 (:data:`ROUND`) as its history has it once settled
ROUND_57 = (["9H", "7C", "2S"], 18, {"1": [(["8S", "3D", "KH"], "20", "win", "20")],
                                      "3": [(["TD", "6C", "9D"], "25", "lose", "-25")],
                                      "6": [(["AH", "7S"], "5", "push", "0")]})


def analytics_payload(table: str, *, rounds: int, hands: int, handle: int, net: int, initial: int, sd: int,
                      edge: float = 0.0062, shuffle: Json | None = None, flags: list[Json] | None = None) -> Json:
    """An ``analytics`` message with the given sums (cents; ``sd``: one standard deviation of the win), its
    derived figures computed as the table computes them, and a series that ends at them."""
    theo = round(initial * edge)
    open_s = 3600.0 * rounds / 60
    play = 42.0 * rounds
    opened = time.time() - open_s
    steps = sorted({0, *range(0, rounds, 8), rounds})
    def wander(r: int) -> int:  # the win wanders about a straight line to where it ends
        return 0 if r in (0, rounds) else 900 * ((r * 7) % 5 - 2)

    series = [{"round": r, "ts": round(opened + r * 60, 3), "house_net": _money(round(net * r / rounds) + wander(r)),
               "theoretical_win": _money(round(theo * r / rounds)), "sd": _money(round(sd * (r / rounds) ** 0.5))}
              for r in steps]
    return {"table_id": table, "seq": 0, "profile": "ny-4620", "opened": round(opened, 3), "opened_at": _iso(opened),
            "closed_at": None, "rounds": rounds, "hands": hands, "decisions": 2 * hands, "handle": _money(handle),
            "house_net": _money(net), "initial_wagers": _money(initial), "theoretical_edge": edge,
            "theoretical_win": _money(theo), "hold": round(net / handle, 6),
            "theoretical_hold": round(theo / handle, 6),
            "win_z": round((net - theo) / sd, 6), "win_sd": _money(sd), "sigma": 1.15,
            "sigma_source": "bench run of ny-4620: 40000 rounds, seed 2026", "open_s": open_s, "play_s": play,
            "idle_s": open_s - play, "rounds_per_hour": 60.0, "hands_per_hour": round(hands / (open_s / 3600), 6),
            "decisions_per_hour": round(2 * hands / (open_s / 3600), 6), "mean_round_s": 42.0, "series": series,
            "shuffle": shuffle if shuffle is not None else {"threshold": None, "shoes": []},
            "flagged_spots": flags if flags is not None else []}


def initial_analytics(table: str, *, settled_57: bool = False) -> Json:
    """Each table's ``analytics`` at start (``t01``: also once its round 57 settled, matching its ``totals``)."""
    if table == "t01":
        shuffle = {"threshold": 3.0, "shoes": [{"shoe": 7, "score": 0.82, "alarm": False},
                                               {"shoe": 8, "score": 1.14, "alarm": False},
                                               {"shoe": 9, "score": 0.61, "alarm": False}]}
        if settled_57:
            return {**analytics_payload("t01", rounds=57, hands=123, handle=129000, net=3650, initial=114000,
                                        sd=12770, shuffle=shuffle), "seq": 1047}
        return {**analytics_payload("t01", rounds=56, hands=120, handle=124000, net=3150, initial=110000, sd=12600,
                                    shuffle=shuffle), "seq": 1040}
    if table == "t02":
        shuffle = {"threshold": 3.0, "shoes": [{"shoe": 21, "score": 0.95, "alarm": False},
                                               {"shoe": 22, "score": 4.37, "alarm": True}]}
        flags = [{"spot": 5, "shoe": 22, "reason": "bets follow the true count", "bet_count_correlation": 0.83,
                  "bet_spread": 12}]
        return {**analytics_payload("t02", rounds=130, hands=340, handle=1845500, net=51250, initial=1620000, sd=13000,
                                    shuffle=shuffle, flags=flags), "seq": 2210}
    n = sum(map(ord, table)) % 7
    rounds = 19 + 9 * n
    return {**analytics_payload(table, rounds=rounds, hands=2 * rounds, handle=41000 * (n + 1),
                                net=-1150 + 1700 * n, initial=36000 * (n + 1), sd=9000 + 1500 * n),
            "seq": 300 + 97 * n}


def initial_alarms(table: str) -> list[Json]:
    if table == "t02":
        return [{"id": 3, "code": "chip_sensor_fault", "message": "chip sensor at spot 5 not answering",
                 "halts": False, "raised_at": "2026-11-22T13:58:12Z"}]
    return []


@dataclass
class Table:
    """One simulated table: its snapshot, alarms, next event seq and MQTT client."""

    id: str
    prefix: str
    client: aiomqtt.Client
    state: Json = field(default_factory=dict)
    alarms: list[Json] = field(default_factory=list)
    history: list[Json] = field(default_factory=list)
    analytics: Json = field(default_factory=dict)
    frame: int = 0
    next_alarm: int = 7
    #: the phase of the last state published, to move ``phase_since`` when it changes
    published_phase: str | None = None

    def topic(self, kind: str) -> str:
        return f"{self.prefix}/{self.id}/{kind}"

    async def publish_state(self) -> None:
        self.state["alarms"] = len(self.alarms)
        now = round(time.time(), 3)
        if self.published_phase is not None and self.state["phase"] != self.published_phase:
            self.state["phase_since"] = now
        self.published_phase = self.state["phase"]
        self.state["ts"] = now
        await self.client.publish(self.topic("state"), json.dumps(self.state), qos=1, retain=True)

    async def publish_alarms(self) -> None:
        await self.client.publish(self.topic("alarms"), json.dumps(self.alarms), qos=1, retain=True)

    async def publish_history(self) -> None:
        await self.client.publish(self.topic("history"), json.dumps(self.history), qos=1, retain=True)

    async def publish_analytics(self) -> None:
        await self.client.publish(self.topic("analytics"), json.dumps(self.analytics), qos=1, retain=True)

    async def publish_event(self, event: Json) -> None:
        self.state["seq"] += 1
        body = {"seq": self.state["seq"], "ts": _now(), **event}
        await self.client.publish(self.topic("events"), json.dumps(body), qos=1)

    async def step(self) -> None:
        """Publish the next frame of :data:`ROUND` (wrapping round after round)."""
        frame = ROUND[self.frame % len(ROUND)]
        for ev in frame.events:
            await self.publish_event(ev)
        changes = copy.deepcopy(frame.state)
        dealt = changes.pop("shoe_dealt", None)
        if dealt is not None:
            shoe = self.state["shoe"]
            shoe["cards_dealt"] = 141 + dealt
            shoe["penetration"] = round(shoe["cards_dealt"] / (shoe["decks"] * 52), 3)
        self.state.update(changes)
        lap = self.frame // len(ROUND)
        if lap and "round" in changes:  # later laps: keep the round numbers moving
            self.state["round"] = changes["round"] + lap
        await self.publish_state()
        settled = next((e for e in frame.events if e["type"] == "round_settled"), None)
        if settled is not None:  # the history follows the settlement, as the real table's does
            cards, total, spots = ROUND_57
            self.history = [*self.history, history_round(self.state["round"], time.time(), cards, total, spots,
                                                         first_seq=self.state["seq"] - 30)][-10:]
            await self.publish_history()
            if self.id == "t01" and self.frame < len(ROUND):  # the analytics follow it too (the first lap only)
                self.analytics = {**initial_analytics("t01", settled_57=True), "seq": self.state["seq"]}
                await self.publish_analytics()
        self.frame += 1

    async def raise_alarm(self) -> int:
        alarm_id = self.next_alarm
        self.next_alarm += 1
        self.alarms.append({"id": alarm_id, "code": "procedure", "halts": True,
                            "message": "card drawn for spot 4, which has no wager", "raised_at": _now()})
        self.state["halted"] = "procedure alarm"
        await self.publish_event({"type": "alarm", "alarm_id": alarm_id, "code": "procedure"})
        await self.publish_alarms()
        await self.publish_state()
        return alarm_id

    async def on_command(self, role: str, user: str, verb: str, payload: bytes) -> None:
        try:
            data = json.loads(payload or b"{}")
        except ValueError:
            data = None
        result: Json = {"ok": False, "verb": verb, "operator": user}
        if isinstance(data, dict) and data.get("id") is not None:
            result["id"] = data["id"]
        if verb != "ack_alarm":
            result["error"] = f"unknown command {verb!r}"
        elif not isinstance(data, dict) or not isinstance(data.get("alarm_id"), int):
            result["error"] = "alarm_id: required field missing"
        elif not any(a["id"] == data["alarm_id"] for a in self.alarms):
            result["error"] = f"alarm_id: no active alarm {data['alarm_id']}"
        else:
            self.alarms = [a for a in self.alarms if a["id"] != data["alarm_id"]]
            if not any(a.get("halts") for a in self.alarms):
                self.state["halted"] = None
            await self.publish_event({"type": "alarm_ack", "alarm_id": data["alarm_id"], "operator": user,
                                      "role": role})
            result["ok"] = True
            result["seq"] = self.state["seq"]
        await self.client.publish(self.topic(f"cmd/{role}/{user}/{verb}/result"), json.dumps(result), qos=1)
        if result["ok"]:
            await self.publish_alarms()
            await self.publish_state()


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


async def _serve_commands(table: Table) -> None:
    await table.client.subscribe(table.topic("cmd/+/+/+"), qos=1)
    async for msg in table.client.messages:
        role, user, verb = str(msg.topic).rsplit("/", 3)[-3:]
        payload = msg.payload if isinstance(msg.payload, bytes) else str(msg.payload or "").encode()
        await table.on_command(role, user, verb, payload)


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


async def run(host: str, port: int, prefix: str, tables: list[str], auto: float | None) -> None:
    async with contextlib.AsyncExitStack() as stack:
        sims: dict[str, Table] = {}
        for tid in tables:
            status = f"{prefix}/{tid}/status"
            client = aiomqtt.Client(
                host, port, identifier=f"e2e-{prefix}-{tid}", keepalive=10,
                will=aiomqtt.Will(status, "offline", qos=1, retain=True),
            )
            await stack.enter_async_context(client)
            sim = Table(tid, prefix, client, initial_state(tid), initial_alarms(tid), initial_history(tid),
                        initial_analytics(tid))
            sims[tid] = sim
            await client.publish(status, "online", qos=1, retain=True)
            await sim.publish_alarms()
            await sim.publish_history()
            await sim.publish_analytics()
            await sim.publish_state()
        tasks = [asyncio.create_task(_serve_commands(s)) for s in sims.values()]
        first = sims[tables[0]]
        _say("ready")
        try:
            if auto is not None:
                while True:
                    await asyncio.sleep(auto)
                    await first.step()
            while True:
                line = (await asyncio.to_thread(sys.stdin.readline)).strip()
                cmd, _, arg = line.partition(" ")
                if cmd == "step":
                    await first.step()
                    _say(f"step {first.frame} {first.state['phase']} {first.state['seq']}")
                elif cmd == "alarm":
                    alarm_id = await sims[arg or first.id].raise_alarm()
                    _say(f"alarm {arg or first.id} {alarm_id}")
                elif cmd in ("stop", ""):
                    for s in sims.values():
                        await s.client.publish(s.topic("status"), "offline", qos=1, retain=True)
                    break
                else:
                    _say(f"error unknown command {line!r}")
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
    _say("stopped")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--prefix", default="tables")
    ap.add_argument("--tables", default="t01,t02")
    ap.add_argument("--auto", type=float, default=None, metavar="SECONDS", help="step t01 on its own every SECONDS")
    a = ap.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run(a.host, a.port, a.prefix, a.tables.split(","), a.auto))


if __name__ == "__main__":
    main()
