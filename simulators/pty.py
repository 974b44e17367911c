"""A pseudo-terminal the simulated device sits behind, so drivers open a real tty.

The simulator keeps the master; the slave path (``/dev/pts/N``) is what a
driver opens, also reachable through a stable symlink (``link``) that follows
the pty across a pulled and restored cable. The slave is set raw at creation
(else bytes written before a reader opens it are echoed back) and kept open by
the simulator, so the master never sees EIO when a driver closes and reopens.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tty
from collections.abc import Callable

from drivers.transport import log_once


class PtyPort:
    """Non-blocking master side of a pty, driven by the running asyncio loop."""

    def __init__(self, on_data: Callable[[bytes], None], *, link: str | None = None) -> None:
        self._on_data = on_data
        self.link = link
        self.path: str | None = None
        self._master: int | None = None
        self._slave: int | None = None
        self._pending = bytearray()
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def is_open(self) -> bool:
        """Whether the cable is plugged in."""
        return self._master is not None

    @property
    def port(self) -> str:
        """What a driver should open: the link when there is one, else the slave path."""
        if self.link is not None:
            return self.link
        if self.path is None:
            raise RuntimeError("pty not open")
        return self.path

    def open(self) -> str:
        """Create the pty (and the symlink); returns the slave path."""
        self._loop = asyncio.get_running_loop()
        master, slave = os.openpty()
        tty.setraw(slave)
        os.set_blocking(master, False)
        self._master, self._slave = master, slave
        self.path = os.ttyname(slave)
        if self.link is not None:
            tmp = f"{self.link}.{os.getpid()}.tmp"
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            os.symlink(self.path, tmp)
            os.replace(tmp, self.link)
        self._loop.add_reader(master, self._readable)
        return self.path

    def close(self, *, unlink: bool = True) -> None:
        """Close the pty (a pulled cable); drivers reading it get EIO."""
        master, slave = self._master, self._slave
        self._master = self._slave = None
        self.path = None
        self._pending.clear()
        if master is not None and self._loop is not None:
            self._loop.remove_reader(master)
            self._loop.remove_writer(master)
            os.close(master)
        if slave is not None:
            os.close(slave)
        if unlink and self.link is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.link)

    def write(self, data: bytes) -> None:
        """Write to the line; what the pty cannot take now is buffered."""
        if self._master is None or not data:
            return
        if self._pending:
            self._pending += data
            return
        try:
            n = os.write(self._master, data)
        except BlockingIOError:
            n = 0
        except OSError:
            return
        if n < len(data):
            self._pending += data[n:]
            assert self._loop is not None
            self._loop.add_writer(self._master, self._writable)

    def _writable(self) -> None:
        if self._master is None:
            return
        try:
            n = os.write(self._master, self._pending)
        except BlockingIOError:
            return
        except OSError:
            self._pending.clear()
            n = 0
        del self._pending[:n]
        if not self._pending and self._loop is not None:
            self._loop.remove_writer(self._master)

    def _readable(self) -> None:
        if self._master is None:
            return
        try:
            data = os.read(self._master, 4096)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            return
        if data:
            try:
                self._on_data(data)
            except Exception as e:  # a simulator bug: logged once per cause, never once per read
                log_once(f"{self.path}: the simulator failed on received bytes", e)
