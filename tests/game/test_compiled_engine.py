"""The compiled modules and the pure sources settle every round identically, and are taken all or none."""

from __future__ import annotations

import copy
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import controller
from controller.game.hand import Hand, Spot
from controller.game.legality import Refusal
from controller.game.rules import Rules

ROOT = Path(__file__).resolve().parents[2]

PLAY = """
import importlib, sys
import controller
import controller.game.table as engine
from controller import bench
from controller.game import events as ev
from controller.game.rules import Rules
from controller.profiles import load_rules
from controller.sim.dealer import SimulatedDealer
kinds = {importlib.import_module(m).__file__.rsplit(".", 1)[-1] for m in controller.COMPILED_MODULES}
print(" ".join(sorted(kinds)))
for profile in ("house-h17", "european-6d", "house-shoe-surrender", "ny-4620"):
    rules = load_rules(profile)
    t = engine.Table(rules)
    d = SimulatedDealer(rules, seed=3, table_id="t01")
    t.handle(ev.TableOpened(now=0.0))
    while t.rounds_settled < 300:
        t.handle(d.next_event(t))
    print(profile, t.snapshot()["totals"], t.cards_dealt, t.shuffles)
for rules in (Rules(decks=6, surrender="late"), load_rules("european-6d")):
    s = bench.run(rules, 3000, seed=2, spots=2)[0]
    print(rules.name, s.net, s.sum_sq, s.handle, s.house_net, s.shuffles)
"""


def _play(pure: bool) -> list[str]:
    env = {**os.environ, "TABLECTL_PURE_ENGINE": "1" if pure else "0"}
    out = subprocess.run([sys.executable, "-c", PLAY], env=env, capture_output=True, text=True, check=True, timeout=180)
    return out.stdout.splitlines()


def test_pure_and_compiled_engines_settle_alike() -> None:
    pure = _play(pure=True)
    assert pure[0] == "py", "TABLECTL_PURE_ENGINE=1: every compiled module from its source"
    default = _play(pure=False)
    assert default[0] in ("py", "so"), f"compiled modules mixed with pure ones: {default[0]}"
    if default[0] != "so":
        pytest.skip("no current compiled engine in this checkout (run make setup)")
    assert default[1:] == pure[1:]


_KINDS = """
import importlib, controller
print(" ".join(importlib.import_module(m).__file__.rsplit(".", 1)[-1] for m in controller.COMPILED_MODULES))
"""


def test_a_stale_build_is_set_aside_as_a_whole(tmp_path: Path) -> None:
    """A checkout whose build is older than one of its inputs (BUILD_INPUTS: a module the compiled ones only read
    types from, here) imports every compiled module from its source, with a warning; a current build, all compiled."""
    built = ROOT / "controller" / controller.BUILD_DIR_NAME
    libraries = list(built.glob(controller.ENGINE_LIBRARY + ".*"))
    if not (built / controller.BUILD_STAMP).exists() or not libraries or not list((built / "game").glob("table.*.so")):
        pytest.skip("no compiled engine in this checkout (run make setup)")
    checkout = tmp_path / "checkout"
    ignore = shutil.ignore_patterns("__pycache__")
    for folder in ("controller", "cardnotation"):
        shutil.copytree(ROOT / folder, checkout / folder, ignore=ignore, copy_function=shutil.copy)
    shutil.copy(ROOT / "pyproject.toml", checkout / "pyproject.toml")
    stamp = checkout / "controller" / controller.BUILD_DIR_NAME / controller.BUILD_STAMP
    newest = max(p.stat().st_mtime for pattern in controller.BUILD_INPUTS for p in checkout.glob(pattern))
    os.utime(stamp, (newest + 10, newest + 10))

    def kinds(where: Path = checkout) -> tuple[list[str], str]:
        env = {**os.environ, "PYTHONPATH": str(where), "TABLECTL_PURE_ENGINE": "0"}
        done = subprocess.run([sys.executable, "-c", _KINDS], env=env, cwd=tmp_path, capture_output=True, text=True,
                              check=True, timeout=60)
        return done.stdout.split(), done.stderr

    current, warned = kinds()
    if set(current) != {"so"}:
        pytest.skip(f"the build in this checkout is not current ({current})")
    assert "older than its sources" not in warned
    events = checkout / "controller" / "game" / "events.py"
    os.utime(events, (newest + 20, newest + 20))
    stale, warned = kinds()
    assert stale == ["py"] * len(controller.COMPILED_MODULES)
    assert "older than its sources" in warned
    os.utime(stamp, (newest + 30, newest + 30))
    player = next((stamp.parent / "strategy").glob("player.*.so"))
    player.unlink()
    incomplete, warned = kinds()
    assert incomplete == ["py"] * len(controller.COMPILED_MODULES), "one module missing: none compiled"
    assert "incomplete" in warned

    # installed (no pyproject.toml, no stamp): every shim built but not the group's library (each part of the
    # build is optional): none compiled, and the warning says to reinstall; with the library, all compiled
    site = tmp_path / "site"
    for folder in ("controller", "cardnotation"):
        shutil.copytree(ROOT / folder, site / folder, ignore=shutil.ignore_patterns(
            "__pycache__", controller.BUILD_STAMP, controller.ENGINE_LIBRARY + ".*"), copy_function=shutil.copy)
    no_library, warned = kinds(site)
    assert no_library == ["py"] * len(controller.COMPILED_MODULES) and "reinstall" in warned
    for f in libraries:
        shutil.copy(f, site / "controller" / controller.BUILD_DIR_NAME / f.name)
    assert kinds(site)[0] == ["so"] * len(controller.COMPILED_MODULES)
    # TABLECTL_PURE_ENGINE=1: the pure sources, however current the build, and no warning
    env = {**os.environ, "PYTHONPATH": str(site), "TABLECTL_PURE_ENGINE": "1"}
    done = subprocess.run([sys.executable, "-c", _KINDS], env=env, cwd=tmp_path, capture_output=True, text=True,
                          check=True, timeout=60)
    assert done.stdout.split() == ["py"] * len(controller.COMPILED_MODULES) and not done.stderr


def test_the_engine_values_pickle_and_copy() -> None:
    """Compiled, a class cannot be made without its __init__ and a frozen dataclass cannot take its fields back one
    by one: Rules, hands and spots say how they are rebuilt, so they pickle and copy on both engines."""
    rules = Rules(name="x", decks=2, peek_on=frozenset({1}), max_hands_by_spots=((7, 2),),
                  citations=(("surrender", "4620.5"),))
    hand = Hand(1000, ["AS", "7D"], from_split=True)
    hand.add("2C")
    hand.doubled, hand.split_aces, hand.status, hand.outcome, hand.payout = True, True, "doubled", "win", 2000
    spot = Spot(3, 1000, "p1")
    spot.hands.append(hand)
    spot.insurance, spot.insurance_payout = 500, -500
    refusal = Refusal("not a pair", "split")
    for again in (lambda x: pickle.loads(pickle.dumps(x)), copy.deepcopy, copy.copy):
        assert again(rules) == rules and hash(again(rules)) == hash(rules)
        assert again(refusal) == refusal
        h = again(hand)
        assert [getattr(h, f) for f in _HAND] == [getattr(hand, f) for f in _HAND]
        s = again(spot)
        assert (s.number, s.wager, s.player, s.insurance, s.insurance_payout, s.net) == (3, 1000, "p1", 500, -500, 1500)
        assert [[getattr(h, f) for f in _HAND] for h in s.hands] == [[getattr(h, f) for f in _HAND] for h in spot.hands]


_HAND = ("cards", "wager", "doubled", "from_split", "split_aces", "status", "outcome", "payout", "total", "soft")
