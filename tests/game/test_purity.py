"""controller/game is the pure core (DESIGN.md "Layers"): no I/O, no clock, no randomness, no validation libraries.

Checked on the source: every module's imports, and the few builtins and datetime calls that would read the
world. (datetime is allowed for formatting an epoch that comes in on an event, never for reading the clock.)
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

GAME = Path(__file__).resolve().parents[2] / "controller" / "game"
MODULES = sorted(GAME.glob("*.py"))

FORBIDDEN = {
    "asyncio", "time", "random", "secrets", "socket", "os", "io", "threading", "multiprocessing", "subprocess",
    "pathlib", "pydantic", "sqlite3", "logging", "shutil", "tempfile", "uuid", "select", "signal", "urllib", "http",
    "serial", "usb", "aiomqtt", "amqtt", "tomllib", "json",
}
ALLOWED_INTERNAL = ("controller.game", "controller.contract")  # the engine and the vocabulary (a leaf)
CLOCK_CALLS = {"now", "utcnow", "today", "time", "monotonic", "perf_counter"}
IMPURE_BUILTINS = {"open", "input", "print", "exec", "eval", "__import__"}


def _imports(tree: ast.AST) -> list[tuple[str, int]]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                out.append((f"controller.game.{node.module or ''}", node.lineno))
            else:
                out.append((node.module or "", node.lineno))
    return out


def test_there_are_modules() -> None:
    assert {p.stem for p in MODULES} >= {"cards", "money", "rules", "hand", "events", "effects", "table"}


@pytest.mark.parametrize("path", MODULES, ids=[p.stem for p in MODULES])
def test_module_imports_nothing_impure(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for name, line in _imports(tree):
        top = name.split(".")[0]
        assert top not in FORBIDDEN, f"{path.name}:{line} imports {name}"
        if top == "controller":
            assert name.startswith(ALLOWED_INTERNAL), f"{path.name}:{line} imports the shell ({name})"


@pytest.mark.parametrize("path", MODULES, ids=[p.stem for p in MODULES])
def test_module_reads_no_clock_and_does_no_io(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name):
            assert func.id not in IMPURE_BUILTINS, f"{path.name}:{node.lineno} calls {func.id}()"
        elif isinstance(func, ast.Attribute) and func.attr in CLOCK_CALLS:
            raise AssertionError(f"{path.name}:{node.lineno} calls .{func.attr}() (a clock read)")
        elif isinstance(func, ast.Attribute) and func.attr == "fromtimestamp":
            # formatting an epoch passed in: the timestamp must not be read from the clock here
            assert node.args, f"{path.name}:{node.lineno} fromtimestamp without an argument"


def test_the_checker_catches_an_impure_module() -> None:
    bad = ast.parse("import time\nfrom datetime import datetime\nx = datetime.now()\nopen('f')\n")
    names = {n.split(".")[0] for n, _ in _imports(bad)}
    assert "time" in names & FORBIDDEN
    calls = [n for n in ast.walk(bad) if isinstance(n, ast.Call)]
    assert any(isinstance(c.func, ast.Attribute) and c.func.attr in CLOCK_CALLS for c in calls)
    assert any(isinstance(c.func, ast.Name) and c.func.id in IMPURE_BUILTINS for c in calls)
