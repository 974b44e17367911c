"""The dealer console's USB transport: a pyusb device as an asyncio transport of HID reports.

``usb:VID:PID`` (hex) names the device. :func:`open_usb` finds it through a pyusb backend (libusb
unless one is passed, e.g. the simulated console's, :class:`simulators.console.ConsoleBackend`),
detaches a kernel HID driver if one is bound, claims interface 0 and hands back a
:class:`UsbTransport`, registered in :data:`drivers.transport.TRANSPORTS` as ``usb``:

* each interrupt IN report (endpoint 0x81) is one ``protocol.data_received(report)``;
* each ``write(report)`` is one interrupt OUT transfer (endpoint 0x01), in order;
* a USB error (the cable pulled: ENODEV) closes it with ``protocol.connection_lost(exc)``;
* ``close()`` first sends the reports already written, then releases the interface.

pyusb blocks, so reads and writes run in worker threads, a read waiting at most
``usb_timeout_ms`` (an attribute of the protocol, the console's ``read_timeout_ms``; else 100 ms).
Writes are flow-controlled the asyncio way with a write buffer limit of 0: the transport pauses its
protocol while a report is on its way and resumes it once the device took it, so a protocol can
wait for the device (``ConsoleDriver.set_lights`` does).
"""

from __future__ import annotations

import array
import asyncio
import collections
import contextlib
import errno
import logging
import re
from typing import Any, Final

import usb.core
import usb.util

from drivers.errors import DeviceError, PortAccessDenied, PortBusy, PortNotFound
from drivers.transport import log_once

log = logging.getLogger(__name__)

SCHEME: Final = "usb"
REPORT_SIZE: Final = 8
EP_IN: Final = 0x81
EP_OUT: Final = 0x01
INTERFACE: Final = 0
#: how long one read or write waits when the protocol does not say (``usb_timeout_ms``)
TIMEOUT_MS: Final = 100

_USB_ID = re.compile(r"^(?:usb:)?([0-9a-fA-F]{1,4}):([0-9a-fA-F]{1,4})$")


def parse_usb_id(port: str) -> tuple[int, int]:
    """``"1d50:6190"`` (or ``"usb:1d50:6190"``) -> ``(0x1D50, 0x6190)``; ValueError if it is not a USB id."""
    m = _USB_ID.match(port.strip())
    if m is None:
        raise ValueError(f"{port!r} is not a USB id like 1d50:6190")
    return int(m.group(1), 16), int(m.group(2), 16)


def usb_id(vid: int, pid: int) -> str:
    """The USB id as a technician writes it: ``1d50:6190``."""
    return f"{vid:04x}:{pid:04x}"


def usb_port(vid: int, pid: int) -> str:
    """The port name of a USB device: ``usb:1d50:6190``."""
    return f"{SCHEME}:{usb_id(vid, pid)}"


async def open_usb(path: str, baud: int, protocol: asyncio.Protocol, *, backend: Any = None) -> asyncio.Transport:
    """Claim the device ``path`` names (``usb:VID:PID``; ``baud`` is not used) and connect ``protocol``.

    ``backend`` is a pyusb backend (``None``: pyusb picks libusb). Raises :class:`PortNotFound`,
    :class:`PortBusy`, :class:`PortAccessDenied` or :class:`DeviceError`, each one line.
    """
    try:
        vid, pid = parse_usb_id(path)
    except ValueError:
        raise PortNotFound(path, "not a USB id like usb:1d50:6190") from None
    timeout_ms = int(getattr(protocol, "usb_timeout_ms", TIMEOUT_MS))
    loop = asyncio.get_running_loop()
    claiming = loop.run_in_executor(None, _claim, vid, pid, backend)
    try:
        dev = await asyncio.shield(claiming)
    except asyncio.CancelledError:  # the driver closed meanwhile: release the device once it is claimed
        claiming.add_done_callback(_release_claimed)
        raise
    return UsbTransport(loop, protocol, dev, path, timeout_ms=timeout_ms)


def _claim(vid: int, pid: int, backend: Any) -> Any:
    name = usb_id(vid, pid)
    try:
        dev = usb.core.find(idVendor=vid, idProduct=pid, backend=backend)
    except usb.core.NoBackendError as e:
        raise PortNotFound(name, "no USB backend (libusb) available") from e
    if dev is None:
        raise PortNotFound(f"USB {name}", "no such device")
    try:
        try:
            if dev.is_kernel_driver_active(INTERFACE):
                dev.detach_kernel_driver(INTERFACE)
        except (NotImplementedError, usb.core.USBError):
            pass
        dev.set_configuration()
        usb.util.claim_interface(dev, INTERFACE)
    except usb.core.USBError as e:
        if e.errno == errno.EBUSY:
            raise PortBusy(f"USB {name}", "interface claimed by another process") from e
        if e.errno in (errno.EACCES, errno.EPERM):
            raise PortAccessDenied(f"USB {name}", "check the udev rule") from e
        raise DeviceError(f"console {name}: {e}") from e
    return dev


def _release(dev: Any) -> None:
    with contextlib.suppress(usb.core.USBError):
        usb.util.release_interface(dev, INTERFACE)
    usb.util.dispose_resources(dev)


def _release_claimed(claiming: asyncio.Future[Any]) -> None:
    if not claiming.cancelled() and claiming.exception() is None:
        _release(claiming.result())


class UsbTransport(asyncio.Transport):
    """A claimed pyusb device as an asyncio transport: one report per ``data_received`` and per ``write``."""

    def __init__(self, loop: asyncio.AbstractEventLoop, protocol: asyncio.Protocol, dev: Any, path: str, *,
                 timeout_ms: int = TIMEOUT_MS) -> None:
        super().__init__({"port": path, "usb_device": dev})
        self._loop = loop
        self._protocol = protocol
        self._dev = dev
        self._path = path
        self._timeout_ms = timeout_ms
        self._out: collections.deque[bytes] = collections.deque()
        self._buffered = 0
        self._high = self._low = 0
        self._paused = False
        self._closing = False
        self._done = False
        self._may_read = asyncio.Event()
        self._may_read.set()
        self._reader: asyncio.Task[None] | None = None
        self._writer: asyncio.Task[None] | None = None
        self._closer: asyncio.Task[None] | None = None
        protocol.connection_made(self)
        if not self._closing:
            self._reader = loop.create_task(self._read_loop())

    # -- asyncio.Transport ----------------------------------------------------------------------
    def is_closing(self) -> bool:
        return self._closing

    def is_reading(self) -> bool:
        return self._may_read.is_set() and not self._closing

    def pause_reading(self) -> None:
        self._may_read.clear()

    def resume_reading(self) -> None:
        self._may_read.set()

    def get_write_buffer_size(self) -> int:
        return self._buffered

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return self._low, self._high

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        """Pause the protocol above ``high`` bytes in flight, resume at ``low`` (both 0 unless set)."""
        if high is None:
            high = 0 if low is None else 4 * low
        if low is None:
            low = high // 4
        if not high >= low >= 0:
            raise ValueError(f"high ({high!r}) must be >= low ({low!r}) must be >= 0")
        self._high, self._low = high, low
        self._maybe_pause()
        self._maybe_resume()

    def can_write_eof(self) -> bool:
        return False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self._closing or not data:
            return
        report = bytes(data)
        self._out.append(report)
        self._buffered += len(report)
        self._maybe_pause()
        if self._writer is None:
            self._writer = self._loop.create_task(self._write_loop())

    def close(self) -> None:
        """Send what was written, then release the device and report ``connection_lost(None)``."""
        if self._closing:
            return
        self._closing = True
        self._may_read.set()
        self._closer = self._loop.create_task(self._close_after_writes())

    def abort(self) -> None:
        """Release the device now; reports not yet sent are dropped."""
        self._closing = True
        self._finish(None)

    # -- the worker threads' results ---------------------------------------------------------
    def _read_one(self) -> bytes | None:
        buf = array.array("B", bytes(REPORT_SIZE))
        try:
            n = self._dev.read(EP_IN, buf, self._timeout_ms)
        except usb.core.USBTimeoutError:
            return None
        return bytes(buf[:n])

    async def _read_loop(self) -> None:
        while not self._closing:
            await self._may_read.wait()
            if self._closing:
                return
            try:
                report = await asyncio.to_thread(self._read_one)
            except usb.core.USBError as e:
                self._lose(e)
                return
            if report is None or self._closing:
                continue
            try:
                self._protocol.data_received(report)
            except Exception as e:
                log_once(f"{self._path}: the protocol failed on a received report", e)
                self._lose(e)
                return

    async def _write_loop(self) -> None:
        try:
            while self._out and not self._done:
                report = self._out[0]
                try:
                    await asyncio.to_thread(self._dev.write, EP_OUT, report, self._timeout_ms)
                except usb.core.USBTimeoutError as e:
                    log.warning("%s: a report was not taken within %d ms, dropped: %s", self._path, self._timeout_ms, e)
                    not_taken = getattr(self._protocol, "write_not_taken", None)
                    if not_taken is not None:  # its sender learns it (before the resume that wakes it)
                        not_taken(e)
                except usb.core.USBError as e:
                    self._lose(e)
                    return
                if self._done:
                    return
                self._out.popleft()
                self._buffered -= len(report)
                self._maybe_resume()
        finally:
            self._writer = None

    async def _close_after_writes(self) -> None:
        writer = self._writer
        if writer is not None:
            await asyncio.gather(writer, return_exceptions=True)
        self._finish(None)

    # -- internals ------------------------------------------------------------------------------
    def _maybe_pause(self) -> None:
        if not self._paused and self._buffered > self._high:
            self._paused = True
            try:
                self._protocol.pause_writing()
            except Exception as e:
                log_once(f"{self._path}: protocol.pause_writing() failed", e)

    def _maybe_resume(self) -> None:
        if self._paused and self._buffered <= self._low:
            self._paused = False
            try:
                self._protocol.resume_writing()
            except Exception as e:
                log_once(f"{self._path}: protocol.resume_writing() failed", e)

    def _lose(self, exc: Exception) -> None:
        self._closing = True
        self._finish(exc)

    def _finish(self, exc: Exception | None) -> None:
        if self._done:
            return
        self._done = True
        current = asyncio.current_task()
        for task in (self._reader, self._writer):
            if task is not None and task is not current:
                task.cancel()  # a read under way still ends in its thread within the timeout
        self._out.clear()
        self._buffered = 0
        _release(self._dev)
        self._protocol.connection_lost(exc)
