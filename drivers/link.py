"""Link layer, sans-I/O: reliable, ordered, exactly-once messages over the codec.

Both ends run a :class:`Link`; the host is the *initiator*. Nothing here reads
a clock or a port: feed received bytes with ``receive_data(data, now)``, call
``poll(now)`` at ``next_deadline()``, write out ``data_to_send()`` and take
``next_event()`` until it is ``None``.

Rules (frame types in docs/protocols.md):

* Link start: the initiator sends HELLO (protocol version, device role, a
  random session id) every ``hello_every`` until the responder answers with its
  own HELLO. A version or role mismatch is a :class:`LinkFault`, never "up".
* Data frames are stop-and-wait: one in flight, sequence numbers mod 256. The
  receiver delivers a frame whose seq differs from the last one it accepted,
  ACKs every data frame (duplicates too) and drops duplicates, so a message is
  delivered exactly once and in order. A new peer session resets that memory.
* A bad segment (garbage, CRC error) is answered with NAK and the sender of a
  NAK or of a bad segment retransmits at once; otherwise after
  ``retransmit_after``. After ``max_retries`` the link is down, the frame stays
  queued and is sent again when the link is back: nothing is lost.
* Heartbeat: a side that sent nothing for ``heartbeat_every`` sends HEARTBEAT;
  a side that heard nothing valid for ``dead_after`` declares the link down.
"""

from __future__ import annotations

import struct
from collections import deque
from dataclasses import dataclass, field
from typing import Final

from drivers.codec import Frame, FrameDecoder, Garbage, encode_frame

#: Each device kind's protocol version (docs/protocols.md), said in HELLO: the shoe's 2 numbered its reads and
#: replayed them, its 3 tags REPLAY and REPLAY_END; the shuffler's and the chip bus's frames have not changed since
#: 2, so a device of theirs built to 2 needs no new firmware.
PROTOCOL_VERSIONS: Final[dict[int, int]] = {ord("S"): 3, ord("F"): 2, ord("C"): 2}
#: the newest of them (the shoe's)
PROTOCOL_VERSION: Final = max(PROTOCOL_VERSIONS.values())

HELLO: Final = 0x01
ACK: Final = 0x02
NAK: Final = 0x03
HEARTBEAT: Final = 0x04
#: Types below this are link control, never delivered to the device layer.
FIRST_DATA_TYPE: Final = 0x10

ROLE_HOST: Final = ord("H")

_HELLO = struct.Struct(">BBI")


@dataclass(frozen=True, slots=True)
class LinkTiming:
    """Timers of the link, in seconds (defaults notice a dead link within 2 s)."""

    retransmit_after: float = 0.05
    max_retries: int = 12
    heartbeat_every: float = 0.3
    dead_after: float = 1.5
    hello_every: float = 0.1


@dataclass(frozen=True, slots=True)
class Message:
    """A data frame delivered in order, exactly once."""

    mtype: int
    payload: bytes


@dataclass(frozen=True, slots=True)
class LinkUp:
    """HELLO exchanged: the peer speaks ``version`` as ``role``."""

    version: int
    role: int
    session: int
    new_peer: bool


@dataclass(frozen=True, slots=True)
class LinkDown:
    """The link stopped working; queued messages wait for it to come back."""

    reason: str


@dataclass(frozen=True, slots=True)
class LinkFault:
    """The peer is incompatible (version, device kind): the link will not come up."""

    reason: str


LinkEvent = Message | LinkUp | LinkDown | LinkFault


@dataclass(slots=True)
class LinkStats:
    """Counters for health and the technician's monitor."""

    sent: int = 0
    delivered: int = 0
    duplicates: int = 0
    retransmits: int = 0
    bad_segments: int = 0
    naks_sent: int = 0
    downs: int = 0


@dataclass(slots=True)
class _InFlight:
    frame: Frame
    wire: bytes
    sent_at: float
    tries: int = 0


@dataclass(slots=True)
class Link:
    """One end of a link. ``role`` is this end's role byte, ``peer_role`` the one expected."""

    role: int
    initiator: bool
    session: int
    now: float
    peer_role: int | None = None
    timing: LinkTiming = field(default_factory=LinkTiming)
    version: int = 0  # 0: the version of the device kind on this link (PROTOCOL_VERSIONS)
    stats: LinkStats = field(default_factory=LinkStats)
    up: bool = False
    peer_session: int | None = None
    _decoder: FrameDecoder = field(default_factory=FrameDecoder)
    _out: bytearray = field(default_factory=bytearray)
    _events: deque[LinkEvent] = field(default_factory=deque)
    _queue: deque[tuple[int, bytes]] = field(default_factory=deque)
    _inflight: _InFlight | None = None
    _tx_seq: int = 0
    _rx_last: int | None = None
    _last_rx: float = 0.0
    _last_tx: float = 0.0
    _next_hello: float = 0.0

    def __post_init__(self) -> None:
        if not self.version:
            device = self.peer_role if self.initiator else self.role
            self.version = PROTOCOL_VERSIONS.get(device or 0, PROTOCOL_VERSION)
        self.restart(self.now)

    # -- inputs -------------------------------------------------------------

    def restart(self, now: float) -> None:
        """Start (again) after opening the port: forget partial bytes, say HELLO."""
        self._decoder.reset()
        self.up = False
        self._last_rx = now
        self._next_hello = now
        if self.initiator:
            self._send_hello(now)

    def send(self, mtype: int, payload: bytes = b"", now: float | None = None) -> None:
        """Queue a data message; it goes out when the link is up and the previous one is ACKed."""
        if mtype < FIRST_DATA_TYPE:
            raise ValueError(f"type 0x{mtype:02X} is reserved for link control")
        self._queue.append((mtype, payload))
        if self.up and self._inflight is None:
            self._pump(self.now if now is None else now)

    def receive_data(self, data: bytes, now: float) -> None:
        """Bytes read from the line."""
        self.now = now
        dec = self._decoder
        dec.receive_data(data)
        while (item := dec.next_frame()) is not None:
            if isinstance(item, Garbage):
                self._on_garbage(now)
            else:
                self._on_frame(item, now)

    def poll(self, now: float) -> None:
        """Run the timers: heartbeat, dead link, retransmit, HELLO retry."""
        self.now = now
        if self.up:
            if now - self._last_rx >= self.timing.dead_after:
                self._go_down(f"nothing heard for {self.timing.dead_after:g} s")
                return
            inf = self._inflight
            if inf is not None and now - inf.sent_at >= self.timing.retransmit_after:
                if inf.tries >= self.timing.max_retries:
                    self._go_down(f"no ACK after {inf.tries + 1} tries")
                    return
                self._retransmit(now)
            if now - self._last_tx >= self.timing.heartbeat_every:
                self._write(Frame(HEARTBEAT), now)
        elif self.initiator and now >= self._next_hello:
            self._send_hello(now)

    # -- outputs ------------------------------------------------------------
    def data_to_send(self) -> bytes:
        """Bytes to write to the line (empties the buffer)."""
        if not self._out:
            return b""
        out = bytes(self._out)
        self._out.clear()
        return out

    def next_event(self) -> LinkEvent | None:
        """The next delivered message or state change, or ``None``."""
        return self._events.popleft() if self._events else None

    def next_deadline(self) -> float:
        """When :meth:`poll` must next be called."""
        t = self.timing
        if not self.up:
            return self._next_hello if self.initiator else self.now + t.heartbeat_every
        deadline = min(self._last_rx + t.dead_after, self._last_tx + t.heartbeat_every)
        if self._inflight is not None:
            deadline = min(deadline, self._inflight.sent_at + t.retransmit_after)
        return deadline

    @property
    def pending(self) -> int:
        """Messages queued or in flight (not yet ACKed)."""
        return len(self._queue) + (self._inflight is not None)

    # -- internals ----------------------------------------------------------
    def _write(self, frame: Frame, now: float) -> None:
        self._out += encode_frame(frame)
        self._last_tx = now

    def _send_hello(self, now: float) -> None:
        self._write(Frame(HELLO, 0, _HELLO.pack(self.version, self.role, self.session)), now)
        self._next_hello = now + self.timing.hello_every

    def _pump(self, now: float) -> None:
        if self._inflight is not None or not self._queue:
            return
        mtype, payload = self._queue.popleft()
        frame = Frame(mtype, self._tx_seq, payload)
        self._tx_seq = (self._tx_seq + 1) & 0xFF
        wire = encode_frame(frame)
        self._inflight = _InFlight(frame, wire, now)
        self._out += wire
        self._last_tx = now
        self.stats.sent += 1

    def _retransmit(self, now: float) -> None:
        inf = self._inflight
        if inf is None or not self.up:
            return
        inf.tries += 1
        inf.sent_at = now
        self._out += inf.wire
        self._last_tx = now
        self.stats.retransmits += 1

    def _go_down(self, reason: str) -> None:
        self.up = False
        self.stats.downs += 1
        self._next_hello = self.now
        self._events.append(LinkDown(reason))

    def _on_garbage(self, now: float) -> None:
        self.stats.bad_segments += 1
        if self.up:
            self._write(Frame(NAK, self._rx_last or 0), now)
            self.stats.naks_sent += 1
            self._retransmit(now)

    def _on_frame(self, frame: Frame, now: float) -> None:
        mtype = frame.mtype
        if mtype >= FIRST_DATA_TYPE:
            if not self.up:
                return
            self._last_rx = now
            self._write(Frame(ACK, frame.seq), now)
            if frame.seq == self._rx_last:
                self.stats.duplicates += 1
                return
            self._rx_last = frame.seq
            self.stats.delivered += 1
            self._events.append(Message(mtype, frame.payload))
            return
        if mtype == ACK:
            if not self.up:
                return
            self._last_rx = now
            inf = self._inflight
            if inf is not None and inf.frame.seq == frame.seq:
                self._inflight = None
                self._pump(now)
        elif mtype == HELLO:
            self._on_hello(frame, now)
        elif mtype == NAK:
            if self.up:
                self._last_rx = now
                self._retransmit(now)
        elif mtype == HEARTBEAT and self.up:
            self._last_rx = now

    def _on_hello(self, frame: Frame, now: float) -> None:
        if len(frame.payload) != _HELLO.size:
            self._on_garbage(now)
            return
        version, role, session = _HELLO.unpack(frame.payload)
        if version != self.version:
            if not self.initiator:  # answer anyway, so the host can say which version it found
                self._send_hello(now)
            self._events.append(LinkFault(f"device speaks protocol version {version}, driver speaks {self.version}"))
            return
        if self.peer_role is not None and role != self.peer_role:
            self._events.append(
                LinkFault(f"expected a device of role {chr(self.peer_role)!r}, found role {chr(role)!r}")
            )
            return
        self._last_rx = now
        new_peer = session != self.peer_session
        if new_peer:
            self.peer_session = session
            self._rx_last = None
        if not self.initiator:
            self._send_hello(now)
            if self.up and self._inflight is not None:
                self._inflight.tries = 0
                self._retransmit(now)
        if not self.up:
            self.up = True
            self._events.append(LinkUp(version, role, session, new_peer))
            if self._inflight is not None:
                self._inflight.tries = 0
                self._retransmit(now)
            else:
                self._pump(now)
