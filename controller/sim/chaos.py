"""Device faults at a simulated table, drawn from a seed: the device half of ``tablectl soak``.

A :class:`DeviceChaos` runs beside a demo table's crew and, every few dozen to few hundred
inputs, does to one device what happens on a casino floor: a cable pulled and put back (shoe,
shuffler, chip bus, the console's USB), a noisy line that corrupts or drops bytes for a while,
a frame received twice (a shoe re-sending a card it thinks was lost), the shuffler jamming on
its next shuffle until a technician frees it. Each fault is announced on the demo's output as
one line, ``chaos t01 #3: pull shoe 0.42 s (input 812, phase players)``, which the soak counts.

The schedule (which fault, on which device, after how many inputs, for how long) depends on
the seed and the table id alone, so the same seed replays the same schedule; where in a
round each fault lands follows from the input count, which the seed also fixes up to the
timing of device events (health changes, retransmissions), as in Jepsen's generated histories.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

from controller.service.table_service import TableService
from simulators.device import SimDevice
from simulators.hardware import SimTable

#: the faults, each with its weight in the schedule
FAULTS: dict[str, int] = {
    "pull": 4,        # a serial cable pulled and put back
    "unplug": 1,      # the console's USB cable
    "corrupt": 2,     # a noisy line: bytes changed both ways
    "drop": 2,        # a noisy line: bytes lost both ways
    "duplicate": 2,   # frames received twice
    "jam": 1,         # the next shuffle jams until a technician frees the cards
}
SERIAL_DEVICES = ("shoe", "shuffler", "chips")


@dataclass(frozen=True, slots=True)
class Fault:
    """One scheduled fault: after ``gap`` more inputs, ``kind`` on ``device`` for ``seconds``."""

    number: int
    gap: int
    kind: str
    device: str
    seconds: float
    rate: float

    def describe(self) -> str:
        what = f"{self.kind} {self.device}"
        if self.kind in ("corrupt", "drop", "duplicate"):
            what += f" at {self.rate:.3f}"
        return f"{what} {self.seconds:.2f} s"


def schedule(seed: int, table_id: str) -> Callable[[], Fault]:
    """The table's fault schedule: each call gives the next fault (deterministic for the seed)."""
    rng = random.Random(f"{seed}:{table_id}:chaos")
    kinds = list(FAULTS)
    weights = [FAULTS[k] for k in kinds]
    number = 0

    def next_fault() -> Fault:
        nonlocal number
        number += 1
        kind = rng.choices(kinds, weights)[0]
        device = "console" if kind == "unplug" else "shuffler" if kind == "jam" else rng.choice(SERIAL_DEVICES)
        rate = {"corrupt": rng.uniform(0.002, 0.02), "drop": rng.uniform(0.002, 0.02),
                "duplicate": rng.uniform(0.05, 0.3)}.get(kind, 0.0)
        return Fault(number, rng.randint(40, 400), kind, device, round(rng.uniform(0.05, 1.5), 2), rate)

    return next_fault


class DeviceChaos:
    """Injects the scheduled faults into one table's simulators (see the module docstring)."""

    def __init__(self, service: TableService, sim: SimTable, *, seed: int, out: TextIO) -> None:
        self.service = service
        self.sim = sim
        self.out = out
        self.next_fault = schedule(seed, service.table_id)
        self.injected = 0

    async def run(self) -> None:
        """Inject faults until cancelled."""
        while True:
            fault = self.next_fault()
            mark = self.service.applied
            while self.service.applied < mark + fault.gap:
                await self.service.wait_input(self.service.applied)
            table = self.service.table
            print(f"chaos {self.service.table_id} #{fault.number}: {fault.describe()} "
                  f"(input {self.service.applied}, phase {table.phase})", file=self.out, flush=True)
            self.injected += 1
            await self._inject(fault)

    def _serial(self, name: str) -> SimDevice:
        device: SimDevice = getattr(self.sim, name)
        return device

    async def _inject(self, fault: Fault) -> None:
        if fault.kind == "pull":
            device = self._serial(fault.device)
            device.pull_cable()
            try:
                await asyncio.sleep(fault.seconds)
            finally:
                device.restore_cable()
        elif fault.kind == "unplug":
            self.sim.console.unplug()
            try:
                await asyncio.sleep(fault.seconds)
            finally:
                self.sim.console.plug()
        elif fault.kind in ("corrupt", "drop", "duplicate"):
            device = self._serial(fault.device)
            pipes = (device.tx_faults, device.rx_faults) if fault.kind != "duplicate" else (device.tx_faults,)
            for pipe in pipes:
                setattr(pipe, fault.kind, fault.rate)
            try:
                await asyncio.sleep(fault.seconds)
            finally:
                for pipe in pipes:
                    setattr(pipe, fault.kind, 0.0)
        elif fault.kind == "jam":
            shuffler = self.sim.shuffler
            shuffler.jam()
            while shuffler.jammed is None and shuffler.jam_next:  # until the next shuffle jams
                await self.service.wait_input(self.service.applied)
            await asyncio.sleep(fault.seconds)
            shuffler.clear_jam()
