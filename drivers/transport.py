"""Opening a serial port for the drivers, with errors a technician understands.

pyserial-asyncio-fast gives the asyncio transport; the port is opened with
``exclusive=True`` (an ``flock``), so a second driver or monitor on the same
port gets :class:`PortBusy` instead of stealing half the bytes.
"""

from __future__ import annotations

import asyncio
import errno
import os
from typing import Any

import serial
import serial_asyncio_fast

from drivers.errors import DeviceError, PortAccessDenied, PortBusy, PortNotFound

SIM_PREFIX = "sim:"
_BUSY = {errno.EBUSY, errno.EAGAIN, errno.EWOULDBLOCK}


async def open_serial(path: str, baud: int, protocol: asyncio.Protocol) -> asyncio.Transport:
    """Open ``path`` at ``baud`` (8N1, raw) and connect ``protocol`` to it.

    ``sim:NAME`` connects to the in-process simulator registered as NAME
    (:mod:`simulators.memory`), the way python-can's ``virtual`` bus works.
    """
    if path.startswith(SIM_PREFIX):
        from simulators.memory import connect

        return await connect(path, protocol)
    if not os.path.exists(path):
        raise PortNotFound(path, "no such file" if not os.path.islink(path) else "dangling link")
    loop = asyncio.get_running_loop()
    try:
        transport, _ = await serial_asyncio_fast.create_serial_connection(
            loop, lambda: protocol, path, baudrate=baud, exclusive=True
        )
    except serial.SerialException as e:
        raise _wrap(path, e) from e
    except OSError as e:
        raise _wrap(path, e) from e
    result: Any = transport
    return result  # type: ignore[no-any-return]


def _wrap(path: str, e: Exception) -> DeviceError:
    code = getattr(e, "errno", None)
    text = str(e)
    if code == errno.ENOENT or "No such file" in text:
        return PortNotFound(path, "no such file")
    if code in _BUSY or "exclusively lock" in text:
        return PortBusy(path, "locked by another program")
    if code in (errno.EACCES, errno.EPERM):
        return PortAccessDenied(path, "check the dialout group or udev rule")
    return DeviceError(f"cannot open {path}: {text}")
