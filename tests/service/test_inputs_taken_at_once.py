"""The table service takes a device's input in the callback that decoded it (issue #40: the card's path).

No loop turn between a card's frame and its journal commit; what a task reading the events guaranteed still
holds: an input that cannot be journaled ends the service (and the driver that handed it on never sees the
failure), and nothing is taken after it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from controller.journal import Journal
from controller.profiles import load_rules
from controller.service.core import TableCore
from controller.service.table_service import TableService
from drivers.events import CardRead
from drivers.group import DeviceGroup
from tests.drivers.emitter import Emitter


@contextlib.asynccontextmanager
async def _served(tmp_path: Path) -> AsyncIterator[tuple[Emitter, Journal, TableService]]:
    """A table service on one device that emits as a driver does; once started, its pump takes each input."""
    shoe = Emitter()
    with Journal(tmp_path / "t01.journal") as journal:
        service = TableService(TableCore("t01", load_rules("house-h17"), journal), DeviceGroup(shoe=shoe))
        await service.start()
        await asyncio.sleep(0)  # the pump's first turn: from here on it takes each input as it comes
        try:
            yield shoe, journal, service
        finally:
            await service.stop()


async def test_a_card_is_journaled_before_its_drivers_callback_returns(tmp_path: Path) -> None:
    async with _served(tmp_path) as (shoe, journal, service):
        applied, inputs = service.applied, journal.last_input_id
        shoe.emit(CardRead("AS", read=(1, 1)))  # no await: the same call stack as the frame's read
        assert service.applied == applied + 1
        assert journal.last_input_id == inputs + 1


async def test_an_input_that_cannot_be_journaled_ends_the_service_not_the_driver(tmp_path: Path) -> None:
    async with _served(tmp_path) as (shoe, journal, service):
        durable = journal.last_input_id

        def disk_full(*_args: Any, **_kw: Any) -> Any:
            raise OSError(28, "No space left on device")

        journal.commit_event = disk_full  # type: ignore[method-assign]
        shoe.emit(CardRead("AS", read=(1, 1)))  # does not raise into the driver
        with pytest.raises(OSError) as failed:
            await asyncio.wait_for(asyncio.shield(service.failed), 2)
        assert failed.value.errno == 28
        taken = service.applied
        shoe.emit(CardRead("KH", read=(1, 2)))  # after the failure: nothing more is taken
        assert service.applied == taken
        assert journal.last_input_id == durable
