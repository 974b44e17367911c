"""Plaintext off loopback only when asked for by name (DESIGN.md, "The casino floor": secure by default).

A listener or a connection without TLS on an address other than loopback sends passwords, commands and
ratings across the casino network in clear. The product makes one only when the person says so with
:data:`ALLOW_FLAG` (``broker-config``, ``cluster``, ``run``; a table's ``mqtt.allow_plaintext``), and then
says so on stderr at every start (:func:`plaintext_warning`). One home for the rule: every command asks
:func:`check_plaintext`.
"""

from __future__ import annotations

import ipaddress
from typing import Final

__all__ = ["ALLOW_FLAG", "PlaintextRefused", "check_plaintext", "is_loopback", "plaintext_warning"]

#: the explicit flag that allows plaintext off loopback
ALLOW_FLAG: Final = "--allow-plaintext"


class PlaintextRefused(ValueError):
    """Plaintext on a non-loopback address without :data:`ALLOW_FLAG`: one line naming what and how to allow it."""


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and the loopback addresses (127.0.0.0/8, ``::1``); an unspecified address
    (``0.0.0.0``, ``::``: every interface) or any other name is not."""
    host = host.strip().strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def plaintext_warning(what: str) -> str:
    """The line said at every start of a plaintext listener or connection off loopback."""
    return (f"warning: {what} without TLS ({ALLOW_FLAG}): passwords, commands and ratings cross the "
            "network in clear")


def check_plaintext(what: str, host: str, *, tls: bool, allowed: bool, how: str = ALLOW_FLAG) -> str | None:
    """None when ``host`` is loopback or TLS is on; the warning to print when plaintext off loopback is
    ``allowed``; else raises :class:`PlaintextRefused` (``what`` names the listener or broker, ``how`` the
    flag or setting that would allow it)."""
    if tls or is_loopback(host):
        return None
    if not allowed:
        raise PlaintextRefused(f"{what}: not a loopback address and no TLS: refused (use TLS, or {how} to "
                               "send passwords and the pit's traffic in clear)")
    return plaintext_warning(what)
