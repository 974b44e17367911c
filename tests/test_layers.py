"""DESIGN's layers hold in the imports: a test that fails on a forbidden import (read from the source, not run).

* ``cardnotation`` is a leaf: it imports nothing of the project.
* ``drivers/`` and ``simulators/`` import nothing of ``controller/`` (bytes and devices, no blackjack rules);
  ``drivers/`` nothing of ``simulators/`` (they register themselves with the drivers).
* controller's packages stand in layers (:data:`LAYERS`, docs/architecture.md): each imports only the layers below
  it, and no two packages import each other, directly or through others, lazy imports included.

(``controller/game/`` being pure is tests/game/test_purity.py.)
"""

from __future__ import annotations

import ast
import functools
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


def test_the_engine_imports_only_itself_the_vocabulary_and_the_card_notation() -> None:
    allowed = ("controller.game", "controller.contract", "cardnotation")
    found = [f"{path.relative_to(ROOT)}:{line}: imports {name}" for path in _package_files("controller.game")
             for line, name in _imports(path)
             if _top(name) in PROJECT and not _inside(name, allowed)]
    assert not found


# ------------------------------------------------------------------ controller's layers (docs/architecture.md)

#: controller's packages and top-level modules from the bottom up: each imports only the layers below its own
#: (lazy imports included); the domain libraries of one layer may import each other, the others may not. The
#: table PC's shell never needs the layers above the service; the engine, the strategy and the bench know no
#: devices and no broker.
LAYERS: tuple[tuple[str, ...], ...] = (
    # leaves: the vocabulary (phases, alarms, roles, topics); bad input; the stop signals every long runner takes
    ("controller.contract", "controller.errors", "controller.stop_signals", "controller.cancelling"),
    ("controller.game",),  # the pure round engine
    ("controller.strategy", "controller.profiles", "controller.citations", "controller.nesting",  # domain libraries
     "controller.records", "controller.scenario", "controller.bench", "controller.analytics", "controller.ratings",
     "controller.private_files", "controller.kept_figures", "controller.bounds_table", "controller.conformance",
     "controller.conformance_html"),
    ("controller.journal",),  # the chained journal: chain, schemas, file, writer, verify, archive, witnesses
    ("controller.mqtt",),  # broker client, publisher, broker configurations, the broker witness
    ("controller.floor",),  # the floor's NATS cluster, the demo's embedded node of it
    ("controller.selfcheck", "controller.recorder"),  # the program check; the central recorder
    ("controller.service",),  # the table service
    ("controller.dashboard", "controller.reports"),  # the dashboard's HTTP server; recall and ratings reports
    ("controller.sim",),  # demo, soak, crew: a simulated pit
    ("controller.cli",),  # argument parsing only
)
#: the layers whose packages may import each other (a circle among them is still refused, below)
PEERS = {2}
#: within the domain libraries, what each must not import: the engine's players, the bench and the reading of the
#: records stay below the analytics that read them all
BELOW_PEERS = {
    "controller.strategy": ("controller.analytics", "controller.bench"),
    "controller.bench": ("controller.analytics",),
    "controller.records": ("controller.analytics", "controller.strategy", "controller.bench"),
}
#: the device packages and the lowest layer that may import each: the service drives the devices, the
#: simulated pit and the command line also start simulated ones (a simulated device is a port name below them)
DEVICES = {"drivers": 7, "simulators": 9}

_LAYER = {unit: n for n, units in enumerate(LAYERS) for unit in units}


def _number(index: int | None) -> str:
    """A layer's number as docs/architecture.md counts them (1: cardnotation, 2: the first of :data:`LAYERS`)."""
    return "none" if index is None else str(index + 2)


def _unit(name: str) -> str | None:
    """The package or top-level module of controller's that an imported name belongs to (None: outside, or
    controller's own ``__init__``, which every import of the package runs anyway)."""
    parts = name.split(".")
    if parts[0] != "controller" or len(parts) < 2:
        return None
    unit = ".".join(parts[:2])
    here = ROOT / "controller"
    known = unit in _LAYER or (here / parts[1]).is_dir() or (here / f"{parts[1]}.py").exists()
    return unit if known else None


def _units() -> list[str]:
    """controller's packages and top-level modules, as they are on disk (a data directory holds no module)."""
    here = ROOT / "controller"
    packages = {f"controller.{p.name}" for p in here.iterdir() if p.is_dir() and any(p.rglob("*.py"))}
    modules = {f"controller.{p.stem}" for p in here.glob("*.py") if p.stem != "__init__"}
    return sorted(packages | modules)


def _existing(units: tuple[str, ...]) -> list[str]:
    return [u for u in units if u in _units()]


@functools.cache
def _graph() -> dict[str, dict[str, list[str]]]:
    """unit -> the units it imports -> where (``path:line``)."""
    graph: dict[str, dict[str, list[str]]] = {}
    for unit in _units():
        edges = graph.setdefault(unit, {})
        for path in _package_files(unit):
            for line, name in _imports(path):
                target = _unit(name)
                if target is not None and target != unit:
                    edges.setdefault(target, []).append(f"{path.relative_to(ROOT)}:{line}")
    return graph


def test_every_package_has_a_layer() -> None:
    """A new package of controller's takes its place in :data:`LAYERS` (and docs/architecture.md)."""
    assert not [unit for unit in _units() if unit not in _LAYER]


@pytest.mark.parametrize("layer", range(len(LAYERS)), ids=[" ".join(u.split(".")[1] for u in units)
                                                             for units in LAYERS])
def test_a_layer_imports_only_the_layers_below(layer: int) -> None:
    graph = _graph()
    found = [f"{where}: {unit} (layer {_number(layer)}) imports {target} (layer {_number(_LAYER.get(target))})"
             for unit in _existing(LAYERS[layer]) for target, wheres in sorted(graph[unit].items())
             if not (_LAYER.get(target, len(LAYERS)) < layer or (layer in PEERS and _LAYER.get(target) == layer))
             for where in wheres]
    assert not found


@pytest.mark.parametrize("unit", sorted(BELOW_PEERS))
def test_the_domain_libraries_keep_their_order(unit: str) -> None:
    found = [f"{where}: {unit} imports {target}" for target, wheres in sorted(_graph()[unit].items())
             if target in BELOW_PEERS[unit] for where in wheres]
    assert not found


@pytest.mark.parametrize("device", sorted(DEVICES))
def test_only_the_service_and_above_import_the_devices(device: str) -> None:
    below = [unit for units in LAYERS[:DEVICES[device]] for unit in _existing(units)]
    found = [f"{path.relative_to(ROOT)}:{line}: {unit} imports {name}" for unit in below
             for path in _package_files(unit) for line, name in _imports(path) if _top(name) == device]
    assert not found


def _circles(graph: dict[str, dict[str, list[str]]]) -> list[list[str]]:
    """The strongly connected groups of more than one unit (Tarjan's algorithm), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(unit: str) -> None:
        index[unit] = low[unit] = len(index)
        stack.append(unit)
        on_stack.add(unit)
        for target in graph.get(unit, {}):
            if target not in index:
                visit(target)
                low[unit] = min(low[unit], low[target])
            elif target in on_stack:
                low[unit] = min(low[unit], index[target])
        if low[unit] == index[unit]:
            group: list[str] = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == unit:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for unit in sorted(graph):
        if unit not in index:
            visit(unit)
    return sorted(found)


def test_no_import_circle_between_controllers_packages() -> None:
    """No two packages of controller's import each other, directly or through others, lazy imports included."""
    graph = _graph()
    circles = [" <-> ".join(group) + ": " + "; ".join(
        f"{unit} -> {target} ({graph[unit][target][0]})" for unit in group for target in group
        if target in graph[unit]) for group in _circles(graph)]
    assert not circles


def test_the_circle_check_sees_a_circle_through_a_third_package() -> None:
    graph = {"a": {"b": ["x"]}, "b": {"c": ["y"]}, "c": {"a": ["z"]}, "d": {"a": ["w"]}}
    assert _circles(graph) == [["a", "b", "c"]]
    assert _circles({"a": {"b": ["x"]}, "b": {}}) == []


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


#: #34's limits: a module a newcomer can read, a class that holds one job
MODULE_LINES, CLASS_LINES = 800, 600


def test_no_module_of_the_product_is_over_800_lines_and_no_class_over_600() -> None:
    found = []
    for package in PROJECT:
        for path in _files(package):
            text = path.read_text()
            if (lines := len(text.splitlines())) > MODULE_LINES:
                found.append(f"{path.relative_to(ROOT)}: {lines} lines")
            found += [f"{path.relative_to(ROOT)}:{node.lineno}: class {node.name}, {node.end_lineno - node.lineno + 1}"
                      " lines" for node in ast.walk(ast.parse(text)) if isinstance(node, ast.ClassDef)
                      and node.end_lineno is not None and node.end_lineno - node.lineno + 1 > CLASS_LINES]
    assert not found
