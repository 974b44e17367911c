"""controller/ratings is pure like the game core (DESIGN "Rated play", functional core): no I/O, no clock.

The checks of tests/game/test_purity.py, on the ratings' modules; the ratings may read the game core and the
strategy's arithmetic, never the shell (service, MQTT, CLI).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.game.test_purity import CLOCK_CALLS, FORBIDDEN, IMPURE_BUILTINS, _imports

RATINGS = Path(__file__).resolve().parents[2] / "controller" / "ratings"
MODULES = sorted(RATINGS.glob("*.py"))
ALLOWED = ("controller.game", "controller.strategy", "controller.ratings")


def test_there_are_modules() -> None:
    assert {p.stem for p in MODULES} >= {"book", "costs", "rating"}


@pytest.mark.parametrize("path", MODULES, ids=[p.stem for p in MODULES])
def test_module_imports_nothing_impure(path: Path) -> None:
    for name, line in _imports(ast.parse(path.read_text(encoding="utf-8"))):
        assert name.split(".")[0] not in FORBIDDEN, f"{path.name}:{line} imports {name}"
        if name.startswith("controller"):
            assert name.startswith(ALLOWED), f"{path.name}:{line} imports the shell ({name})"


@pytest.mark.parametrize("path", MODULES, ids=[p.stem for p in MODULES])
def test_module_reads_no_clock_and_does_no_io(path: Path) -> None:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name):
                assert func.id not in IMPURE_BUILTINS, f"{path.name}:{node.lineno} calls {func.id}()"
            elif isinstance(func, ast.Attribute):
                assert func.attr not in CLOCK_CALLS, f"{path.name}:{node.lineno} calls .{func.attr}()"
                assert func.attr != "fromtimestamp" or node.args, f"{path.name}:{node.lineno} reads the clock"
