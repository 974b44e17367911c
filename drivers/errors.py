"""One exception root for the device layer, split by what went wrong.

Callers catch :class:`DeviceError`; the subclasses say whether the port is the
problem (missing, busy), the link (lost) or the bytes (protocol). Foreign
exceptions (pyserial, pyusb, OSError) are wrapped with ``raise ... from``.
"""

from __future__ import annotations


class DeviceError(Exception):
    """Root of every error the drivers raise."""


class PortNotFound(DeviceError):
    """The configured port (tty path or USB id) does not exist."""

    def __init__(self, port: str, detail: str = "") -> None:
        self.port = port
        super().__init__(f"port {port} not found" + (f" ({detail})" if detail else ""))


class PortBusy(DeviceError):
    """The port exists but another process holds it (exclusive lock)."""

    def __init__(self, port: str, detail: str = "") -> None:
        self.port = port
        super().__init__(f"port {port} is held by another process" + (f" ({detail})" if detail else ""))


class PortNotSerial(DeviceError):
    """The port exists but is not a serial port (a tty): a regular file, ``/dev/zero``, a folder."""

    def __init__(self, port: str, detail: str = "") -> None:
        self.port = port
        super().__init__(f"port {port} is not a serial port (a tty)" + (f": {detail}" if detail else ""))


class PortAccessDenied(DeviceError):
    """The port exists but this user may not open it (permissions, udev rule)."""

    def __init__(self, port: str, detail: str = "") -> None:
        self.port = port
        super().__init__(f"no permission to open {port}" + (f" ({detail})" if detail else ""))


class LinkLost(DeviceError):
    """The device stopped answering (no heartbeat, no ACK, cable pulled)."""


class DeviceTimeout(DeviceError):
    """A request got no answer in time although the link is up."""


class ProtocolError(DeviceError):
    """The device sent something this driver cannot accept."""


class FrameError(ProtocolError):
    """A byte segment is not a valid frame (length, CRC, escaping)."""


class VersionMismatch(ProtocolError):
    """The device speaks another protocol version, or is another kind of device."""
