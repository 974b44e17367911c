"""Free TCP ports on loopback for the brokers a process starts itself (the demo's, a soak's, the tests'): any free
one, or a stable one below the kernel's ephemeral range for a broker that stops and starts again on it."""

from __future__ import annotations

import random
import socket

HOST = "127.0.0.1"


def free_port(host: str = HOST) -> int:
    """A TCP port on ``host`` that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def ephemeral_low() -> int:
    """The first port of the kernel's ephemeral range (Linux: ``ip_local_port_range``; 32768 elsewhere)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def stable_port(host: str = HOST) -> int:
    """A free TCP port below the kernel's ephemeral range, for a broker that stops and starts again on it
    (a soak's outages): no program asking for any free port, and no outgoing connection, can be handed it
    while the broker is down, as happened to a soak at 35,000 rounds ("Address already in use")."""
    low = ephemeral_low()
    rng = random.SystemRandom()
    for _ in range(200):
        port = rng.randrange(max(1024, low // 2), low)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
            return port
    return free_port(host)
