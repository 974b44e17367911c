"""DESIGN's layers hold in the imports: a test that fails on a forbidden import (read from the source, not run).

* ``cardnotation`` is a leaf: it imports nothing of the project.
* ``drivers/`` and ``simulators/`` import nothing of ``controller/`` (bytes and devices, no blackjack rules).

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


def test_the_check_sees_a_lazy_forbidden_import(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("import asyncio\n\ndef later() -> None:\n    from controller.service.core import TableCore\n")
    assert [name for _, name in _imports(sample)] == ["asyncio", "controller.service.core"]
