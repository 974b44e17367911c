"""Helpers for the simulators' own tests: what a simulated device sends, without a link or a driver.

A simulator hands each message to its ``_send(mtype, payload)``; replacing that method on the instance
(as tests/drivers/test_documented_frames.py does) captures the messages in order, before any framing,
so these tests need no pty, no link layer and no driver.
"""

from __future__ import annotations

from typing import Any


def capture_sends(sim: Any) -> list[tuple[int, bytes]]:
    """Every ``(message type, payload)`` ``sim`` sends from now on, in order."""
    sent: list[tuple[int, bytes]] = []
    sim._send = lambda mtype, payload=b"": sent.append((mtype, bytes(payload)))
    return sent
