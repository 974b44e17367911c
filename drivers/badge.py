"""The dealer console's badge reader: badge reports and their reassembly (sans-I/O).

A badge id (1 to 64 of ``a-z 0-9 . _ -``, the shape of a dealer id) does not fit one 8-byte HID
report, so the console sends it as a run of BADGE reports, four characters each, back to back,
numbered by the console's one report counter (docs/protocols.md, "Badge reader")::

    byte 0  report id 0x03
    byte 1  badge length L in characters, 1..64, the same in every report of the badge;
            0: the reader's sign-out key (bytes 2 and 4-7 zero)
    byte 2  offset of this report's first character: 0, 4, 8, ... (< L)
    byte 3  report counter (the counter of every input report: a gap is a lost report)
    byte 4-7  characters offset .. offset+3 (ASCII), zero after the badge's last

:class:`BadgeAssembler` turns them back into one event per badge: :class:`~drivers.events.BadgeRead`,
:class:`~drivers.events.BadgeSignOut`, or, for anything it cannot trust (a report lost mid-badge, a
report out of order, a length that changes, a character outside the set, a badge over 64 characters,
a badge cut short by another report), one :class:`~drivers.events.BadgeUnreadable` naming why; the
rest of a bad badge's reports are dropped quietly. It never raises on what a device sends.
"""

from __future__ import annotations

from typing import Final

from drivers.events import BadgeRead, BadgeSignOut, BadgeUnreadable, DeviceEvent

REPORT_BADGE: Final = 0x03
#: the longest badge id (the dealer id's limit, DESIGN "The dealer on duty")
BADGE_MAX: Final = 64
#: characters per badge report
BADGE_CHUNK: Final = 4
#: the characters a badge id is made of
BADGE_CHARS: Final = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789._-")
#: byte 1 of the sign-out key's report
SIGN_OUT: Final = 0
__all__ = ["BADGE_CHARS", "BADGE_CHUNK", "BADGE_MAX", "REPORT_BADGE", "SIGN_OUT", "BadgeAssembler",
           "badge_reports", "check_badge", "decode_badge", "sign_out_report"]


def check_badge(badge: str) -> str:
    """``badge`` if it is a badge id (1 to 64 of ``a-z 0-9 . _ -``); ValueError naming what is wrong."""
    if not 1 <= len(badge) <= BADGE_MAX:
        raise ValueError(f"a badge id is 1 to {BADGE_MAX} characters, got {len(badge)}")
    bad = next((c for c in badge if not c.isascii() or ord(c) not in BADGE_CHARS), None)
    if bad is not None:
        raise ValueError(f"badge id {badge!r}: {bad!r} is not one of a-z 0-9 . _ -")
    return badge


def badge_reports(badge: bytes, first_counter: int) -> list[bytes]:
    """The BADGE reports of ``badge`` as read (any bytes, 1..255 of them: the simulator also sends a
    damaged or foreign badge), numbered from ``first_counter``. :func:`check_badge` says what is valid."""
    if not 1 <= len(badge) <= 0xFF:
        raise ValueError(f"a badge report carries 1 to 255 characters, got {len(badge)}")
    out = []
    for n, offset in enumerate(range(0, len(badge), BADGE_CHUNK)):
        chunk = badge[offset:offset + BADGE_CHUNK].ljust(BADGE_CHUNK, b"\0")
        out.append(bytes((REPORT_BADGE, len(badge), offset & 0xFF, (first_counter + n) & 0xFF)) + chunk)
    return out


def sign_out_report(counter: int) -> bytes:
    """The report of the badge reader's sign-out key."""
    return bytes((REPORT_BADGE, SIGN_OUT, 0, counter & 0xFF, 0, 0, 0, 0))


def decode_badge(report: bytes) -> tuple[int, int, int, bytes]:
    """``(length, offset, counter, characters)`` of a BADGE report; ValueError if it is not one."""
    if len(report) < 4 + BADGE_CHUNK or report[0] != REPORT_BADGE:
        raise ValueError(f"not a badge report: {bytes(report).hex(' ')}")
    return report[1], report[2], report[3], bytes(report[4:4 + BADGE_CHUNK])


class BadgeAssembler:
    """One console's badge being read: BADGE reports in, one event per badge out (module docstring)."""

    def __init__(self) -> None:
        self._length = 0  # the badge being read (0: none)
        self._chars = bytearray()
        self._skipping = False  # the rest of a badge already reported unreadable

    @property
    def reading(self) -> bool:
        """Whether a badge is half read."""
        return self._length > 0

    def interrupted(self, why: str) -> list[DeviceEvent]:
        """Another report, a lost report or the connection ended what was being read: dropped, said once."""
        self._skipping = False
        if not self._length:
            return []
        got, length = len(self._chars), self._length
        self._reset()
        return [BadgeUnreadable(f"badge cut short after {got} of {length} characters: {why}")]

    def feed(self, report: bytes) -> list[DeviceEvent]:
        """The events one BADGE report completes (a lost report before it: :meth:`interrupted` first)."""
        try:
            length, offset, _counter, chunk = decode_badge(report)
        except ValueError as e:
            return [*self.interrupted("a malformed report"), BadgeUnreadable(str(e))]
        if length == SIGN_OUT:
            out = self.interrupted("the sign-out key")
            if offset or any(chunk):
                return [*out, BadgeUnreadable(f"malformed sign-out report: {bytes(report).hex(' ')}")]
            return [*out, BadgeSignOut()]
        out = []
        if offset == 0:
            out += self.interrupted("a new badge began")
            if length > BADGE_MAX:
                self._skipping = True
                return [*out, BadgeUnreadable(f"badge of {length} characters: at most {BADGE_MAX}")]
            self._length = length
        elif self._skipping:
            return []  # the rest of a badge already said to be unreadable
        elif not self._length:
            self._skipping = True
            return [BadgeUnreadable(f"badge report at offset {offset} with no badge begun")]
        elif length != self._length or offset != len(self._chars):
            why = (f"its length changed from {self._length} to {length}" if length != self._length
                   else f"a report at offset {offset} where {len(self._chars)} was due")
            self._reset()
            self._skipping = True
            return [BadgeUnreadable(f"badge unreadable: {why}")]
        n = min(BADGE_CHUNK, self._length - offset)
        bad = next((b for b in chunk[:n] if b not in BADGE_CHARS), None)
        if bad is not None or any(chunk[n:]):
            self._reset()
            self._skipping = True
            what = f"character 0x{bad:02x} is not one of a-z 0-9 . _ -" if bad is not None else "padding not zero"
            return [*out, BadgeUnreadable(f"badge unreadable: {what}")]
        self._chars += chunk[:n]
        if len(self._chars) < self._length:
            return out
        badge = self._chars.decode("ascii")
        self._reset()
        return [*out, BadgeRead(badge)]

    def _reset(self) -> None:
        self._length = 0
        self._chars = bytearray()
