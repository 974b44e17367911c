"""The package as a table PC or a lab has it: a wheel built from this checkout, installed (not editable) into a
fresh venv of its own, with its dependencies at the versions CI tested (requirements.lock).

``installed_package`` (session scope; put the tests that use it in the xdist group ``installed-package`` so one
worker builds it): the wheel, the venv, its ``tablectl`` and its site-packages. The wheel is the pure build
(``TABLECTL_PURE_BUILD=1``, seconds instead of minutes; tests/test_package.py checks the compiled one): what the
tests here check (package data, RECORD, the program's hashes) is the same for both. A test that changes an
installed file puts it back (:func:`restored`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class InstalledPackage:
    wheel: Path
    venv: Path
    site_packages: Path

    @property
    def tablectl(self) -> Path:
        return self.venv / "bin" / "tablectl"

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    def run(self, *args: str, cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """``tablectl ARGS`` of the installed package, outside the checkout and without its PYTHONPATH."""
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        return subprocess.run([str(self.tablectl), *args], capture_output=True, text=True, timeout=timeout,
                              cwd=cwd or self.venv, env=env)


def _run(cmd: list[str], **kw: object) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900, **kw)  # type: ignore[call-overload]
    assert done.returncode == 0, f"{cmd}: {done.stderr[-3000:]}"


@pytest.fixture(scope="session")
def installed_package(tmp_path_factory: pytest.TempPathFactory) -> InstalledPackage:
    base = tmp_path_factory.mktemp("installed")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"TABLECTL_PURE_BUILD": "1",
                                                                        "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    source = base / "source"  # a copy: pip's in-tree build would leave build/ and an .egg-info in the checkout
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "*.egg-info", "__pycache__", "node_modules", "*.so", ".*_cache", ".hypothesis",
        ".compiled", "_compiled", "state"))
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(base / "dist"), str(source)], env=env)
    [wheel] = (base / "dist").glob("blackjack_table_controller-*.whl")
    venv = base / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], env=env)
    _run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "-c", str(ROOT / "requirements.lock"),
          str(wheel)], env=env, cwd=base)
    [site] = (venv / "lib").glob("python3*/site-packages")
    return InstalledPackage(wheel, venv, site)


@contextmanager
def restored(path: Path) -> Iterator[None]:
    """Put ``path`` back as it was (its bytes, or absent) after the block."""
    before = path.read_bytes() if path.exists() else None
    try:
        yield
    finally:
        if before is None:
            path.unlink(missing_ok=True)
        else:
            path.write_bytes(before)
