"""The MQTT client of the publisher, the recorder and the witness: asyncio over paho-mqtt's public API only.

Why our own: the table wants a committed record on the wire in the same turn of the loop as its journal
commit, each QoS 1 publish's PUBACK awaited by itself, and the recorder a PUBACK sent only once a message
is stored (manual acknowledgement). aiomqtt 2.x hands a publish to paho a task later, registers paho's
writer a turn later still and exposes no manual acknowledgement (aiomqtt issue #345), so the three
subclassed it and reached into its private members; any aiomqtt release could break them. paho's public
API has all of it: ``socket()`` with ``loop_read``/``loop_write``/``loop_misc`` driven by the asyncio loop
(paho's documented external-loop example: ``on_socket_close``, ``on_socket_register_write``,
``on_socket_unregister_write``), ``on_connect``/``on_disconnect``/``on_publish``/``on_subscribe``/
``on_message``, ``manual_ack`` with ``ack(mid, qos)``, ``connect_timeout``.

paho's blocking ``connect()`` (DNS, TCP, TLS and websocket handshakes) runs in an executor thread with no
callback of ours set; they are set once it returns, so every callback runs on the loop's thread, in the
caller's turn: :meth:`MqttClient.publish_now` then :meth:`MqttClient.flush` put the packet on the socket
before they return, and the writer is registered and removed in step with paho. MQTT 3.1.1, as before.
The errors are worded as aiomqtt worded them (callers log them). Tested on a real Mosquitto and a real
NATS server's MQTT (``tests/mqtt/test_client.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import ssl
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self, TypeVar

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.reasoncodes import ReasonCode

__all__ = ["Message", "MqttClient", "MqttCodeError", "MqttConnectError", "MqttError", "Will"]

T = TypeVar("T")
_OK = mqtt.MQTT_ERR_SUCCESS


class MqttError(Exception):
    """The broker could not be reached, refused, went away or did not answer in time."""


class MqttCodeError(MqttError):
    """An :class:`MqttError` with paho's error code or the broker's reason code (``[code:N] words``)."""

    def __init__(self, rc: int | ReasonCode, *args: object) -> None:
        super().__init__(*args)
        self.rc = rc

    def __str__(self) -> str:
        if isinstance(self.rc, ReasonCode):
            return f"[code:{self.rc.value}] {self.rc!s}"
        return f"[code:{self.rc}] {mqtt.error_string(self.rc)}"


class MqttConnectError(MqttCodeError):
    """The broker refused the connection (its CONNACK's code)."""


@dataclass(frozen=True, slots=True)
class Will:
    """The last will the broker publishes when the connection is lost without a DISCONNECT."""

    topic: str
    payload: bytes
    qos: int = 1
    retain: bool = True


@dataclass(frozen=True, slots=True)
class Message:
    """A message received: ``mid`` (with ``qos``) is what :meth:`MqttClient.ack` acknowledges."""

    topic: str
    payload: bytes
    qos: int
    retain: bool
    mid: int


class Messages:
    """The received messages in arrival order (``async for``); raises :class:`MqttError` once the connection is
    over and what came before is taken. ``len()`` is how many wait. One reader at a time."""

    def __init__(self, inbox: deque[Message], next_message: Callable[[], Awaitable[Message]]) -> None:
        self._inbox, self._next = inbox, next_message

    def __aiter__(self) -> Messages:
        return self

    async def __anext__(self) -> Message:
        return await self._next()

    def __len__(self) -> int:
        return len(self._inbox)


class MqttClient:
    """One connection to a broker (``async with``; not reusable), MQTT 3.1.1.

    ``timeout`` bounds the CONNACK, SUBACK and awaited PUBACK waits and the clean disconnect (seconds);
    ``connect_timeout`` paho's TCP connect (default paho's 5 s). ``manual_acks``: received QoS 1 messages are
    acknowledged only by :meth:`ack` (paho's ``manual_ack``, set before connecting: a persistent session's
    queued messages come right after the CONNACK). ``max_inflight_messages`` 0: no limit in paho.
    """

    def __init__(self, host: str, port: int = 1883, *, username: str | None = None, password: str | None = None,
                 identifier: str = "", clean_session: bool = True,
                 transport: str = "tcp", websocket_path: str | None = None,
                 keepalive: int = 60, timeout: float = 10.0, connect_timeout: float | None = None,
                 tls_context: ssl.SSLContext | None = None, will: Will | None = None, manual_acks: bool = False,
                 max_inflight_messages: int | None = None, logger: logging.Logger | None = None) -> None:
        if transport not in ("tcp", "websockets"):
            raise ValueError(f"unknown MQTT transport {transport!r}")
        self.host, self.port, self.keepalive, self.timeout = host, port, keepalive, timeout
        self._paho = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=identifier, clean_session=clean_session,
                                 protocol=mqtt.MQTTv311, transport="websockets" if transport == "websockets" else "tcp",
                                 reconnect_on_failure=False, manual_ack=manual_acks)
        paho = self._paho
        if connect_timeout is not None:
            paho.connect_timeout = connect_timeout
        if max_inflight_messages is not None:
            paho.max_inflight_messages_set(max_inflight_messages)
        self._log = logger or logging.getLogger("mqtt")
        paho.enable_logger(self._log)
        if username is not None:
            paho.username_pw_set(username, password)
        if tls_context is not None:
            paho.tls_set_context(tls_context)
        if websocket_path is not None:
            paho.ws_set_options(path=websocket_path)
        if will is not None:
            paho.will_set(will.topic, will.payload, will.qos, will.retain)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._connack: asyncio.Future[None] | None = None
        self._subacks: dict[int, asyncio.Future[list[ReasonCode]]] = {}
        self._unsubacks: dict[int, asyncio.Event] = {}
        self._pubacks: dict[int, asyncio.Event] = {}
        self._inbox: deque[Message] = deque()
        self._arrived = asyncio.Event()
        self._closed = asyncio.Event()
        self._lost: BaseException | None = None
        self._fd = -1
        self._write_soon = False  # paho has packets to write: the loop's next turn looks (:meth:`_watch_write`)
        self._misc: asyncio.Task[None] | None = None
        self._entered = False

    # -- connection ----------------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        if self._entered:
            raise MqttError("an MqttClient connects once: make a new one")
        self._entered = True
        loop = self._loop = asyncio.get_running_loop()
        connecting = loop.run_in_executor(None, self._paho.connect, self.host, self.port, self.keepalive)
        try:
            rc = await asyncio.shield(connecting)
        except asyncio.CancelledError:  # the connect thread goes on: close what it opens
            connecting.add_done_callback(lambda done: done.cancelled() or done.exception() or self._close_socket())
            raise
        except (OSError, mqtt.WebsocketConnectionError) as exc:
            raise MqttError(str(exc)) from None
        sock = self._paho.socket()
        if sock is None:
            raise MqttCodeError(rc if rc != _OK else mqtt.MQTT_ERR_CONN_LOST, "Could not connect")
        self._connack = loop.create_future()
        paho = self._paho
        paho.on_connect, paho.on_disconnect = self._on_connect, self._on_disconnect
        paho.on_publish, paho.on_subscribe, paho.on_unsubscribe = self._on_publish, self._on_subscribe, \
            self._on_unsubscribe
        paho.on_message = self._on_message
        paho.on_socket_close = self._on_socket_close
        paho.on_socket_register_write = self._on_register_write
        paho.on_socket_unregister_write = self._on_unregister_write
        self._fd = sock.fileno()
        loop.add_reader(self._fd, self._readable)
        if paho.want_write():  # the CONNECT only partly written in the thread
            loop.add_writer(self._fd, self._writable)
        self._misc = loop.create_task(self._housekeeping())
        try:
            await self._wait(self._connack, None)
        except BaseException:
            self._close_socket()
            self._finish()
            raise
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        """Disconnect cleanly (DISCONNECT, so no last will) unless the connection is already over."""
        try:
            if not self._closed.is_set():
                rc = self._paho.disconnect()
                if rc == _OK:
                    await self._wait(self._closed.wait(), None)
                else:
                    self._log.warning("Could not gracefully disconnect: %d. Forcing disconnection.", rc)
        finally:
            self._close_socket()
            self._finish()

    def connection_lost(self) -> BaseException | None:
        """Why paho or the socket ended the connection (None: it did not, or it ended cleanly)."""
        return self._lost

    def tune_socket(self) -> None:
        """Turn Nagle off (``TCP_NODELAY``) on a TCP connection (plain or TLS).

        paho leaves Nagle on, so a publish written while the previous one is unacknowledged waits for the
        broker's ACK: the card's ``state`` could wait a broker round trip behind its events. (Corking the
        socket around a flush, to send a commit's messages in one segment, was measured slower: the broker
        then starts on the first one later.)
        """
        sock = self._paho.socket()
        if isinstance(sock, socket.socket):  # ssl.SSLSocket is one; paho's websocket wrapper is not
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    # -- publishing ----------------------------------------------------------------------------------

    def publish_now(self, topic: str, payload: bytes, *, retain: bool) -> asyncio.Event:
        """Queue a QoS 1 publish in paho now; the event is set when its PUBACK arrives (:meth:`flush` writes it)."""
        return self._publish(topic, payload, 1, retain)

    def flush(self) -> None:
        """Write the queued packets now, as far as the socket takes them (the writer callback does the rest),
        then let the broker have this core (:func:`os.sched_yield`).

        Why the yield: a socket write wakes the broker "synchronously", on the writer's core, on the
        understanding that the writer sleeps soon; a table goes on with its input (ratings, lights, the next
        frame), and on a virtual machine an idle core is not even offered to the wakee. Measured with
        ``benchmarks/latency.py`` (a scheduler trace): a card's state waited up to half a millisecond on
        the broker's turn while the other core sat idle. The yield costs a system call (about a
        microsecond) and returns at once when nothing else waits for this core.
        """
        wrote = self._paho.want_write()
        rc = self._paho.loop_write()
        if rc not in (_OK, mqtt.MQTT_ERR_AGAIN):
            raise MqttCodeError(rc, "Could not write to the broker")
        if wrote:
            os.sched_yield()

    async def publish(self, topic: str, payload: bytes, qos: int = 0, retain: bool = False, *,
                      timeout: float | None = None) -> None:
        """Publish; with QoS 1 return once the PUBACK came (:class:`MqttError` after ``timeout``)."""
        acked = self._publish(topic, payload, qos, retain)
        if qos > 0:
            await self._wait(acked.wait(), timeout)

    def ack(self, message: Message) -> None:
        """Acknowledge ``message`` to the broker now (with ``manual_acks``; QoS 0 needs none)."""
        if message.qos == 0:
            return
        rc = self._paho.ack(message.mid, message.qos)
        if rc != _OK:
            raise MqttCodeError(rc, "Could not acknowledge a message")
        self.flush()

    def _publish(self, topic: str, payload: bytes, qos: int, retain: bool) -> asyncio.Event:
        info = self._paho.publish(topic, payload, qos, retain)
        if info.rc != _OK:
            raise MqttCodeError(info.rc, "Could not publish message")
        acked = asyncio.Event()
        if qos == 0 or info.is_published():
            acked.set()
        else:
            self._pubacks[info.mid] = acked
        return acked

    # -- subscribing ---------------------------------------------------------------------------------

    @property
    def messages(self) -> Messages:
        """The received messages (see :class:`Messages`)."""
        return Messages(self._inbox, self._next_message)

    async def subscribe(self, topic: str | list[tuple[str, int]], qos: int = 0, *,
                        timeout: float | None = None) -> list[ReasonCode]:
        """Subscribe; the SUBACK's code for each topic (a failure: 0x80 and up)."""
        rc, mid = self._paho.subscribe(topic, qos)
        if rc != _OK or mid is None:
            raise MqttCodeError(rc, "Could not subscribe to topic")
        granted: asyncio.Future[list[ReasonCode]] = asyncio.get_running_loop().create_future()
        self._subacks[mid] = granted
        try:
            return await self._wait(granted, timeout)
        finally:
            self._subacks.pop(mid, None)

    async def unsubscribe(self, topic: str | list[str], *, timeout: float | None = None) -> None:
        """Unsubscribe; returns once the UNSUBACK came."""
        rc, mid = self._paho.unsubscribe(topic)
        if rc != _OK or mid is None:
            raise MqttCodeError(rc, "Could not unsubscribe from topic")
        done = self._unsubacks[mid] = asyncio.Event()
        try:
            await self._wait(done.wait(), timeout)
        finally:
            self._unsubacks.pop(mid, None)

    async def _next_message(self) -> Message:
        while True:
            if self._inbox:
                return self._inbox.popleft()
            if self._closed.is_set():
                raise MqttError("Disconnected during message iteration") from self._lost
            self._arrived.clear()
            await self._arrived.wait()

    # -- paho's callbacks (all on the loop's thread) -------------------------------------------------

    def _on_connect(self, client: mqtt.Client, userdata: Any, flags: mqtt.ConnectFlags, reason: ReasonCode,
                    properties: Any) -> None:
        if self._connack is None or self._connack.done():
            return
        if reason.is_failure:
            self._connack.set_exception(MqttConnectError(reason))
        else:
            self._connack.set_result(None)

    def _on_disconnect(self, client: mqtt.Client, userdata: Any, flags: mqtt.DisconnectFlags, reason: ReasonCode,
                       properties: Any) -> None:
        lost = MqttCodeError(reason, "Unexpected disconnection") if reason.is_failure else None
        if self._connack is not None and not self._connack.done():
            self._connack.set_exception(lost or MqttError("Disconnected before the CONNACK"))
        self._end(lost)

    def _on_publish(self, client: mqtt.Client, userdata: Any, mid: int, reason: ReasonCode, properties: Any) -> None:
        acked = self._pubacks.pop(mid, None)
        if acked is not None:
            acked.set()

    def _on_subscribe(self, client: mqtt.Client, userdata: Any, mid: int, granted: list[ReasonCode],
                      properties: Any) -> None:
        waiting = self._subacks.get(mid)
        if waiting is not None and not waiting.done():
            waiting.set_result(list(granted))

    def _on_unsubscribe(self, client: mqtt.Client, userdata: Any, mid: int, reasons: list[ReasonCode],
                        properties: Any) -> None:
        done = self._unsubacks.get(mid)
        if done is not None:
            done.set()

    def _on_message(self, client: mqtt.Client, userdata: Any, message: mqtt.MQTTMessage) -> None:
        self._inbox.append(Message(message.topic, bytes(message.payload), message.qos, bool(message.retain),
                                   message.mid))
        self._arrived.set()

    def _on_socket_close(self, client: mqtt.Client, userdata: Any, sock: Any) -> None:
        self._unwatch()

    def _on_register_write(self, client: mqtt.Client, userdata: Any, sock: Any) -> None:
        # paho queued a packet. After publish_now() the caller's flush() writes it in this very turn, and watching
        # the socket meanwhile would cost two epoll_ctl calls per flush (measured: 10 to 35 us of a card's state on
        # its way out); so the loop's next turn looks instead, and writes or watches only what is still there.
        if self._loop is not None and self._fd >= 0 and not self._write_soon:
            self._write_soon = True
            self._loop.call_soon(self._watch_write)

    def _watch_write(self) -> None:
        """What paho still holds a turn after it queued it: written now (nobody flushed), the socket watched for
        the rest (it was full)."""
        self._write_soon = False
        if self._loop is None or self._fd < 0 or not self._paho.want_write():
            return
        self._writable()
        if self._fd >= 0 and self._paho.want_write():
            self._loop.add_writer(self._fd, self._writable)

    def _on_unregister_write(self, client: mqtt.Client, userdata: Any, sock: Any) -> None:
        if self._loop is not None and self._fd >= 0:
            self._loop.remove_writer(self._fd)

    # -- the loop's side -----------------------------------------------------------------------------

    def _readable(self) -> None:
        try:
            rc = self._paho.loop_read()
            # TLS may hold whole packets already decrypted, which the selector cannot see
            while rc == _OK and self._pending():
                rc = self._paho.loop_read()
        except Exception as exc:
            self._fail(exc)

    def _pending(self) -> bool:
        """Bytes already read and decrypted by TLS (plain, or under a websocket) that no selector will report."""
        pending = getattr(self._paho.socket(), "pending", None)
        return callable(pending) and int(pending()) > 0

    def _writable(self) -> None:
        try:
            self._paho.loop_write()
        except Exception as exc:
            self._fail(exc)

    async def _housekeeping(self) -> None:
        """paho's keepalive: PINGREQ when due, and the connection dropped when its PINGRESP does not come."""
        while self._paho.loop_misc() == _OK:
            await asyncio.sleep(1)

    def _fail(self, exc: BaseException) -> None:
        """The socket or paho raised: the connection is over (the socket is closed on leaving)."""
        self._unwatch()
        if self._connack is not None and not self._connack.done():
            self._connack.set_exception(MqttError(str(exc) or type(exc).__name__))
        self._end(exc)

    def _end(self, lost: BaseException | None) -> None:
        if not self._closed.is_set():
            self._lost = lost
            self._closed.set()
            self._arrived.set()

    def _unwatch(self) -> None:
        if self._loop is not None and self._fd >= 0:
            self._loop.remove_reader(self._fd)
            self._loop.remove_writer(self._fd)
            self._fd = -1

    def _close_socket(self) -> None:
        """Close what is left of the connection without a word to the broker (it then sends the last will)."""
        self._unwatch()
        sock = self._paho.socket()
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.close()

    def _finish(self) -> None:
        self._end(self._lost)
        if self._misc is not None:
            self._misc.cancel()
        if self._connack is not None and self._connack.done() and not self._connack.cancelled():
            self._connack.exception()  # retrieved: asyncio would report it as never retrieved otherwise

    async def _wait(self, waited: Awaitable[T], timeout: float | None) -> T:
        try:
            return await asyncio.wait_for(waited, self.timeout if timeout is None else timeout)
        except TimeoutError:
            raise MqttError("Operation timed out") from None
