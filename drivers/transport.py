"""Opening a driver's port by the transport its name says, and the tty transport, with errors a technician
understands.

Every driver opens its port through :func:`transport_for` (the one table :data:`TRANSPORTS`, a
:class:`drivers.plugins.Registry`): ``usb:VID:PID``
is a USB device (:mod:`drivers.usb`, the dealer console), a scheme another package registers its own
transport under (the simulators' ``sim:NAME``, as python-can's ``virtual`` bus is one more interface),
anything else a tty path, described here. The drivers import nothing of such a package: it registers its
transport when imported (:func:`register_transport`), and names it under the ``tablectl.transports`` entry
points (pyproject.toml), which :func:`transport_for` loads the first time a port of that scheme is opened.

pyserial opens and configures the tty (8N1, raw, the baud rate) with ``exclusive=True`` (an
``flock``), so a second driver or monitor on the same port gets :class:`PortBusy` instead of
stealing half the bytes. The bytes then go through :class:`TtyTransport`: ``os.read`` and
``os.write`` on the non-blocking descriptor, driven by the event loop's selector (epoll on
Linux). pyserial's own ``read()`` calls ``select()``, which cannot take a descriptor above
1023 (``ValueError: filedescriptor out of range in select()``): a real table PC never has that
many, but hundreds of simulated tables in one process do (issue 15).
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import re
import stat
import traceback
from collections.abc import Awaitable, Callable

import serial

from drivers.errors import DeviceError, PortAccessDenied, PortBusy, PortNotFound, PortNotSerial
from drivers.plugins import Registry

log = logging.getLogger(__name__)

_BUSY = {errno.EBUSY, errno.EAGAIN, errno.EWOULDBLOCK}
#: bytes read per readiness callback (a pty hands out at most about 4 KiB at once)
READ_SIZE = 16384
#: readiness reported this many times in a row with nothing to read: the device is gone (a USB
#: adapter pulled shows so on Linux); fewer are spurious wakeups of a raw tty (VMIN=0 reads 0 bytes)
EMPTY_READS_MAX = 3
#: bytes kept for a line that does not take them; beyond, new writes are dropped (the link retransmits)
WRITE_BUFFER_MAX = 64 * 1024

_seen_causes: dict[tuple[str, str, int], int] = {}


def log_once(message: str, exc: BaseException) -> None:
    """Log ``exc`` with its traceback the first time its cause (type and raising line) is seen;
    later ones only at DEBUG, so a device failing on every read cannot flood the log."""
    tb = traceback.extract_tb(exc.__traceback__)
    where = (tb[-1].filename, tb[-1].lineno or 0) if tb else ("", 0)
    key = (type(exc).__qualname__, *where)
    seen = _seen_causes.get(key, 0)
    _seen_causes[key] = seen + 1
    if seen == 0:
        log.error("%s: %r (logged once; repeats of this cause are at DEBUG)", message, exc, exc_info=exc)
    else:
        log.debug("%s: %r (seen %d times)", message, exc, seen + 1)


class TtyTransport(asyncio.Transport):
    """An open tty as an asyncio transport, read and written with ``os.read``/``os.write``.

    ``connection_made`` is called at once (as the in-memory ``sim:`` transport does), so a
    driver's first HELLO goes out with the open. A read error (EIO: the other end of a pty
    closed), a descriptor that keeps reading empty (a USB adapter pulled) or an exception in the
    protocol closes the transport and reports it through ``connection_lost(exc)``; the driver
    then reopens with backoff, and the exception's cause is logged once (:func:`log_once`).
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, protocol: asyncio.Protocol, port: serial.Serial,
                 path: str) -> None:
        super().__init__({"serial": port, "port": path})
        self._loop = loop
        self._protocol = protocol
        self._serial = port
        self._path = path
        self._fd: int = port.fileno()
        os.set_blocking(self._fd, False)
        self._out = bytearray()
        self._closing = False
        self._reading = False
        self._empty_reads = 0
        protocol.connection_made(self)
        if not self._closing:
            self.resume_reading()

    # -- asyncio.Transport ----------------------------------------------------------------------
    def is_closing(self) -> bool:
        return self._closing

    def is_reading(self) -> bool:
        return self._reading

    def pause_reading(self) -> None:
        if self._reading and not self._closing:
            self._loop.remove_reader(self._fd)
            self._reading = False

    def resume_reading(self) -> None:
        if not self._reading and not self._closing:
            self._loop.add_reader(self._fd, self._read_ready)
            self._reading = True

    def get_write_buffer_size(self) -> int:
        return len(self._out)

    def can_write_eof(self) -> bool:
        return False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self._closing or not data:
            return
        if self._out:
            if len(self._out) + len(data) <= WRITE_BUFFER_MAX:
                self._out += data
            return
        try:
            n = os.write(self._fd, data)
        except (BlockingIOError, InterruptedError):
            n = 0
        except OSError as e:
            self._lose(e)
            return
        if n < len(data):
            self._out += memoryview(data)[n:]
            self._loop.add_writer(self._fd, self._write_ready)

    def close(self) -> None:
        """Close the port now (unsent bytes are dropped: the link layer retransmits what matters)."""
        if self._closing:
            return
        self._release()
        self._loop.call_soon(self._protocol.connection_lost, None)

    def abort(self) -> None:
        self.close()

    # -- the loop's callbacks ----------------------------------------------------------------
    def _read_ready(self) -> None:
        try:
            data = os.read(self._fd, READ_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:  # EIO: the other end of the pty is gone, a USB adapter pulled
            self._lose(e)
            return
        if not data:  # raw mode (VMIN=0): "nothing now"; readable yet empty again and again: unplugged
            self._empty_reads += 1
            if self._empty_reads >= EMPTY_READS_MAX:
                self._lose(ConnectionResetError(f"{self._path}: readable but empty (device disconnected?)"))
            return
        self._empty_reads = 0
        try:
            self._protocol.data_received(data)
        except Exception as e:
            log_once(f"{self._path}: the protocol failed on received bytes", e)
            self._lose(e)

    def _write_ready(self) -> None:
        try:
            n = os.write(self._fd, self._out)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            self._lose(e)
            return
        del self._out[:n]
        if not self._out:
            self._loop.remove_writer(self._fd)

    # -- internals ------------------------------------------------------------------------------
    def _release(self) -> None:
        self._closing = True
        if self._reading:
            self._loop.remove_reader(self._fd)
            self._reading = False
        if self._out:
            self._loop.remove_writer(self._fd)
            self._out.clear()
        try:
            self._serial.close()
        except (OSError, serial.SerialException) as e:
            log.debug("%s: close failed: %s", self._path, e)

    def _lose(self, exc: Exception) -> None:
        if self._closing:
            return
        self._release()
        self._protocol.connection_lost(exc)


TransportOpener = Callable[[str, int, asyncio.Protocol], Awaitable[asyncio.Transport]]


async def _open_usb(path: str, baud: int, protocol: asyncio.Protocol) -> asyncio.Transport:
    """``usb:VID:PID``: the USB device through libusb (:mod:`drivers.usb`: a pyusb device as a transport of
    HID reports, the dealer console's), imported only when asked for."""
    from drivers.usb import open_usb

    return await open_usb(path, baud, protocol)


#: How a port is opened, by the scheme before its first colon, for every driver alike: ``usb:VID:PID`` a USB
#: device (the console), and what other packages register (the simulators' ``sim:NAME``: an in-process
#: simulator, serial or console); a port with no registered scheme is a tty path (a serial port, a USB
#: serial adapter, a pty) opened by pyserial. One table: a new transport (a serial server over TCP, say) is
#: one entry, and every driver, ``tablectl monitor`` and the table service's config take its ports at once
#: (the console's config names it by ``backend``).
#: the entry point group naming the packages that register transports (``sim = "simulators.memory"``)
TRANSPORT_PLUGINS = "tablectl.transports"
TRANSPORTS: Registry[TransportOpener] = Registry("transport", TRANSPORT_PLUGINS, [("usb", _open_usb)])
_SCHEME = re.compile(r"^([a-z][a-z0-9+.-]*):")


def register_transport(scheme: str, opener: TransportOpener) -> None:
    """Open ports written ``SCHEME:...`` with ``opener``."""
    if _SCHEME.match(f"{scheme}:") is None:
        raise ValueError(f"{scheme!r} is not a transport scheme (lower-case letters, digits, + . -)")
    TRANSPORTS.register(scheme, opener)


def _transport(scheme: str) -> TransportOpener | None:
    return TRANSPORTS.find(scheme)  # the simulators' ``sim`` from its entry point, the first time


def scheme_of(path: str) -> str | None:
    """The transport scheme ``path`` is written with (``sim`` of ``sim:t01-shoe``), registered or not."""
    m = _SCHEME.match(path)
    return m.group(1) if m is not None else None


def registered(path: str) -> bool:
    """Whether ``path`` names a registered transport (rather than a tty path)."""
    scheme = scheme_of(path)
    return scheme is not None and _transport(scheme) is not None


def transport_for(path: str) -> TransportOpener:
    """The opener of ``path``: its scheme's, else pyserial's for a tty path."""
    scheme = scheme_of(path)
    opener = _transport(scheme) if scheme is not None else None
    return opener if opener is not None else _open_tty


async def open_serial(path: str, baud: int, protocol: asyncio.Protocol) -> asyncio.Transport:
    """Open ``path`` at ``baud`` (8N1, raw) and connect ``protocol`` to it, by the transport its scheme
    names (:data:`TRANSPORTS`; a plain path is a tty)."""
    return await transport_for(path)(path, baud, protocol)


async def _open_tty(path: str, baud: int, protocol: asyncio.Protocol) -> asyncio.Transport:
    """A tty path through pyserial (exclusive: a second opener gets :class:`PortBusy`)."""
    if not os.path.exists(path):
        raise PortNotFound(path, "no such file" if not os.path.islink(path) else "dangling link")
    if not stat.S_ISCHR(os.stat(path).st_mode):
        raise PortNotSerial(path, "not a character device")
    loop = asyncio.get_running_loop()

    def open_port() -> serial.Serial:
        return serial.Serial(path, baudrate=baud, exclusive=True, timeout=0, write_timeout=0)

    opening = loop.run_in_executor(None, open_port)  # a USB adapter's open may block a moment
    try:
        port = await asyncio.shield(opening)
    except asyncio.CancelledError:  # the driver closed meanwhile: close the port when it is open
        opening.add_done_callback(_close_opened)
        raise
    except serial.SerialException as e:
        raise _wrap(path, e) from e
    except OSError as e:
        raise _wrap(path, e) from e
    return TtyTransport(loop, protocol, port, path)


def _close_opened(opening: asyncio.Future[serial.Serial]) -> None:
    if not opening.cancelled() and opening.exception() is None:
        opening.result().close()


def _wrap(path: str, e: Exception) -> DeviceError:
    code = getattr(e, "errno", None)
    text = str(e)
    if code == errno.ENOENT or "No such file" in text:
        return PortNotFound(path, "no such file")
    if code in _BUSY or "exclusively lock" in text:
        return PortBusy(path, "locked by another program")
    if code == errno.ENOTTY or "Inappropriate ioctl" in text:  # a character device that takes no tty settings
        return PortNotSerial(path, "it takes no serial settings")
    if code in (errno.EACCES, errno.EPERM):
        return PortAccessDenied(path, "check the dialout group or udev rule")
    return DeviceError(f"cannot open {path}: {text}")
