"""Software twins of the table's devices, speaking exactly the drivers' bytes.

Serial devices sit on a pseudo-terminal (a driver opens a real tty path) or on the
in-memory ``sim:NAME``; the console is a pyusb backend, reached by name as
``sim:NAME``. Each has an in-process API for a simulated dealer or player and
fault injection. Start all of them in one loop::

    async with SimShoe(seed=1, link=d/"shoe") as shoe, SimShuffler(link=d/"shuffler") as shuffler, \\
               SimChips(link=d/"chips") as chips, SimConsole(link="sim:t01-console") as console:
        ...  # drivers open shoe.port, shuffler.port, chips.port, ConsoleDriver(port=console.port)

or use :class:`simulators.hardware.SimTable`, which does exactly that.
"""

from simulators.chips import SimChips
from simulators.console import SimConsole
from simulators.device import SimDevice
from simulators.faults import FaultPipe
from simulators.hardware import SimTable
from simulators.shoe import DealingLocked, ShoeEmpty, SimShoe
from simulators.shuffler import SimShuffler

__all__ = [
    "DealingLocked",
    "FaultPipe",
    "ShoeEmpty",
    "SimChips",
    "SimConsole",
    "SimDevice",
    "SimShoe",
    "SimShuffler",
    "SimTable",
]
