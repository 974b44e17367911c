"""``tablectl simulate shoe|shuffler|chips|cards``: a simulated device on a pty, for bench work.

Prints the slave path (``/dev/pts/N``) as the first line of stdout, links it at
``--link PATH`` when given, and serves until Ctrl-C or SIGTERM (exit 0).
``--corrupt`` / ``--drop`` inject byte faults from their own generator, so
``--auto N --seed S`` deals the same cards whatever the fault rates. ``--shuffler weak|clumpy`` makes
the shuffler a faulty machine (each shuffle starts from its deck set's previous order: a broken one-pass
machine, or cards that stick in clumps), for the shuffle-quality monitor (docs/analytics.md).
``cards`` is the chip bus with a player-card reader at every spot (as on the table: one RS-485 bus,
each reader at its own address), ``--card SPOT=NUMBER`` a card in a reader, ``--wager`` chips on a
spot; ``tablectl monitor cards`` and ``monitor chips`` both read it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from controller.errors import UsageError
from controller.game.money import MoneyError, parse_money
from controller.stop_signals import on_stop_signals

if TYPE_CHECKING:
    from simulators.shoe import KeptRead

KINDS = ("shoe", "shuffler", "chips", "cards")


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "simulate", help="a simulated device on a pseudo-terminal", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("device", choices=KINDS)
    p.add_argument("--link", metavar="PATH", help="also make PATH a symlink to the pty (follows a restored cable)")
    p.add_argument("--seed", type=int, default=None, help="seed of the shoe order / shuffler")
    p.add_argument("--corrupt", type=float, default=0.0, metavar="RATE", help="fraction of bytes corrupted")
    p.add_argument("--drop", type=float, default=0.0, metavar="RATE", help="fraction of bytes lost")
    p.add_argument("--fault-seed", type=int, default=None, help="seed of the fault generator")
    p.add_argument("--auto", type=int, default=None, metavar="N", help="shoe: deal N cards as fast as the link takes")
    p.add_argument("--auto-every", type=float, default=0.0, metavar="SECONDS",
                   help="shoe: with --auto, at most one card each SECONDS (default: as fast as the link takes them)")
    p.add_argument("--log-reads", type=Path, default=None, metavar="FILE",
                   help="shoe: append each read to FILE as it is made, one JSON object a line "
                        "(load, read, type, card): what the shoe dealt, to check a journal against")
    p.add_argument("--decks", type=int, default=6, help="decks in the shoe / a shuffler deck set")
    p.add_argument("--shuffler", default=None, metavar="KIND",
                   help="shuffler: the machine, good (the default), weak (a broken one-pass machine: the deck set "
                        "cut once and riffled together once) or clumpy (cards stick in clumps of 2-3)")
    p.add_argument("--penetration", type=float, default=0.75, help="shoe: fraction dealt before the cut card")
    p.add_argument(
        "--wager", action="append", default=[], metavar="SPOT=AMOUNT", help="chips, cards: chips on a spot, e.g. 3=25"
    )
    p.add_argument("--card", action="append", default=[], metavar="SPOT=NUMBER",
                   help="cards: a player's card in the reader of a spot, e.g. 3=6001234567")
    p.set_defaults(func=run)


def _spot_of(option: str, item: str, spot: str) -> int:
    if not (spot.isascii() and spot.isdigit()) or not 1 <= int(spot) <= 7:
        raise UsageError(f"--{option} {item}: spot must be 1..7")
    return int(spot)


def _cards(args: argparse.Namespace) -> dict[int, str]:
    """``--card SPOT=NUMBER`` as spot -> card number (UsageError naming a bad one)."""
    from drivers.playercard import CARD_NUMBER

    cards: dict[int, str] = {}
    for item in args.card:
        if args.device != "cards":
            raise UsageError("--card: only the card readers (simulate cards) take player cards")
        spot, _, number = item.partition("=")
        if not CARD_NUMBER.fullmatch(number):
            raise UsageError(f"--card {item}: a card number is 1 to 20 of 0-9 A-Z")
        cards[_spot_of("card", item, spot)] = number
    return cards


def _check(args: argparse.Namespace) -> dict[int, int]:
    for name in ("corrupt", "drop"):
        rate = getattr(args, name)
        if not 0.0 <= rate < 1.0:
            raise UsageError(f"--{name} {rate}: a rate must be at least 0 and below 1")
    if args.auto is not None:
        if args.device != "shoe":
            raise UsageError(f"--auto: only the shoe deals cards, not the {args.device}")
        if args.auto < 0:
            raise UsageError("--auto: N must be 0 or more")
    if not 0 <= args.auto_every <= 60:
        raise UsageError(f"--auto-every {args.auto_every:g}: between 0 and 60 seconds")
    if args.log_reads is not None:
        if args.device != "shoe":
            raise UsageError(f"--log-reads: only the shoe reads cards, not the {args.device}")
        if not args.log_reads.parent.is_dir():
            raise UsageError(f"--log-reads {args.log_reads}: no such directory {args.log_reads.parent}")
    if args.link is not None:
        folder = Path(args.link).parent
        if not folder.is_dir():
            raise UsageError(f"--link {args.link}: no such folder {folder} (create it first)")
        if not os.access(folder, os.W_OK | os.X_OK):
            raise UsageError(f"--link {args.link}: cannot write in the folder {folder}")
        if Path(args.link).is_dir():
            raise UsageError(f"--link {args.link}: a folder, not a path for the link")
    if args.shuffler is not None:
        from simulators.shuffler import SHUFFLERS

        if args.device != "shuffler":
            raise UsageError(f"--shuffler: only the shuffler shuffles, not the {args.device}")
        if args.shuffler not in SHUFFLERS:
            raise UsageError(f"--shuffler {args.shuffler!r}: one of {', '.join(SHUFFLERS)}")
    if not 1 <= args.decks <= 8:
        raise UsageError(f"--decks {args.decks}: 1 to 8 decks")
    if not 0.0 < args.penetration <= 1.0:
        raise UsageError(f"--penetration {args.penetration}: a fraction in (0, 1]")
    wagers: dict[int, int] = {}
    for item in args.wager:
        if args.device not in ("chips", "cards"):
            raise UsageError("--wager: only the chip bus (simulate chips or cards) takes wagers")
        spot, _, amount = item.partition("=")
        try:
            wagers[_spot_of("wager", item, spot)] = parse_money(amount)
        except MoneyError as e:
            raise UsageError(f"--wager {item}: {e}") from None
    return wagers


def run(args: argparse.Namespace) -> int:
    wagers = _check(args)
    cards = _cards(args)
    try:
        return asyncio.run(_serve(args, wagers, cards))
    except KeyboardInterrupt:
        return 0


def _read_logger(path: Path) -> Callable[[KeptRead], None]:
    """Each read as one JSON line, flushed at once (the file is the shoe's own record of what it dealt)."""
    from drivers import shoe as proto

    names = {proto.CARD: "card", proto.HOLE_DEALT: "hole_dealt", proto.HOLE_REVEALED: "hole_revealed",
             proto.CUT: "cut_card", proto.MISREAD: "misread", proto.PRESENCE: "shoe"}
    out = path.open("a", encoding="utf-8", buffering=1)

    def log_read(read: KeptRead) -> None:
        card = read.content.decode("ascii", "replace") if read.mtype in (proto.CARD, proto.HOLE_REVEALED) else None
        out.write(json.dumps({"load": read.load, "read": read.read, "type": names[read.mtype], "card": card}) + "\n")

    return log_read


async def _serve(args: argparse.Namespace, wagers: dict[int, int], cards: dict[int, str]) -> int:
    from simulators import SimChips, SimDevice, SimShoe, SimShuffler
    from simulators.cardreader import CardReaders

    faults: dict[str, Any] = {
        "link": args.link,
        "corrupt": args.corrupt,
        "drop": args.drop,
        "fault_seed": args.fault_seed,
    }
    sim: SimDevice
    if args.device == "shoe":
        on_read = None if args.log_reads is None else _read_logger(args.log_reads)
        sim = SimShoe(decks=args.decks, seed=args.seed, penetration=args.penetration, on_read=on_read, **faults)
    elif args.device == "shuffler":
        sim = SimShuffler(decks=args.decks, seed=args.seed, shuffler=args.shuffler or "good", **faults)
    else:
        readers = CardReaders() if args.device == "cards" else None
        chips = SimChips(readers=readers, **faults)
        for spot, cents in wagers.items():
            chips.set_wager(spot, cents)
        for spot, number in cards.items():
            if readers is not None:  # (--card is refused for any other device)
                readers.insert(spot, number)
        sim = chips
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    restore_signals = on_stop_signals(loop, stop.set)
    try:
        await sim.start()
    except OSError as e:
        if args.link and e.filename2 is not None:  # the pty is there; the link beside --link failed
            print(f"tablectl simulate: cannot link {args.link}: {e.strerror}", file=sys.stderr)
        else:
            print(f"tablectl simulate: cannot create the pty: {e}", file=sys.stderr)
        restore_signals()
        return 1
    print(sim.slave_path, flush=True)
    where = f" (linked at {args.link})" if args.link else ""
    print(f"simulated {args.device} on {sim.slave_path}{where}; Ctrl-C to stop", file=sys.stderr, flush=True)
    auto: asyncio.Task[list[str]] | None = None
    if isinstance(sim, SimShoe) and args.auto:
        auto = loop.create_task(sim.auto(args.auto, every=args.auto_every))
        auto.add_done_callback(
            lambda t: t.cancelled()
            or print(f"dealt {args.auto} cards", file=sys.stderr, flush=True)
        )
    try:
        await stop.wait()
    finally:
        if auto is not None:
            auto.cancel()
            await asyncio.gather(auto, return_exceptions=True)
        await sim.stop()
        restore_signals()
    return 0
