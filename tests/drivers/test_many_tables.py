"""Many simulated tables in one process (issue 15): a pty whose descriptors are above 1023
(FD_SETSIZE, which ``select()`` cannot take), a device error repeated on every read logged once,
and a demo whose table cannot be served exiting 1 with one line naming it."""

from __future__ import annotations

import asyncio
import io
import logging
import os
import resource
import tty
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import controller.sim.demo as demo
import drivers.transport as transport
from controller.profiles import load_rules
from drivers import CardRead, ShoeConfig, ShoeDriver
from simulators import SimShoe
from simulators.hardware import SimTable
from tests.mqtt_broker import Mosquitto

FD_SETSIZE = 1024


@pytest.fixture
def high_fds() -> Iterator[None]:
    """Open dummy descriptors until the next one is above FD_SETSIZE; closed afterwards."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < FD_SETSIZE + 64:
        pytest.skip(f"RLIMIT_NOFILE hard limit {hard} is below {FD_SETSIZE + 64}")
    if soft != resource.RLIM_INFINITY and soft < FD_SETSIZE + 64:
        resource.setrlimit(resource.RLIMIT_NOFILE, (FD_SETSIZE + 64, hard))
    base = os.open(os.devnull, os.O_RDONLY)
    dummies = [base]
    try:
        while dummies[-1] < FD_SETSIZE + 8:
            dummies.append(os.dup(base))
        yield
    finally:
        for fd in dummies:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


async def test_a_card_gets_through_a_pty_whose_descriptors_are_above_1023(high_fds: None, link_dir: Path,
                                                                            caplog: pytest.LogCaptureFixture) -> None:
    async with SimShoe(stacked=["AS", "TD", "9C"], link=str(link_dir / "shoe")) as sim:
        assert sim._pty._master is not None and sim._pty._master >= FD_SETSIZE  # the simulator's end too
        async with ShoeDriver(ShoeConfig(port=sim.port)) as shoe:
            await shoe.wait_ready(2)
            sim.deal()
            sim.deal()

            async def two_cards() -> list[str]:
                cards: list[str] = []
                async for event in shoe.events():
                    if isinstance(event, CardRead):
                        cards.append(event.card)
                        if len(cards) == 2:
                            return cards
                return cards

            assert await asyncio.wait_for(two_cards(), 3) == ["AS", "TD"]
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")]


class _Broken(asyncio.Protocol):
    def __init__(self) -> None:
        self.lost: asyncio.Future[Exception | None] = asyncio.get_running_loop().create_future()

    def data_received(self, data: bytes) -> None:
        raise RuntimeError("decoder bug")

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost.set_result(exc)


async def test_an_error_on_every_read_is_logged_once_and_closes_the_port(caplog: pytest.LogCaptureFixture,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transport, "_seen_causes", {})
    master, slave = os.openpty()
    tty.setraw(slave)
    try:
        for _ in range(3):  # the driver reopens after each failure: the same cause, logged once
            proto = _Broken()
            await transport.open_serial(os.ttyname(slave), 115200, proto)
            os.write(master, b"~frame~")
            exc = await asyncio.wait_for(proto.lost, 2)
            assert isinstance(exc, RuntimeError)
    finally:
        os.close(master)
        os.close(slave)
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and "decoder bug" in errors[0].getMessage()


class _SilentShoeOnT02(SimTable):
    """t02's shoe never answers (a dead device, or a read path that cannot work)."""

    def __init__(self, directory: str | Path, **kwargs: Any) -> None:
        super().__init__(directory, **kwargs)
        if "-t02-" in str(directory):
            self.shoe.silent = True


async def test_a_demo_with_a_table_that_cannot_start_exits_1_naming_it(
        mosquitto: Mosquitto, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(demo, "SimTable", _SilentShoeOnT02)
    monkeypatch.setattr(demo, "START_TIMEOUT_S", 2.0)
    opts = demo.DemoOptions(rules=load_rules("house-h17"), tables=2, rounds=2, speed="max", broker=mosquitto.url,
                            state_dir=tmp_path / "state", dashboard=False, quiet=True)
    out = io.StringIO()
    code = await asyncio.wait_for(demo.run_demo(opts, out), 20)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1
    assert len(err) == 1 and err[0].startswith("demo: 1 of 2 tables not served: t02: cannot start:"), err
    assert "shoe lost" in err[0] and "t01" not in err[0], err
    assert "t01: rounds 2 " in out.getvalue()  # the other table played its rounds
    assert len(caplog.records) < 50
