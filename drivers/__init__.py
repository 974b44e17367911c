"""Device drivers of the table: bytes in, typed device events out. No blackjack rules here.

Every device has the same shape (async context manager, async iterator of
frozen events, a health state, keyword-only settings)::

    from drivers import ShoeDriver, ShoeConfig

    async with ShoeDriver(ShoeConfig(port="/dev/ttyUSB0")) as shoe:
        async for event in shoe.events():      # CardRead("TD"), CutCard(), HealthChanged(...)...
            print(event.to_json())             # {"type": "card", "card": "TD"}
        blackjack = await shoe.request_peek("A")  # True / False / None (no hole card held)
        shoe.health                             # Health.OK, "degraded", "lost", ...

Drivers and commands (all ``async``):

* :class:`ShoeDriver` - ``request_peek(up_rank)``, ``enable_dealing()``, ``lock_dealing()``,
  ``reveal_hole()``, ``reset()``. Events: card, hole_dealt, hole_revealed, cut_card, misread,
  peek, shoe, dealing.
* :class:`ShufflerDriver` - ``start_shuffle(deck_set, decks=None)``, ``clear_jam(deck_set)``,
  ``reset()``. Events: shuffle_started, shuffle_complete, deck_set_ready, count_mismatch, jam, door.
* :class:`ChipsDriver` - polls the bus by itself; ``wagers`` / ``wager(spot, line)`` hold the latest
  readings. Events: wager (on change), sensor_fault.
* :class:`CardReaderDriver` - the player-card readers (on the chip bus at ``0x40 | spot``; the chip driver
  polls them itself with ``ChipsConfig(card_readers=True)``). Events: card_in, card_out, card_unreadable,
  reader_lost, reader_back (:mod:`drivers.playercard`).
* :class:`ConsoleDriver` - ``set_lights(buttons, spots, alarm)``. Events: button_pressed,
  button_released, spot_select, badge, badge_sign_out, badge_unreadable (its badge reader:
  :mod:`drivers.badge`). ``port=`` names its transport (``usb:VID:PID`` by default, ``sim:NAME``);
  ``backend=`` takes a pyusb backend for ``usb:`` (``SimConsole().backend``).

:class:`DeviceGroup` opens several devices at once and merges their events into
``(name, event)`` pairs, in the order they arrived; ``group.health`` maps names to health
strings. Instead of ``events()``, ``device.listen(callback)`` hands each event over as it is
decoded (the group uses it; a callback must not block).

Every driver also emits ``health`` (:class:`HealthChanged`) and serial ones ``link_up``
(:class:`LinkStarted`). Opening raises :class:`PortNotFound` / :class:`PortBusy` /
:class:`PortAccessDenied`; after that a pulled cable is retried with backoff (health "lost",
then "ok" again) and nothing queued is lost. Requests raise :class:`LinkLost` or
:class:`DeviceTimeout`. All errors derive from :class:`DeviceError`.

Backends (python-can style, one :class:`drivers.plugins.Registry` per table: names -> backends, entry points
loaded in one place): :func:`open_device` builds a driver from a device kind and a port
(:data:`drivers.registry.DEVICES`).
Every driver's port, the console's included, is opened by the transport its scheme names, from one table
(:data:`drivers.transport.TRANSPORTS`, :func:`drivers.transport.register_transport`): ``sim:NAME`` reaches
the in-process simulator created with ``link="sim:NAME"`` (:mod:`simulators.memory`: same bytes, no pty;
a simulated console too), ``usb:VID:PID`` a USB device through pyusb (:mod:`drivers.usb`: the console),
a plain path is a tty (serial port, USB adapter, pty); the console port ``sim`` is a simulated console of
its own (the config's ``backend = "sim"``).
For the demo, :class:`simulators.SimTable` starts one table's four simulators and
``SimTable.device_group()`` gives the real drivers on them. Layers: :mod:`drivers.codec`
(framing, sans-I/O), :mod:`drivers.link` (ACK/NAK/retry/heartbeat, sans-I/O, ``now`` passed in),
:mod:`drivers.transport` (the registry; pyserial opens the tty, reads and writes go through the loop,
never ``select()``), :mod:`drivers.usb` (the console's pyusb transport), one module per device.
Wire formats: docs/protocols.md.
"""

from drivers.base import Device, SerialDriver
from drivers.cardreader import CardReaderDriver
from drivers.chips import ChipsDriver
from drivers.config import CardReaderConfig, ChipsConfig, ConsoleConfig, SerialConfig, ShoeConfig, ShufflerConfig
from drivers.console import ConsoleDriver
from drivers.errors import (
    DeviceError,
    DeviceTimeout,
    FrameError,
    LinkLost,
    PortAccessDenied,
    PortBusy,
    PortNotFound,
    PortNotSerial,
    ProtocolError,
    VersionMismatch,
)
from drivers.events import (
    BadgeRead,
    BadgeSignOut,
    BadgeUnreadable,
    Button,
    ButtonPressed,
    ButtonReleased,
    CardRead,
    CountMismatch,
    CutCard,
    DealingState,
    DeckSetReady,
    DeviceEvent,
    DoorChanged,
    Health,
    HealthChanged,
    HoleCardDealt,
    HoleCardRevealed,
    Jam,
    LinkStarted,
    Misread,
    PeekResult,
    ReadsUnaccounted,
    SensorFault,
    ShoePresence,
    ShoeRead,
    ShoeReadEvent,
    ShuffleComplete,
    ShuffleStarted,
    SpotSelected,
    Wager,
)
from drivers.group import DeviceGroup
from drivers.playercard import (
    CardReaderBack,
    CardReaderLost,
    PlayerCardInserted,
    PlayerCardRemoved,
    PlayerCardUnreadable,
)
from drivers.registry import DEVICE_KINDS, open_device
from drivers.shoe import ShoeDriver
from drivers.shuffler import ShufflerDriver

__all__ = [
    "DEVICE_KINDS",
    "BadgeRead",
    "BadgeSignOut",
    "BadgeUnreadable",
    "Button",
    "ButtonPressed",
    "ButtonReleased",
    "CardRead",
    "CardReaderBack",
    "CardReaderConfig",
    "CardReaderDriver",
    "CardReaderLost",
    "ChipsConfig",
    "ChipsDriver",
    "ConsoleConfig",
    "ConsoleDriver",
    "CountMismatch",
    "CutCard",
    "DealingState",
    "DeckSetReady",
    "Device",
    "DeviceError",
    "DeviceEvent",
    "DeviceGroup",
    "DeviceTimeout",
    "DoorChanged",
    "FrameError",
    "Health",
    "HealthChanged",
    "HoleCardDealt",
    "HoleCardRevealed",
    "Jam",
    "LinkLost",
    "LinkStarted",
    "Misread",
    "PeekResult",
    "PlayerCardInserted",
    "PlayerCardRemoved",
    "PlayerCardUnreadable",
    "PortAccessDenied",
    "PortBusy",
    "PortNotFound",
    "PortNotSerial",
    "ProtocolError",
    "ReadsUnaccounted",
    "SensorFault",
    "SerialConfig",
    "SerialDriver",
    "ShoeConfig",
    "ShoeDriver",
    "ShoePresence",
    "ShoeRead",
    "ShoeReadEvent",
    "ShuffleComplete",
    "ShuffleStarted",
    "ShufflerConfig",
    "ShufflerDriver",
    "SpotSelected",
    "VersionMismatch",
    "Wager",
    "open_device",
]
