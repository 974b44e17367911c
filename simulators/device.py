"""The device side of the serial link: a base class for the simulated devices.

A :class:`SimDevice` owns a :class:`~simulators.pty.PtyPort` and a responder
:class:`~drivers.link.Link` (the same sans-I/O link the drivers use, so the
bytes are the same). Subclasses handle host messages in ``_on_message`` and
send with ``_send``. Faults: byte corruption/loss both ways (``corrupt``,
``drop``, drawn from ``fault_seed`` only), ``pull_cable()`` / ``restore_cable()``,
``silent`` (reads and writes nothing) and ``inject_garbage(n)``.

``link="sim:NAME"`` puts the device on the in-memory ``sim:`` backend instead of
a pty (:mod:`simulators.memory`); drivers then open ``port="sim:NAME"``.

Use it in-process::

    async with SimShoe(seed=1, link="/tmp/shoe") as shoe:   # pty created, link made
        ... ShoeDriver(ShoeConfig(port=shoe.port)) ...
"""

from __future__ import annotations

import asyncio
import secrets
from abc import ABC, abstractmethod
from typing import ClassVar, Self

from drivers.link import ROLE_HOST, Link, LinkDown, LinkFault, LinkTiming, LinkUp, Message
from drivers.timer import rearm
from simulators.faults import FaultPipe
from simulators.memory import PREFIX as SIM_PREFIX
from simulators.memory import MemoryPort
from simulators.pty import PtyPort


class SimDevice(ABC):
    """A simulated serial device on a pty."""

    role: ClassVar[int] = 0
    name: ClassVar[str] = "device"

    def __init__(
        self,
        *,
        link: str | None = None,
        corrupt: float = 0.0,
        drop: float = 0.0,
        fault_seed: int | None = None,
        timing: LinkTiming | None = None,
    ) -> None:
        self._timing = timing or LinkTiming()
        self.tx_faults = FaultPipe(corrupt=corrupt, drop=drop, seed=fault_seed)
        self.rx_faults = FaultPipe(corrupt=corrupt, drop=drop, seed=None if fault_seed is None else fault_seed + 1)
        self._pty: PtyPort | MemoryPort = (
            MemoryPort(self._on_bytes, link=link)
            if link is not None and link.startswith(SIM_PREFIX)
            else PtyPort(self._on_bytes, link=link)
        )
        self._link: Link | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._space = asyncio.Event()
        self._up = asyncio.Event()
        self.silent = False
        self.window = 2

    # -- lifecycle --------------------------------------------------------------
    async def start(self) -> str:
        """Open the pty; returns the port a driver should open (the link path if given)."""
        now = asyncio.get_running_loop().time()
        self._link = Link(
            role=self.role,
            initiator=False,
            session=secrets.randbits(32),
            now=now,
            peer_role=ROLE_HOST,
            timing=self._timing,
        )
        self._pty.open()
        self._space.set()
        self._schedule()
        return self.port

    async def stop(self) -> None:
        """Close the pty for good."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._pty.close()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def port(self) -> str:
        """Path a driver opens (symlink when ``link`` was given, else /dev/pts/N)."""
        return self._pty.port

    @property
    def slave_path(self) -> str | None:
        """The current /dev/pts/N (changes after a restored cable)."""
        return self._pty.path

    @property
    def link(self) -> Link:
        """The device-side link state machine (stats, pending)."""
        if self._link is None:
            raise RuntimeError(f"simulated {self.name} not started")
        return self._link

    @property
    def connected(self) -> bool:
        """Whether a host has completed the HELLO exchange and the link is up."""
        return self._link is not None and self._link.up

    async def wait_connected(self, timeout: float | None = None) -> None:
        """Wait until a driver is talking to this device."""
        await asyncio.wait_for(self._up.wait(), timeout)

    # -- faults ------------------------------------------------------------------
    def pull_cable(self) -> None:
        """Close the pty and remove the link: the driver sees the port vanish."""
        self._pty.close()
        if self._link is not None and self._link.up:
            self._link.up = False
        self._up.clear()

    def restore_cable(self) -> str:
        """A new pty behind the same link path; returns the new slave path."""
        path = self._pty.open()
        if self._link is not None:
            self._link.restart(asyncio.get_running_loop().time())
        self._schedule()
        return path

    def inject_garbage(self, n: int) -> None:
        """Write ``n`` random bytes on the line (between frames)."""
        self._pty.write(self.tx_faults.garbage(n))

    # -- for subclasses ------------------------------------------------------------
    @abstractmethod
    def _on_message(self, mtype: int, payload: bytes) -> None:
        """A host message arrived (in order, exactly once)."""

    def _on_connect(self) -> None:  # noqa: B027 - optional hook
        """Hook: a host completed the HELLO exchange."""

    def _send(self, mtype: int, payload: bytes = b"") -> None:
        link = self.link
        link.send(mtype, payload, asyncio.get_running_loop().time())
        self._flush()

    async def wait_space(self) -> None:
        """Wait until fewer than ``window`` messages are queued (flow control for fast dealing)."""
        while self.link.pending >= self.window:
            self._space.clear()
            await self._space.wait()

    # -- machinery ---------------------------------------------------------------
    def _on_bytes(self, data: bytes) -> None:
        if self.silent or self._link is None:
            return
        data = self.rx_faults.apply(data)
        self._link.receive_data(data, asyncio.get_running_loop().time())
        self._flush()

    def _flush(self) -> None:
        link = self._link
        if link is None:
            return
        while (ev := link.next_event()) is not None:
            if isinstance(ev, Message):
                self._on_message(ev.mtype, ev.payload)
            elif isinstance(ev, LinkUp):
                self._up.set()
                self._on_connect()
            elif isinstance(ev, LinkDown | LinkFault):
                self._up.clear()
        out = link.data_to_send()
        if link.pending < self.window:
            self._space.set()
        self._schedule()
        if out and not self.silent:  # last: a frame's reader (the table, in this process) is not kept waiting
            self._pty.write(self.tx_faults.apply(out))

    def _schedule(self) -> None:
        link = self._link
        if link is None or not self._pty.is_open:
            return
        self._timer = rearm(self._timer, link.next_deadline(), self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        link = self._link
        if link is None or not self._pty.is_open:
            return
        link.poll(asyncio.get_running_loop().time())
        if self.silent:
            link.data_to_send()
        self._flush()
