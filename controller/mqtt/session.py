"""The aiomqtt session the publisher drives: a client that writes in the caller's turn, a quiet log.

aiomqtt 2.x hands a publish to paho only when its task first runs and lets paho write a loop turn
or two later; the table wants a committed record on the wire in the same turn as the commit.
:class:`ImmediateClient` adds that (``publish_now`` then ``flush``), Nagle off on TCP, and a writer
registration that stays in step with paho. It leans on aiomqtt's internals (``_client``,
``_pending_publishes``, ``_disconnected``, ``_loop``), which is why it lives here alone and
``pyproject.toml`` keeps aiomqtt below 3; the publisher's tests run it on a real broker.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from typing import Any

import aiomqtt
import paho.mqtt.client as mqtt

__all__ = ["ExpectedPipelining", "ImmediateClient"]


class ExpectedPipelining(logging.Filter):
    """aiomqtt warns whenever QoS 1 publishes are in flight; ours keeps up to ``window`` so by design."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("There are %d pending publish calls")


class ImmediateClient(aiomqtt.Client):
    """aiomqtt's client plus a publish that puts the packet on the socket before it returns.

    ``await Client.publish()`` hands its packet to paho only when its task first runs, and paho
    writes it a loop turn or two later (aiomqtt registers a writer with ``call_soon_threadsafe``):
    with the rest of the table sharing the loop that was ~0.7 ms between a journal commit and the
    bytes leaving. :meth:`publish_now` does the same as ``publish()`` up to its ``await`` (the
    paho call, then the confirmation registered under the message id, which aiomqtt's
    ``on_publish`` sets on the PUBACK) and :meth:`flush` is what aiomqtt's writer callback does.
    Written against aiomqtt 2.x (``pyproject.toml`` keeps it below 3); tested on a real broker.
    """

    def publish_now(self, topic: str, payload: bytes, *, retain: bool) -> asyncio.Event:
        """Queue a QoS 1 publish in paho now; the event is set when its PUBACK arrives."""
        info = self._client.publish(topic, payload, 1, retain)
        if info.rc != mqtt.MQTT_ERR_SUCCESS:
            raise aiomqtt.MqttCodeError(info.rc, "Could not publish message")
        acked = asyncio.Event()
        if info.is_published():
            acked.set()
        else:
            self._pending_publishes[info.mid] = acked
        return acked

    def tune_socket(self) -> None:
        """Turn Nagle off (``TCP_NODELAY``) on a TCP connection (plain or TLS).

        paho leaves Nagle on, so a publish written while the previous one is unacknowledged
        waits for the broker's ACK: the card's ``state`` could wait a broker round trip behind
        its events. (Corking the socket around a flush, to send a commit's messages in one
        segment, was measured slower: the broker then starts on the first one later.)
        """
        sock = self._client.socket()
        if isinstance(sock, socket.socket):  # ssl.SSLSocket is one; paho's websocket wrapper is not
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _on_socket_register_write(self, client: mqtt.Client, userdata: Any, sock: Any) -> None:
        """Watch the socket for writability at once when called on the loop's own thread.

        aiomqtt always defers ``add_writer`` with ``call_soon_threadsafe`` (paho may call from
        the connect thread) while its ``remove_writer`` is immediate. :meth:`flush` writes in
        the caller's turn, so paho registers and unregisters within one turn and the deferred
        add came *after* the remove: a writer stayed registered on an always-writable socket
        with nothing to write, waking the loop at every turn (a core spent on nothing), and a
        deferred add could land on a descriptor already closed. Adding in order keeps paho and
        the loop in step.
        """
        try:
            on_loop_thread = asyncio.get_running_loop() is self._loop
        except RuntimeError:
            on_loop_thread = False
        if not on_loop_thread:
            super()._on_socket_register_write(client, userdata, sock)
            return

        def write_ready() -> None:  # what aiomqtt's own writer callback does
            try:
                client.loop_write()
            except Exception as exc:
                if not self._disconnected.done():
                    self._disconnected.set_exception(exc)

        self._loop.add_writer(sock.fileno(), write_ready)

    def connection_lost(self) -> BaseException | None:
        """Why paho or the socket dropped the connection, if they did.

        aiomqtt keeps it in a future that only its message reader awaits; our acknowledgement
        follower often sees the failure first and the reader is cancelled, so the publisher
        reads it once the connection is over (else asyncio reports it as never retrieved).
        """
        lost = self._disconnected
        return lost.exception() if lost.done() and not lost.cancelled() else None

    def flush(self) -> None:
        """Write the queued packets now, as far as the socket takes them (paho keeps the rest
        for the writer callback)."""
        rc = self._client.loop_write()
        if rc not in (mqtt.MQTT_ERR_SUCCESS, mqtt.MQTT_ERR_AGAIN):
            raise aiomqtt.MqttCodeError(rc, "Could not write to the broker")

