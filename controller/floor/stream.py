"""The floor's durable log: the ``TABLES`` JetStream stream of every table's ``events`` (DESIGN.md, "The casino floor").

A table publishes its events over MQTT on ``<prefix>/<table>/events``; NATS delivers each on the subject
``<prefix>.<table>.events`` (:mod:`controller.floor.subjects`), which the stream captures: three replicas
(one per node; fewer on a smaller cluster), file storage, kept ``max_age_days`` (30 by default), read back in
batches by any node holding it (``allow_direct``: the recorder's gap filler, :mod:`controller.recorder.backfill`,
reads a table's events 256 a request instead of one). Made, or brought to this configuration, by
:func:`ensure_tables_stream` over JetStream's API as the cluster's ``floor-admin`` user (``tablectl cluster`` and
``tablectl demo --cluster`` do it once the nodes serve).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from controller.floor.nats_client import NatsError, NatsRequester
from controller.floor.subjects import mqtt_topic_subject

__all__ = ["STREAM", "StreamError", "ensure_tables_stream", "stream_config", "stream_info"]

STREAM = "TABLES"
_NAME_IN_USE = 10058  # JetStream: stream name already in use with a different configuration
_NS_PER_DAY = 86_400 * 1_000_000_000


class StreamError(RuntimeError):
    """JetStream refused the stream or did not answer: says which call and why."""


def stream_config(prefix: str, *, replicas: int = 3, max_age_days: float = 30.0) -> dict[str, Any]:
    """The ``TABLES`` stream's configuration for tables under ``prefix``."""
    return {
        "name": STREAM,
        "subjects": [mqtt_topic_subject(f"{prefix}/+/events")],
        "retention": "limits",
        "storage": "file",
        "num_replicas": replicas,
        "max_age": int(max_age_days * _NS_PER_DAY),
        "discard": "old",
        "duplicate_window": 120 * 1_000_000_000,
        "allow_direct": True,
    }


def _check(call: str, answer: dict[str, Any]) -> dict[str, Any]:
    error = answer.get("error")
    if isinstance(error, dict):
        raise StreamError(f"{call}: {error.get('description', 'refused')} (JetStream error {error.get('err_code')})")
    return answer


async def ensure_tables_stream(host: str, port: int, *, user: str, password: str, prefix: str,
                               replicas: int = 3, max_age_days: float = 30.0, timeout: float = 10.0,
                               tls_ca: Path | None = None) -> dict[str, Any]:
    """Create the ``TABLES`` stream, or update it to this configuration; its info as JetStream gives it."""
    config = stream_config(prefix, replicas=replicas, max_age_days=max_age_days)
    try:
        async with NatsRequester(host, port, user=user, password=password, timeout=timeout, tls_ca=tls_ca) as nats:
            answer = await nats.request(f"$JS.API.STREAM.CREATE.{STREAM}", config)
            error = answer.get("error")
            if isinstance(error, dict) and error.get("err_code") == _NAME_IN_USE:
                answer = await nats.request(f"$JS.API.STREAM.UPDATE.{STREAM}", config)
            return _check(f"stream {STREAM}", answer)
    except NatsError as exc:
        raise StreamError(f"stream {STREAM}: {exc}") from None


async def stream_info(host: str, port: int, *, user: str, password: str, timeout: float = 10.0,
                      tls_ca: Path | None = None) -> dict[str, Any]:
    """``TABLES``'s configuration, state (messages, first and last sequence) and cluster (leader, replicas)."""
    try:
        async with NatsRequester(host, port, user=user, password=password, timeout=timeout, tls_ca=tls_ca) as nats:
            return _check(f"stream {STREAM}", await nats.request(f"$JS.API.STREAM.INFO.{STREAM}"))
    except NatsError as exc:
        raise StreamError(f"stream {STREAM}: {exc}") from None
