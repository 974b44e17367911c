"""One table's simulated hardware in one asyncio loop: shoe, shuffler, chips on ptys, console in-process.

For the demo and the tests::

    async with SimTable(tmpdir, seed=7) as sim:
        async with sim.device_group() as devices:       # the real drivers on the ptys / sim: ports
            sim.chips.set_wager(3, 2500)                # a simulated player bets
            sim.console.tap(Button.NO_MORE_BETS)        # the simulated dealer
            card = sim.shoe.deal()                      # the dealer pulls a card
            async for name, event in devices.events(): ...
"""

from __future__ import annotations

from pathlib import Path
from typing import Self

from drivers.chips import ChipsDriver
from drivers.config import ChipsConfig, ConsoleConfig, ShoeConfig, ShufflerConfig
from drivers.console import ConsoleDriver
from drivers.group import DeviceGroup
from drivers.link import LinkTiming
from drivers.shoe import ShoeDriver
from drivers.shuffler import ShufflerDriver
from simulators.cardreader import CardReaders
from simulators.chips import SimChips
from simulators.console import SimConsole
from simulators.shoe import SimShoe
from simulators.shuffler import SimShuffler


class SimTable:
    """The four simulated devices of a table; links ``shoe``, ``shuffler``, ``chips`` in ``directory``.

    ``backend="sim"`` puts the serial devices on the in-memory ``sim:`` backend
    (ports ``sim:DIRECTORY/shoe``...) instead of ptys: same bytes, no kernel. The console is
    always in-process, reached by name as ``sim:DIRECTORY/console`` (the pyusb calls still run).
    ``card_readers=True`` puts a player-card reader at every spot on the chip bus (``self.cards``:
    :class:`simulators.cardreader.CardReaders`) and has the chip driver poll them.
    """

    def __init__(
        self,
        directory: str | Path,
        *,
        seed: int | None = None,
        decks: int = 6,
        penetration: float = 0.75,
        shuffle_time: float = 0.05,
        corrupt: float = 0.0,
        drop: float = 0.0,
        fault_seed: int | None = None,
        timing: LinkTiming | None = None,
        backend: str = "pty",
        card_readers: bool = False,
    ) -> None:
        if backend not in ("pty", "sim"):
            raise ValueError(f"backend must be 'pty' or 'sim', got {backend!r}")
        d = Path(directory)

        def link(device: str) -> str:
            return f"sim:{d / device}" if backend == "sim" else str(d / device)

        self.shoe = SimShoe(
            decks=decks, seed=seed, penetration=penetration, link=link("shoe"), timing=timing,
            corrupt=corrupt, drop=drop, fault_seed=fault_seed,
        )
        self.shuffler = SimShuffler(
            decks=decks, seed=seed, shuffle_time=shuffle_time, link=link("shuffler"), timing=timing,
            corrupt=corrupt, drop=drop, fault_seed=fault_seed,
        )
        #: the player-card readers on the chip bus (None: the table has none)
        self.cards: CardReaders | None = CardReaders() if card_readers else None
        self.chips = SimChips(link=link("chips"), timing=timing, corrupt=corrupt, drop=drop, fault_seed=fault_seed,
                              readers=self.cards)
        self.console = SimConsole(link=f"sim:{d / 'console'}")
        self.decks = decks

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def start(self) -> None:
        """Create the three ptys (or sim: ports) and register the console's name."""
        for sim in (self.shoe, self.shuffler, self.chips):
            await sim.start()
        self.console.open()

    async def stop(self) -> None:
        """Close every pty, unregister the console."""
        self.console.close()
        for sim in (self.shoe, self.shuffler, self.chips):
            await sim.stop()

    def configs(self, *, chips_poll_s: float = 0.05) -> tuple[ShoeConfig, ShufflerConfig, ChipsConfig, ConsoleConfig]:
        """Driver settings pointing at these simulators (what a table config would hold)."""
        return (
            ShoeConfig(port=self.shoe.port),
            ShufflerConfig(port=self.shuffler.port, decks=self.decks),
            ChipsConfig(port=self.chips.port, poll_interval_s=chips_poll_s, card_readers=self.cards is not None),
            ConsoleConfig(vid=self.console.vid, pid=self.console.pid, backend="sim"),
        )

    def device_group(self, *, chips_poll_s: float = 0.05) -> DeviceGroup:
        """The real drivers on these simulators, not yet opened (use ``async with``)."""
        shoe, shuffler, chips, console = self.configs(chips_poll_s=chips_poll_s)
        return DeviceGroup(
            shoe=ShoeDriver(shoe),
            shuffler=ShufflerDriver(shuffler),
            chips=ChipsDriver(chips),
            console=ConsoleDriver(console, port=self.console.port),
        )
