"""Fixtures for the device-layer tests: simulators on ptys and drivers on them."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from drivers.base import Device
from drivers.events import DeviceEvent

#: The real console script, run as a child process (no __main__ needed).
TABLECTL = [sys.executable, "-c", "import sys; from controller.cli import main; sys.exit(main())"]


@pytest.fixture
def link_dir(tmp_path: Path) -> Path:
    """A directory for simulator links (``--link``)."""
    return tmp_path


async def next_event(
    device: Device, kind: str, *, timeout: float = 2.0, it: AsyncIterator[DeviceEvent] | None = None
) -> DeviceEvent:
    """The next event of ``kind`` from ``device`` (skipping others), or fail after ``timeout``."""
    import asyncio

    events = it if it is not None else device.events()

    async def find() -> DeviceEvent:
        async for event in events:
            if event.type == kind:
                return event
        raise AssertionError(f"event stream ended before a {kind!r} event")

    return await asyncio.wait_for(find(), timeout)
