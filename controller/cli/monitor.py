"""``tablectl monitor shoe|shuffler|chips|console|cards --port PATH [--json]``: a technician's cable check.

Opens the device through its real driver and prints every typed event; with
``--json`` one JSON object a line. A missing or busy port is a one-line reason
and exit 2; a link that drops is reported and retried like the service does;
Ctrl-C (or SIGTERM) closes the port and exits 0. For the console ``--port`` is
``VID:PID`` in hex (e.g. ``1d50:6190``) or ``sim``, the built-in simulated
console, which presses each button once so the tool itself can be checked.
``cards`` polls the player-card readers (on the chip bus's port: ``0x40 | spot``) and prints
``card_in`` / ``card_out`` with the card number as read, ``card_unreadable``, ``reader_lost``.
Every port is opened by the transport it names (``drivers.transport.TRANSPORTS``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from typing import Any

from controller.errors import UsageError
from controller.stop_signals import on_stop_signals

KINDS = ("shoe", "shuffler", "chips", "console", "cards")


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "monitor",
        help="print the typed events of a device through its real driver",
        description=__doc__.split("\n\n")[0],
    )
    p.add_argument("device", choices=KINDS)
    p.add_argument("--port", required=True, help="tty path (or link); console: VID:PID or 'sim'")
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        return asyncio.run(_monitor(args))
    except KeyboardInterrupt:
        return 0


def _human(event: Any) -> str:
    data = event.to_json()
    kind = data.pop("type")
    details = " ".join(f"{k}={v}" for k, v in data.items())
    stamp = time.strftime("%H:%M:%S")
    if kind == "health" and data.get("health") == "lost":
        return f"{stamp} {kind} {details} (retrying)"
    return f"{stamp} {kind} {details}".rstrip()


async def _monitor(args: argparse.Namespace) -> int:
    from drivers import DeviceError, PortAccessDenied, PortBusy, PortNotFound, PortNotSerial, open_device

    sim_console: Any = None
    port = args.port
    if args.device == "console" and port == "sim":  # one to press: reached by its sim:NAME like any simulator
        from simulators.console import SimConsole

        sim_console = SimConsole.fresh()
        port = sim_console.port
    try:
        device = open_device(args.device, port)
    except ValueError as e:
        raise UsageError(f"--port {args.port}: {e}") from None
    try:
        await device.open()
    except (PortNotFound, PortBusy, PortAccessDenied, PortNotSerial) as e:
        raise UsageError(str(e)) from None
    except DeviceError as e:
        print(f"tablectl monitor: {e}", file=sys.stderr)
        return 1
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    restore_signals = on_stop_signals(loop, stop.set)
    if sim_console is not None:
        from drivers.events import Button

        for button in Button:
            sim_console.tap(button)
    out = sys.stdout
    as_json = args.json

    async def pump() -> None:
        try:
            async for event in device.events():
                out.write((json.dumps(event.to_json()) if as_json else _human(event)) + "\n")
                out.flush()
        except BrokenPipeError:  # reader went away (| head): stop quietly
            sys.stdout = None

    printer = loop.create_task(pump())
    stopper = loop.create_task(stop.wait())
    try:
        await asyncio.wait({printer, stopper}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        await device.close()
        stopper.cancel()
        try:
            await asyncio.wait_for(printer, 1.0)
        except (TimeoutError, asyncio.CancelledError):
            printer.cancel()
        restore_signals()
    return 0
