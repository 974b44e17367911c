"""DESIGN's layers hold in the imports: a test that fails on a forbidden import (read from the source, not run).

* ``cardnotation`` is a leaf: it imports nothing of the project.
* ``drivers/`` and ``simulators/`` import nothing of ``controller/`` (bytes and devices, no blackjack rules);
  ``drivers/`` nothing of ``simulators/`` (they register themselves with the drivers).

(``controller/game/`` being pure is tests/game/test_purity.py.)
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROJECT = ("cardnotation", "controller", "drivers", "simulators")


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every module a file imports (at any depth: a function's lazy import counts too)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append((node.lineno, node.module))
            # ``from controller import sim`` imports controller.sim: each name may be a module
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return found


def _files(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def _violations(package: str, allowed: Callable[[str], bool]) -> list[str]:
    return [f"{path.relative_to(ROOT)}:{line}: imports {name}" for path in _files(package)
            for line, name in _imports(path) if not allowed(name)]


def _top(name: str) -> str:
    return name.split(".")[0]


def test_the_card_notation_is_a_leaf() -> None:
    assert not _violations("cardnotation", lambda name: _top(name) not in PROJECT)


@pytest.mark.parametrize("package", ["drivers", "simulators"])
def test_devices_import_nothing_of_the_controller(package: str) -> None:
    assert _files(package)
    assert not _violations(package, lambda name: _top(name) != "controller")


def test_the_drivers_import_nothing_of_the_simulators() -> None:
    """The simulators are one more transport and console, registered from their own side (pyproject's entry
    points ``tablectl.transports`` and ``tablectl.consoles``, as python-can's virtual bus is one more
    interface): ``drivers/console.py`` took ``SimConsole`` and ``drivers/transport.py`` the in-memory ``connect``,
    two import circles."""
    assert not _violations("drivers", lambda name: _top(name) != "simulators")



def _package_files(package: str) -> list[Path]:
    path = ROOT / Path(*package.split("."))
    return sorted(path.rglob("*.py")) if path.is_dir() else [path.with_suffix(".py")]


def _inside(name: str, packages: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def test_the_engine_imports_only_itself_and_the_card_notation() -> None:
    found = [f"{path.relative_to(ROOT)}:{line}: imports {name}" for path in _package_files("controller.game")
             for line, name in _imports(path)
             if _top(name) in PROJECT
             and not _inside(name, ("controller.game", "controller.contract", "cardnotation"))]
    assert not found


#: DESIGN's layers from the bottom: each package imports nothing of the ones that act on it (the simulated
#: pit and the command line are the top: the table PC's shell never needs them; the engine, strategy and
#: bench know no devices)
ABOVE = {
    "controller.game": ("controller.service", "controller.mqtt", "controller.analytics", "controller.strategy",
                        "controller.bench", "controller.sim", "controller.cli", "drivers", "simulators"),
    "controller.strategy": ("controller.service", "controller.mqtt", "controller.analytics", "controller.bench",
                            "controller.sim", "controller.cli", "drivers", "simulators"),
    "controller.bench": ("controller.service", "controller.mqtt", "controller.analytics", "controller.sim",
                         "controller.cli", "drivers", "simulators"),
    "controller.profiles": ("controller.service", "controller.mqtt", "controller.sim", "controller.cli"),
    "controller.scenario": ("controller.service", "controller.mqtt", "controller.sim", "controller.cli"),
    "controller.analytics": ("controller.service", "controller.mqtt", "controller.sim", "controller.cli", "drivers",
                             "simulators"),
    "controller.mqtt": ("controller.sim", "controller.cli", "drivers", "simulators"),
    "controller.service": ("controller.sim", "controller.cli", "simulators"),  # a simulated device is a port name
    # the reading of a journal's records, below the service and the analytics that both read them
    "controller.records": ("controller.service", "controller.analytics", "controller.mqtt", "controller.sim",
                           "controller.cli", "controller.strategy", "controller.bench", "drivers", "simulators"),
}


@pytest.mark.parametrize("package", sorted(ABOVE))
def test_no_layer_imports_what_acts_on_it(package: str) -> None:
    files = _package_files(package)
    assert all(path.exists() for path in files)
    found = [f"{path.relative_to(ROOT)}:{line}: imports {name}" for path in files
             for line, name in _imports(path) if _inside(name, ABOVE[package])]
    assert not found


def test_the_check_sees_a_lazy_forbidden_import(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("import asyncio\n\ndef later() -> None:\n    from controller import sim\n")
    assert [name for _, name in _imports(sample)] == ["asyncio", "controller", "controller.sim"]


# ------------------------------------------------------------------ the engine's closed surface

ENGINE_NAMES = {"table", "engine", "_engine", "t"}  # what the code outside calls an engine it holds
OWNER_OPERATIONS = {"handle", "narrate"}  # an owner feeds its engine; a silent replay is then narrated


def _class_members(path: Path, name: str) -> set[str]:
    """The attributes and methods a class defines (``self.x = ...`` anywhere in it counts)."""
    cls = next(node for node in ast.parse(path.read_text()).body
               if isinstance(node, ast.ClassDef) and node.name == name)
    members = {node.name for node in cls.body if isinstance(node, ast.FunctionDef)}
    for node in ast.walk(cls):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self" \
                and isinstance(node.ctx, ast.Store):
            members.add(node.attr)
    return members


def _engine_private() -> set[str]:
    game = ROOT / "controller" / "game"
    return _class_members(game / "table.py", "Table") - _class_members(game / "view.py", "TableView") - OWNER_OPERATIONS


def _engine_reads(path: Path, private: set[str]) -> list[str]:
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.Attribute) or node.attr not in private:
            continue
        held = node.value
        name = held.id if isinstance(held, ast.Name) else held.attr if isinstance(held, ast.Attribute) else None
        if name in ENGINE_NAMES:
            found.append(f"{path.name}:{node.lineno}: reads the engine's {node.attr}")
    return found


def test_nothing_outside_the_engine_reads_its_private_state() -> None:
    private = _engine_private()
    assert {"awaiting_peek", "deal_plan", "hole_at", "_dealer_hand", "insurance_open"} <= private
    assert not private & {"phase", "awaiting", "legal_actions", "snapshot", "hole_position"}
    outside = [p for package in ("controller", "benchmarks") for p in _files(package)
               if not p.is_relative_to(ROOT / "controller" / "game")]
    assert not [line for path in outside for line in _engine_reads(path, private)]


def test_the_check_sees_a_private_read(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("def f(core):\n    return core.table.awaiting_peek or core.table.phase\n")
    assert _engine_reads(sample, _engine_private()) == ["sample.py:2: reads the engine's awaiting_peek"]
