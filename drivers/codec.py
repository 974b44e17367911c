"""Serial framing codec, sans-I/O: bytes in, :class:`Frame` objects out.

Wire layout of one frame (HDLC-style flags, byte stuffing inside)::

    +------+-----+-----+------+----------------+--------+------+
    | 7E   | LEN | SEQ | TYPE | PAYLOAD (LEN)  | CRC16  | 7E   |
    +------+-----+-----+------+----------------+--------+------+
            \\_____________ stuffed: 7E -> 7D 5E, 7D -> 7D 5D ___/

``CRC16`` is CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF, big-endian) over
LEN, SEQ, TYPE and PAYLOAD before stuffing. Because a raw ``7E`` can only be a
flag, the decoder resynchronises at the next flag whatever garbage, lost or
corrupted bytes came before: the bytes between two flags are one *segment*,
either a valid frame or :class:`Garbage`. No length byte can make it wait for
bytes that never come, and a segment longer than any frame is dropped.

Use :class:`FrameDecoder` (``receive_data`` then ``next_frame`` until it gives
``None``) for streams, :func:`decode_segment` for one segment and
:func:`encode_frame` to build bytes. A vendor protocol is another codec with the
same two calls (see docs/protocols.md).
"""

from __future__ import annotations

import binascii
from dataclasses import dataclass
from typing import Final

from drivers.errors import FrameError

FLAG: Final = 0x7E
ESC: Final = 0x7D
MAX_PAYLOAD: Final = 64
#: Longest stuffed segment a valid frame can produce (every byte escaped).
MAX_SEGMENT: Final = 2 * (MAX_PAYLOAD + 5)

_FLAG_B: Final = b"\x7e"


@dataclass(frozen=True, slots=True)
class Frame:
    """One decoded frame: message type, sequence number and payload."""

    mtype: int
    seq: int = 0
    payload: bytes = b""


@dataclass(frozen=True, slots=True)
class Garbage:
    """A segment that was not a frame; ``size`` bytes were skipped."""

    size: int
    reason: str


def crc16(data: bytes) -> int:
    """CRC-16/CCITT-FALSE of ``data`` (``crc16(b"123456789") == 0x29B1``)."""
    return binascii.crc_hqx(data, 0xFFFF)


def _stuff(body: bytes) -> bytes:
    return body.replace(b"\x7d", b"\x7d\x5d").replace(b"\x7e", b"\x7d\x5e")


def _unstuff(seg: bytes) -> bytes:
    if b"\x7d" not in seg:
        return seg
    if _bad_escape(seg):
        raise FrameError("invalid escape sequence")
    return seg.replace(b"\x7d\x5e", b"\x7e").replace(b"\x7d\x5d", b"\x7d")


def _bad_escape(seg: bytes) -> bool:
    i = seg.find(b"\x7d")
    while i >= 0:
        if i + 1 >= len(seg) or seg[i + 1] not in (0x5D, 0x5E):
            return True
        i = seg.find(b"\x7d", i + 2)
    return False


def encode_frame(frame: Frame) -> bytes:
    """Bytes on the wire for ``frame``, flags included."""
    payload = frame.payload
    if len(payload) > MAX_PAYLOAD:
        raise FrameError(f"payload of {len(payload)} bytes exceeds {MAX_PAYLOAD}")
    if not (0 <= frame.seq <= 0xFF and 0 <= frame.mtype <= 0xFF):
        raise FrameError(f"seq {frame.seq} / type {frame.mtype} out of byte range")
    body = bytes((len(payload), frame.seq, frame.mtype)) + payload
    body += crc16(body).to_bytes(2, "big")
    return _FLAG_B + _stuff(body) + _FLAG_B


def decode_segment(seg: bytes) -> Frame:
    """Decode the bytes between two flags, or raise :class:`FrameError` saying why."""
    if _FLAG_B in seg:
        raise FrameError("flag byte inside a segment")
    body = _unstuff(bytes(seg))
    if len(body) < 5:
        raise FrameError(f"segment of {len(body)} bytes is shorter than a header and CRC")
    length = body[0]
    if length > MAX_PAYLOAD:
        raise FrameError(f"length {length} exceeds {MAX_PAYLOAD}")
    if len(body) != length + 5:
        raise FrameError(f"length byte says {length} payload bytes, segment holds {len(body) - 5}")
    if crc16(body[:-2]) != int.from_bytes(body[-2:], "big"):
        raise FrameError("CRC mismatch")
    return Frame(mtype=body[2], seq=body[1], payload=body[3:-2])


class FrameDecoder:
    """Streaming decoder: feed bytes with :meth:`receive_data`, pull with :meth:`next_frame`.

    ``next_frame`` returns a :class:`Frame`, a :class:`Garbage` report (so a link
    can NAK), or ``None`` when it needs more data. It never raises.
    """

    __slots__ = ("_buf", "bad_segments", "frames")

    def __init__(self) -> None:
        self._buf = bytearray()
        self.frames = 0
        self.bad_segments = 0

    def receive_data(self, data: bytes) -> None:
        """Append bytes read from the line."""
        self._buf += data

    def reset(self) -> None:
        """Forget any partial segment (after reopening a port)."""
        self._buf.clear()

    @property
    def buffered(self) -> int:
        """Bytes held while waiting for the closing flag."""
        return len(self._buf)

    def next_frame(self) -> Frame | Garbage | None:
        """The next frame or garbage report, or ``None`` if more bytes are needed."""
        buf = self._buf
        while True:
            end = buf.find(FLAG)
            if end < 0:
                if len(buf) > MAX_SEGMENT:
                    size = len(buf)
                    buf.clear()
                    self.bad_segments += 1
                    return Garbage(size, "no flag within the longest frame")
                return None
            if end == 0:
                del buf[0]
                continue
            seg = bytes(buf[:end])
            del buf[: end + 1]
            try:
                frame = decode_segment(seg)
            except FrameError as e:
                self.bad_segments += 1
                return Garbage(len(seg), str(e))
            self.frames += 1
            return frame
