"""Finding a table's events in the floor's ``TABLES`` stream (:mod:`controller.recorder.backfill`), against a stream
held in memory: JetStream's ``STREAM.INFO`` and ``STREAM.MSG.GET`` (``next_by_subj``) answered as a node does."""

from __future__ import annotations

import base64
import json
from typing import Any, cast

import pytest

from controller.floor.nats_client import NatsError, NatsRequester, Reply
from controller.floor.stream import STREAM
from controller.recorder.backfill import BATCH, RESEND_MARGIN, _find


def _body(table_id: str, seq: int) -> str:
    return json.dumps({"table_id": table_id, "seq": seq, "ts": float(seq), "type": "card"}, separators=(",", ":"))


class MemoryStream:
    """The ``TABLES`` stream's messages in stream order (stream seq 1, 2, ...), each a subject and a body; answers
    the JetStream API requests :func:`_find` makes (``direct``: the stream allows batched direct gets), and counts
    them."""

    def __init__(self, messages: list[tuple[str, str]], *, direct: bool = True) -> None:
        self.messages = messages
        self.direct = direct
        self.requests = 0
        #: the last stream seq the node answering direct gets holds (a follower behind the leader), else None
        self.follower_last: int | None = None

    def _next(self, subject: str, at: int, last: int | None = None) -> int | None:
        """The stream seq of the first message of ``subject`` at or after ``at`` (up to ``last``)."""
        for seq in range(max(1, at), (last or len(self.messages)) + 1):
            if self.messages[seq - 1][0] == subject:
                return seq
        return None

    async def request(self, subject: str, payload: dict[str, Any] | None = None) -> dict[str, Any]:
        self.requests += 1
        if subject == f"$JS.API.STREAM.INFO.{STREAM}":
            return {"config": {"name": STREAM, "allow_direct": self.direct},
                    "state": {"first_seq": 1, "last_seq": len(self.messages), "messages": len(self.messages)}}
        assert subject == f"$JS.API.STREAM.MSG.GET.{STREAM}" and payload is not None
        at = self._next(payload["next_by_subj"], payload["seq"])
        if at is None:
            return {"error": {"code": 404, "err_code": 10037, "description": "no message found"}}
        msg_subject, body = self.messages[at - 1]
        return {"message": {"subject": msg_subject, "seq": at, "data": base64.b64encode(body.encode()).decode()}}

    async def request_many(self, subject: str, payload: dict[str, Any] | None = None) -> list[Reply]:
        self.requests += 1
        assert self.direct, "no responders: the stream does not allow direct gets"
        assert subject == f"$JS.API.DIRECT.GET.{STREAM}" and payload is not None
        out: list[Reply] = []
        at = self._next(payload["next_by_subj"], payload["seq"], self.follower_last)
        while at is not None and len(out) < payload["batch"]:
            msg_subject, body = self.messages[at - 1]
            out.append(({"Nats-Stream": STREAM, "Nats-Subject": msg_subject, "Nats-Sequence": str(at)}, body.encode()))
            at = self._next(payload["next_by_subj"], at + 1, self.follower_last)
        return out


def _published(last: int, reconnects: dict[int, int]) -> list[tuple[int, int]]:
    """What a table's publisher puts on the wire, 1 to ``last``, as ``(seq, copy)`` (0: its first publish, 1: the
    next...): after publishing ``sent`` (a key of ``reconnects``) it reconnects acknowledged up to ``acked`` (its
    value), sends its last 64 acknowledged again, then goes on after ``acked`` (controller.mqtt.publisher: 64 in
    flight, 64 resent; with 64 in flight the table's seq goes back 127 along the stream)."""
    out: list[tuple[int, int]] = []
    copies: dict[int, int] = {}

    def put(seq: int) -> None:
        out.append((seq, copies.get(seq, 0)))
        copies[seq] = copies.get(seq, 0) + 1

    pending = dict(reconnects)
    seq = 0
    while seq < last:
        seq += 1
        put(seq)
        if seq in pending:
            acked = pending.pop(seq)
            for again in range(max(1, acked - 63), acked + 1):
                put(again)
            seq = acked
    return out


def _stream(t01: list[tuple[int, int]], lost: set[tuple[int, int]], *, direct: bool = True) -> MemoryStream:
    """t01's publishes but the ``lost`` ones (the stream did not store them: a node lost, a leader elected),
    interleaved with t02's, in one stream."""
    kept = [s for s, copy in t01 if (s, copy) not in lost]
    t02 = [s for s, _ in _published(3000, {900: 836, 2000: 1936})]
    messages: list[tuple[str, str]] = []
    for i in range(max(len(kept), len(t02))):
        messages += [(f"tables.{t}.events", _body(t, seqs[i])) for t, seqs in (("t01", kept), ("t02", t02))
                     if i < len(seqs)]
    return MemoryStream(messages, direct=direct)


async def _find_in(stream: MemoryStream, from_seq: int, to_seq: int) -> list[int]:
    found = await _find(cast(NatsRequester, stream), "tables.t01.events", from_seq, to_seq)
    assert all(body == _body("t01", seq) for seq, body in found)
    return sorted({seq for seq, _ in found})


#: where t01 reconnected, acknowledged up to these seqs, 64 in flight: they move the search's probes over the stream
#: (with 1766 a margin of 126, one short of the 127 a table goes back, starts the search past seq 1830)
ACKED = [1000, 1500, 1766, 2222, 2910]


@pytest.mark.parametrize("direct", [True, False], ids=["batched", "one by one"])
@pytest.mark.parametrize("acked", ACKED)
async def test_find_collects_a_range_whose_only_copies_the_table_resent_after_going_back_127(acked: int,
                                                                                            direct: bool) -> None:
    """The stream missed t01's events up to ``acked`` as it first sent them and holds them only as resent after a
    reconnect, behind the 64 that were in flight: the range is found whole (the scan does not stop at the in-flight
    ones, 64 seqs past its end)."""
    stream = _stream(_published(4000, {acked + 64: acked}),
                     lost={(s, 0) for s in range(acked - 63, acked + 1)}, direct=direct)
    assert await _find_in(stream, acked - 63, acked) == list(range(acked - 63, acked + 1))


@pytest.mark.parametrize("direct", [True, False], ids=["batched", "one by one"])
@pytest.mark.parametrize("acked", ACKED)
@pytest.mark.parametrize("first", [1, 32, 64])
async def test_find_collects_a_range_whose_only_copies_came_before_the_table_went_back_127(acked: int, first: int,
                                                                                           direct: bool) -> None:
    """The stream holds t01's 64 events in flight at a reconnect only as first sent (not as sent again after the
    resend of the 64 before them): a range starting among them is found whole (the search does not start past
    them, at the resend 127 seqs lower)."""
    stream = _stream(_published(4000, {acked + 64: acked}),
                     lost={(s, 1) for s in range(acked + 1, acked + 65)}, direct=direct)
    assert await _find_in(stream, acked + first, acked + 64) == list(range(acked + first, acked + 65))


async def test_find_reads_a_range_not_the_whole_stream_and_in_batches_where_the_stream_allows() -> None:
    """A binary search to the range's start (about log2(stream) requests), then the range with its margins: one
    request a message on a stream without ``allow_direct``, one a :data:`BATCH` of the table's messages with it."""
    for direct, most in ((False, 2 * 13 + 101 + 2 * RESEND_MARGIN), (True, 2 * 13 + 2)):
        stream = _stream(_published(4000, {1564: 1500}), lost=set(), direct=direct)
        assert len(stream.messages) > 7000
        assert await _find_in(stream, 2000, 2100) == list(range(2000, 2101))
        assert stream.requests < most, (direct, stream.requests)


async def test_a_gap_of_3000_events_is_read_in_a_few_dozen_requests() -> None:
    """The cluster soak's unfilled gap (seed 138: t01 1515 to 4491, t02 interleaved): read one message a request it
    took about 3,400 requests, each waiting on the recorder's busy event loop (80 to 130 ms each in the soak under
    load: minutes, against its 90 s); with the stream's batched direct gets it takes log2(stream) + 3,000 / BATCH."""
    stream = _stream(_published(5715, {1600: 1536, 3000: 2936, 4600: 4536}), lost=set())
    assert await _find_in(stream, 1515, 4491) == list(range(1515, 4492))
    assert stream.requests < 2 * 14 + (4491 - 1515 + 3 * 64 + 2 * RESEND_MARGIN) // BATCH + 3, stream.requests


async def test_what_a_follower_behind_the_leader_lacks_is_read_from_the_leader() -> None:
    """A direct get may be answered by a follower that does not hold the stream's newest messages yet (NATS lets one
    serve them from 90 % caught up): the range is read whole all the same, the rest from the leader."""
    stream = _stream(_published(4000, {}), lost=set())
    stream.follower_last = len(stream.messages) * 9 // 10  # t01 up to about seq 3600
    assert await _find_in(stream, 3000, 4000) == list(range(3000, 4001))


async def test_a_stream_that_cannot_answer_is_an_error_not_an_empty_stream() -> None:
    """``STREAM.INFO`` answered with an error (no leader yet after a quorum loss): NatsError (the recorder tries the
    next node and says why), not "not in the stream either"."""

    class Leaderless(MemoryStream):
        async def request(self, subject: str, payload: dict[str, Any] | None = None) -> dict[str, Any]:
            return {"error": {"code": 503, "err_code": 10008,
                              "description": "JetStream system temporarily unavailable"}}

    with pytest.raises(NatsError, match="temporarily unavailable"):
        await _find(cast(NatsRequester, Leaderless([])), "tables.t01.events", 1, 10)
