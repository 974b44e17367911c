"""Pydantic settings of each driver (what a table config file holds per device)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SerialConfig(_Model):
    """A serial device: tty path (or a symlink such as /dev/serial/by-id/...), line speed, timers."""

    port: str = Field(min_length=1, description="tty path, e.g. /dev/ttyUSB0 or a simulator's --link path")
    baud: int = Field(default=115200, gt=0)
    reconnect_min_s: float = Field(default=0.05, gt=0, description="first reconnect delay after a pulled cable")
    reconnect_max_s: float = Field(default=0.5, gt=0, description="backoff cap; keep < 1 s to be back within 2 s")
    request_timeout_s: float = Field(default=2.0, gt=0, description="how long a request (peek) waits for an answer")


class ShoeConfig(SerialConfig):
    """The card-reading shoe."""


class ShufflerConfig(SerialConfig):
    """The shuffler; ``decks`` is what a deck set must hold."""

    decks: int = Field(default=6, ge=1, le=8)


class ChipsConfig(SerialConfig):
    """The RS-485 chip-sensor bus: spots polled, insurance line sensors, poll period."""

    spots: tuple[int, ...] = (1, 2, 3, 4, 5, 6, 7)
    insurance: bool = Field(default=True, description="poll the insurance-line sensor of each spot too")
    poll_interval_s: float = Field(default=0.05, gt=0, description="pause between two poll cycles of the bus")
    card_readers: bool = Field(default=False, description="poll the player-card reader of each spot too "
                                                          "(address 0x40 | spot on this bus; docs/protocols.md)")
    reader_timeout_s: float = Field(default=0.25, gt=0, description="how long a card reader's answer to a poll "
                                                                    "is awaited (three missed: reader lost)")

    @field_validator("spots")
    @classmethod
    def _spots_in_range(cls, v: tuple[int, ...]) -> tuple[int, ...]:
        bad = [s for s in v if not 1 <= s <= 7]
        if bad:
            raise ValueError(f"spots must be 1..7, got {bad}")
        return v


class CardReaderConfig(ChipsConfig):
    """The player-card readers polled on their own (a bus of readers, or a technician's check):
    the readers of ``spots``, no chip sensor."""

    card_readers: bool = True

    @field_validator("card_readers")
    @classmethod
    def _readers_polled(cls, v: bool) -> bool:
        if not v:
            raise ValueError("a card-reader driver polls the card readers (card_readers cannot be false)")
        return v


class ConsoleConfig(_Model):
    """The USB HID dealer console: vendor/product id; ``backend`` names its transport
    (:func:`drivers.console.console_port`): "libusb" the device (``usb:VID:PID``), "sim" a simulated
    console of its own, another registered transport's scheme that transport."""

    vid: int = Field(default=0x1D50, ge=0, le=0xFFFF)
    pid: int = Field(default=0x6190, ge=0, le=0xFFFF)
    backend: str = Field(default="libusb", description='"libusb" (real device) or "sim" (simulators.console); '
                                                       "or another registered transport's scheme")
    read_timeout_ms: int = Field(default=100, gt=0)
    reconnect_min_s: float = Field(default=0.05, gt=0)
    reconnect_max_s: float = Field(default=0.5, gt=0)
