"""The pure engine beside a Python blackjack simulator from PyPI, in one run.

    python benchmarks/peer.py [--peer jackblack|py21] [--rounds 40000] [--repeat 3] [--seed 1] [--compiled] [--json]

Issue 28: the pure engine (the fallback where no compiler exists) plays at least as many rounds per
second as the best Python blackjack simulator measured beside it. The peer is not a dependency of the
project; install it into the interpreter that runs this script:

* ``jackblack`` (default): ``pip install jackblack==0.8.0``. The fastest of the PyPI simulators that
  play headless on Python 3.11 (of jackblack, py21, blackjack21, pyjack21; blackjacksim and recent
  cardsharp need 3.12). Its ``Simulation`` deals from a shoe, asks a ``Strategy`` at every decision
  (hit, stand, double, split, insurance), plays the dealer (S17) and settles. It has no basic strategy
  of its own: :class:`JackblackBasic` below is the 6-deck S17 DAS chart (no surrender), the same
  game as the engine's reference rules, looked up from plain dicts (the cheapest a strategy can be).
* ``py21``: ``pip install py21==1.6.0 altair`` (py21 imports altair without declaring it). The
  fullest rules (surrender, H17 or S17, DAS, split limits, burn, cut card) and its own basic
  strategy from CSV charts; about two thirds of jackblack's speed here.

Both sides play ``--rounds`` rounds of one spot, taken in turn (peer, engine, peer, engine, ...) so a
change of the machine's load hits both; each figure is the best of ``--repeat``, in rounds per second
of the clock and per second of this process's CPU time (steadier on a machine shared with other jobs:
the clock also counts the time others held the core). The engine's figure is
``controller.bench.run(rules, rounds, seed=S, workers=1)``, one process, on the rules
of ``benchmarks/bench_floor.py`` (6 decks, S17, peek, DAS; basic strategy with doubles, splits and
surrender). The pure engine is forced (``TABLECTL_PURE_ENGINE=1`` is set before ``controller`` is
imported) unless ``--compiled``. Figures are printed, never asserted. A missing peer exits 2 with
one line saying what to install.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import json
import os
import platform
import random
import sys
import time
from collections.abc import Callable
from typing import Any

#: the peers this script can drive: module, the install line, the rounds/s function's name
PEERS: dict[str, tuple[str, str]] = {
    "jackblack": ("jackblack", "pip install jackblack==0.8.0"),
    "py21": ("py21", "pip install py21==1.6.0 altair"),
}

# 6-deck S17 DAS basic strategy, no surrender: dealer's up card 2..11 (ace = 11)
_H, _S, _D, _P = "hit", "stay", "double down", "split"


def _row(spec: str) -> dict[int, str]:
    """A chart row from ten letters for up cards 2..A (H hit, S stand, D double, P split)."""
    names = {"H": _H, "S": _S, "D": _D, "P": _P}
    return {up: names[c] for up, c in zip(range(2, 12), spec, strict=True)}


_HARD = {t: _row("HHHHHHHHHH") for t in range(4, 9)}
_HARD |= {
    9: _row("HDDDDHHHHH"),
    10: _row("DDDDDDDDHH"),
    11: _row("DDDDDDDDDH"),
    12: _row("HHSSSHHHHH"),
}
_HARD |= {t: _row("SSSSSHHHHH") for t in range(13, 17)}
_HARD |= {t: _row("SSSSSSSSSS") for t in range(17, 22)}
_SOFT = {
    13: _row("HHHDDHHHHH"),
    14: _row("HHHDDHHHHH"),
    15: _row("HHDDDHHHHH"),
    16: _row("HHDDDHHHHH"),
    17: _row("HDDDDHHHHH"),
    18: _row("SDDDDSSHHH"),
    19: _row("SSSSSSSSSS"),
    20: _row("SSSSSSSSSS"),
    21: _row("SSSSSSSSSS"),
}
_PAIRS = {
    11: _row("PPPPPPPPPP"),
    2: _row("PPPPPPHHHH"),
    3: _row("PPPPPPHHHH"),
    4: _row("HHHPPHHHHH"),
    6: _row("PPPPPHHHHH"),
    7: _row("PPPPPPHHHH"),
    8: _row("PPPPPPPPPP"),
    9: _row("PPPPPSPPSS"),
}


Rate = tuple[float, float]  # rounds per second of the clock, and of this process's CPU time


def _timed(play: Callable[[], object], rounds: int) -> Rate:
    wall, cpu = time.perf_counter(), time.process_time()
    play()
    return rounds / (time.perf_counter() - wall), rounds / (time.process_time() - cpu)


def jackblack_rate(rounds: int, seed: int) -> Rate:
    """Rounds per second of jackblack's ``Simulation`` with one basic-strategy player, 6 decks, S17."""
    from jackblack.deck import Deck
    from jackblack.game import Simulation
    from jackblack.player import Player, Strategy

    class JackblackBasic(Strategy):
        """Basic strategy on jackblack's decision hook; a double it does not offer is a hit (soft 18: stand)."""

        def __init__(self) -> None:
            super().__init__(auto_log=False)

        def decide(self, player: Any, choices: list[str], dealer: Any = None, players: Any = None) -> str:
            hand = player.hand
            up = dealer.hand[0].value
            if _P in choices and hand[0].value in _PAIRS:
                move = _PAIRS[hand[0].value][up]
                if move == _P:
                    return _P
            total = hand.value()
            soft = total <= 21 and hand.lowest_value() + 10 == total
            move = (_SOFT if soft and total >= 13 else _HARD)[min(total, 21)][up]
            if move == _D and _D not in choices:
                return _S if soft and total == 18 else _H
            return move

    random.seed(seed)
    sim = Simulation([Player("spot", chips=10**15, strategy=JackblackBasic())], deck=Deck(num_decks=6, shuffle=True),
                     min_bet=10)
    return _timed(lambda: sim.run(n_times=rounds), rounds)


def py21_rate(rounds: int, seed: int) -> Rate:
    """Rounds per second of py21's ``Game.play_round`` with one player on its own basic strategy, 6 decks."""
    from py21 import Game, Player

    game = Game([Player(10**15)], rules={"num_decks": 6, "surrender_allowed": False}, seed=seed)

    def play() -> None:
        for _ in range(rounds):
            game.play_round()

    return _timed(play, rounds)


RATES: dict[str, Callable[[int, int], Rate]] = {"jackblack": jackblack_rate, "py21": py21_rate}


def engine_rate(rounds: int, seed: int) -> Rate:
    """Rounds per second of ``controller.bench.run`` with one worker on the reference rules (the clock's as the
    bench reports it; the strategy chart is built before, cached)."""
    from controller import bench
    from controller.game.rules import Rules

    cpu = time.process_time()
    stats, _ = bench.run(Rules(name="6D S17 DAS peek, 1 spot", decks=6), rounds, seed=seed, workers=1)
    return stats.rounds / stats.elapsed, stats.rounds / (time.process_time() - cpu)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--peer", choices=sorted(PEERS), default="jackblack", help="the simulator to time (jackblack)")
    ap.add_argument("--rounds", type=int, default=40_000, help="rounds per run, each side (default 40,000)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each, taken in turn; the best is kept")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--compiled", action="store_true", help="the compiled engine (default: the pure one)")
    ap.add_argument("--json", action="store_true", help="one JSON object instead of the text")
    args = ap.parse_args()
    if args.rounds < 1 or args.repeat < 1:
        print("peer.py: --rounds and --repeat must be at least 1", file=sys.stderr)
        sys.exit(2)
    module, install = PEERS[args.peer]
    try:
        importlib.import_module(module)
    except ImportError as exc:
        print(f"peer.py: the peer {args.peer} is not installed ({exc}): {install}", file=sys.stderr)
        sys.exit(2)
    if not args.compiled:
        os.environ["TABLECTL_PURE_ENGINE"] = "1"  # read when controller is first imported, below
    import controller.game.table as table
    from controller.game.rules import Rules
    from controller.strategy.chart import basic_strategy

    kind = "compiled" if (table.__file__ or "").endswith((".so", ".pyd")) else "pure"
    if kind == "compiled" and not args.compiled:
        sys.exit("peer.py: controller was imported compiled although TABLECTL_PURE_ENGINE=1")
    basic_strategy(Rules(name="6D S17 DAS peek, 1 spot", decks=6))  # built and cached before any clock
    peer_of = RATES[args.peer]
    peer_of(2_000, args.seed)  # warm both up
    engine_rate(2_000, args.seed)
    peers: list[Rate] = []
    engines: list[Rate] = []
    for _ in range(args.repeat):
        peers.append(peer_of(args.rounds, args.seed))
        engines.append(engine_rate(args.rounds, args.seed))
    peer, engine = max(r[0] for r in peers), max(r[0] for r in engines)
    peer_cpu, engine_cpu = max(r[1] for r in peers), max(r[1] for r in engines)
    result: dict[str, Any] = {
        "python": platform.python_version(),
        "peer": args.peer,
        "peer_version": importlib.metadata.version(module),
        "engine": kind,
        "rounds": args.rounds,
        "repeat": args.repeat,
        "peer_rounds_per_s": round(peer),
        "engine_rounds_per_s": round(engine),
        "ratio": round(engine / peer, 3),
        "peer_rounds_per_cpu_s": round(peer_cpu),
        "engine_rounds_per_cpu_s": round(engine_cpu),
        "ratio_cpu": round(engine_cpu / peer_cpu, 3),
        "load_average": round(os.getloadavg()[0], 2),
    }
    if args.json:
        print(json.dumps(result))
        return
    print(f"python {result['python']}, load average {result['load_average']}, {args.rounds:,} rounds x {args.repeat}")
    peer_name = f"{args.peer} {result['peer_version']}"
    engine_name = f"{kind} engine (controller.bench.run)"
    width = max(len(peer_name), len(engine_name))
    print(f"{'':{width}}  {'rounds/s':>10}  {'rounds/CPU-s':>12}")
    print(f"{peer_name:{width}}  {peer:>10,.0f}  {peer_cpu:>12,.0f}")
    print(f"{engine_name:{width}}  {engine:>10,.0f}  {engine_cpu:>12,.0f}")
    print(f"{'engine / peer':{width}}  {engine / peer:>10.2f}  {engine_cpu / peer_cpu:>12.2f}"
          "   (issue 28's target: at least 1.0)")


if __name__ == "__main__":
    main()
