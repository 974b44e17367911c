"""Events a recorder is missing, read back from the floor's ``TABLES`` stream (JetStream, over the NATS protocol).

A recorder that starts on a floor already playing, or whose session lost messages, holds a table's later
events beyond a gap (``recorder_gap``). On a NATS floor every table's events are also in the ``TABLES``
stream (:mod:`controller.floor.stream`, 30 days): :meth:`StreamSource.events` finds the table's events in a
``seq`` range there, as the cluster's ``floor-admin`` user (JetStream's API only; no pit user may use the NATS
port). Only a table's own user can publish on its subject, so the stream holds what the table published,
byte for byte; the store still checks each body (a repeat must be the same body, a new one fills the gap).

Finding them: the stream interleaves every table, and a table's ``seq`` only rises along it (a table that
reconnects sends its last few acknowledged events again: :data:`RESEND_MARGIN`), so a binary search over the
stream's sequence (``MSG.GET`` with ``next_by_subj``) finds where the range starts, and a scan of that table's
subject from there collects it. The scan reads :data:`BATCH` messages a request (JetStream's batched direct get,
``allow_direct`` on the stream: :func:`controller.floor.stream.stream_config`), so a range costs about
``log2(stream) + range / BATCH`` requests; on a stream made before ``allow_direct`` it reads one message a request
(``range`` requests), as it always did. Each request waits its turn on the recorder's event loop, which a catch-up
keeps busy: in the cluster soak under load (a 2-core machine with other work) they took 80 to 130 ms each, so a gap
of 3,000 events read one message a request (about 3,400 requests) takes minutes, past the soak's 90 s (one possible
cause of its unfilled t01 1515..4491, seed 138: docs/floor.md). A direct get is answered by any node holding the
stream, and a follower serves them once it is 90 % caught up: where a batch ends short of the leader's last
message, the leader (``MSG.GET``) says whether there is more, and if there is, the scan goes on one message a
request from the leader.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

from controller.floor.nats_client import NatsError, NatsRequester
from controller.floor.stream import STREAM
from controller.floor.subjects import mqtt_topic_subject

__all__ = ["BATCH", "RESEND_MARGIN", "StreamSource", "parse_nats_url"]

#: how far back in ``seq`` a table may publish again after a reconnect (its publisher resends 64)
RESEND_MARGIN: Final = 128
#: messages of the table a scan asks for in one request (at most :data:`_BATCH_BYTES` of them)
BATCH: Final = 256
#: at most this many bytes a batch (the product's largest message is about 135 KB: docs/mqtt.md)
_BATCH_BYTES: Final = 1 << 20
_NOT_FOUND: Final = 10037  # JetStream: no message found


def parse_nats_url(url: str) -> tuple[str, int]:
    """``nats://HOST:PORT`` (or ``HOST:PORT``) as host and port; ``ValueError`` naming what is wrong."""
    parts = urlsplit(url if "://" in url else f"nats://{url}")
    if parts.scheme not in ("nats", "tls"):
        raise ValueError(f"stream address {url!r}: expected nats://HOST:PORT (a node's NATS client port)")
    try:
        port = parts.port or 4222
    except ValueError:
        raise ValueError(f"stream address {url!r}: bad port") from None
    if not parts.hostname:
        raise ValueError(f"stream address {url!r}: no host")
    return parts.hostname, port


@dataclass
class StreamSource:
    """The ``TABLES`` stream on the floor's nodes (``urls``: their NATS client ports, tried in order)."""

    urls: Sequence[str]
    user: str
    password: str = field(repr=False)
    prefix: str = "tables"
    tls_ca: Path | None = None
    timeout: float = 5.0

    async def events(self, table_id: str, from_seq: int, to_seq: int) -> list[tuple[int, str]]:
        """The table's event bodies with ``seq`` in ``[from_seq, to_seq]`` the stream holds, in stream order
        (a seq may come more than once: the store keeps the first good one). Raises :class:`NatsError` when
        no node answers."""
        errors = []
        for url in self.urls:
            host, port = parse_nats_url(url)
            try:
                async with NatsRequester(host, port, user=self.user, password=self.password, timeout=self.timeout,
                                         tls_ca=self.tls_ca) as nats:
                    return await _find(nats, mqtt_topic_subject(f"{self.prefix}/{table_id}/events"), from_seq,
                                       to_seq)
            except NatsError as exc:
                errors.append(f"{host}:{port}: {exc}")
        raise NatsError("; ".join(errors) or "no stream address")


def _event(data: bytes) -> tuple[int | None, str | None]:
    """A stored message's body as text and the table's ``seq`` in it; ``(None, None)`` when unreadable."""
    try:
        text = data.decode("utf-8")
        seq = json.loads(text).get("seq")
    except (ValueError, AttributeError):
        return None, None
    return (seq if isinstance(seq, int) and not isinstance(seq, bool) else None), text


async def _get(nats: NatsRequester, subject: str, at: int) -> tuple[int, int | None, str | None] | None:
    """The first message of ``subject`` at or after stream sequence ``at``: its stream seq, the table's seq in
    its body (None when unreadable) and the body; None when there is none."""
    answer = await nats.request(f"$JS.API.STREAM.MSG.GET.{STREAM}", {"seq": at, "next_by_subj": subject})
    error = answer.get("error")
    if isinstance(error, dict):
        if error.get("err_code") == _NOT_FOUND or error.get("code") == 404:
            return None
        raise NatsError(f"stream {STREAM}: {error.get('description', 'refused')}")
    message: dict[str, Any] = answer.get("message", {})
    try:
        seq, text = _event(base64.b64decode(message["data"]))
    except (KeyError, ValueError, TypeError):
        return int(message.get("seq", at)), None, None
    return int(message["seq"]), seq, text


async def _get_batch(nats: NatsRequester, subject: str, at: int) -> list[tuple[int, int | None, str | None]]:
    """Up to :data:`BATCH` messages of ``subject`` from stream sequence ``at`` on, in one request (a batched direct
    get), each as :func:`_get` gives it; [] when there is none."""
    answers = await nats.request_many(f"$JS.API.DIRECT.GET.{STREAM}", {
        "seq": at, "next_by_subj": subject, "batch": BATCH, "max_bytes": _BATCH_BYTES})
    out: list[tuple[int, int | None, str | None]] = []
    for fields, data in answers:
        try:
            stream_seq = int(fields["Nats-Sequence"])
        except (KeyError, ValueError):
            raise NatsError(f"stream {STREAM}: a direct get answered without its stream sequence") from None
        out.append((stream_seq, *_event(data)))
    return out


async def _find(nats: NatsRequester, subject: str, from_seq: int, to_seq: int) -> list[tuple[int, str]]:
    info = await nats.request(f"$JS.API.STREAM.INFO.{STREAM}")
    error = info.get("error")
    if isinstance(error, dict):  # e.g. no leader yet: not an empty stream (the caller tries the next node, later again)
        raise NatsError(f"stream {STREAM}: {error.get('description', 'refused')}")
    state = info.get("state", {})
    first, last = int(state.get("first_seq", 0)), int(state.get("last_seq", 0))
    if last < first or last == 0:
        return []
    direct = info.get("config", {}).get("allow_direct") is True
    target = from_seq - RESEND_MARGIN
    lo, hi = first, last + 1
    while lo < hi:  # the first stream position whose next message of the table has seq >= target
        mid = (lo + hi) // 2
        found = await _get(nats, subject, mid)
        if found is None or (found[1] is not None and found[1] >= target):
            hi = mid
        else:
            lo = found[0] + 1
    out: list[tuple[int, str]] = []
    at = lo
    while at <= last:
        batch = await _get_batch(nats, subject, at) if direct else []
        if not batch:  # the end, by the leader's word: a follower answering a direct get may lag behind it
            one = await _get(nats, subject, at)
            if one is None:
                break
            batch, direct = [one], False  # it did: the rest one message a request, from the leader
        for _stream_seq, seq, text in batch:
            if seq is not None and text is not None:
                if seq > to_seq + RESEND_MARGIN:
                    return out
                if from_seq <= seq <= to_seq:
                    out.append((seq, text))
        at = batch[-1][0] + 1
    return out
