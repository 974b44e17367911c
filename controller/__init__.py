"""Blackjack table controller: the pure game core, the table service and its command line.

The modules of every round (:data:`COMPILED_MODULES`: the round engine, the croupier, the cards,
hands, rules and legality it reads, and the bench's basic-strategy players) may also be present
compiled by mypyc (``make setup`` builds them; several times faster, same sources, same results),
as one group in a folder of their own, :data:`BUILD_DIR` (``controller/_compiled/``: the group's
shared library :data:`ENGINE_LIBRARY` and a shim per module, ``game/table.*.so`` ...), never beside
the sources, so no import takes a compiled module by accident. Which engine runs is chosen here,
once, for all of them (:func:`choose_engine`; compiled and pure modules never mix):

* ``TABLECTL_PURE_ENGINE=1``: the pure sources;
* an installed package (``pip install .`` compiles the group, setup.py): its build, when every part
  of it was built; else the pure sources, with a warning (each part of the build is optional);
* a checkout: its build when complete and its stamp ``controller/_compiled/.built`` is newer than
  every source it was built from (:data:`BUILD_INPUTS`); else the pure sources, with a warning.

The choice takes effect through the packages' ``__path__`` (the import system's documented way to
say where a package's modules are): the compiled engine chosen, :data:`BUILD_DIR` goes first on
this package's ``__path__``, so ``controller.game`` (a namespace package) finds its compiled modules
before its sources, and :mod:`controller.strategy` puts its own folder of them first on its
``__path__`` (:func:`compiled_portion`). The pure engine chosen, the build folder is never searched.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

#: The modules mypyc compiles, as one group: the one list of them (setup.py reads it from this file's source).
COMPILED_MODULES = (
    "controller.game.cards",
    "controller.game.hand",
    "controller.game.rules",
    "controller.game.legality",
    "controller.game.table",
    "controller.game.deal",
    "controller.game.errors",
    "controller.game.transitions",
    "controller.game.alarms",
    "controller.game.pit",
    "controller.game.shoe",
    "controller.game.bets",
    "controller.game.decisions",
    "controller.game.dealer",
    "controller.game.settlement",
    "controller.game.public_view",
    "controller.game.croupier",
    "controller.game.dealer_duty",
    "controller.strategy.chart",
    "controller.strategy.player",
)

#: The sources a build depends on, as patterns from the checkout's top: the compiled modules and every module whose
#: types they read (the Makefile's ``ENGINE_INPUTS``, the same patterns). A build older than any of them is stale.
BUILD_INPUTS = ("controller/game/*.py", "controller/strategy/*.py", "controller/contract/*.py", "cardnotation/*.py")

#: The group's shared library (setup.py's ``group_name`` with mypyc's suffix): a top-level module to the shims,
#: as mypyc lays out a group of several modules; its file is in the build folder (:func:`_load_library`).
ENGINE_LIBRARY = "controller_engine__mypyc"


#: Where the compiled group is built and looked for (setup.py's build_ext puts it there, in place or in a wheel).
BUILD_DIR_NAME = "_compiled"
#: The stamp of a checkout's build, in :data:`BUILD_DIR`: written once the whole group is in (setup.py).
BUILD_STAMP = ".built"


def _built(folder: Path, module: str) -> bool:
    """Whether ``module`` (a dotted name) has a compiled file for this interpreter under ``folder``."""
    import importlib.machinery

    path = folder.joinpath(*module.split("."))
    return any(path.with_name(path.name + suffix).exists() for suffix in importlib.machinery.EXTENSION_SUFFIXES)


def choose_engine(package: Path, environ: Mapping[str, str]) -> Path | None:
    """The folder of the compiled engine to use, or None for the pure sources (see the module docstring); warns
    when a build is there but cannot be used."""
    import warnings

    folder = package / BUILD_DIR_NAME
    beside = [m for m in COMPILED_MODULES if _built(package.parent, m)]
    if beside:  # Python imports a compiled module beside its source before the source, whatever is chosen here
        warnings.warn(f"compiled modules beside their sources, from an older build's layout: {', '.join(beside)} "
                      "(remove them: `make setup` or `make clean`)", stacklevel=3)
    shims = [m for m in COMPILED_MODULES if _built(folder, m.removeprefix("controller."))]
    library = _built(folder, ENGINE_LIBRARY)
    if environ.get("TABLECTL_PURE_ENGINE") == "1" or not (shims or library):
        return None
    complete = library and len(shims) == len(COMPILED_MODULES)
    stamp = folder / BUILD_STAMP
    installed = not stamp.exists() and not (package.parent / "pyproject.toml").exists()
    if installed and complete:
        return folder  # pip built the group with the sources beside it: current
    if not installed and complete:
        newest = max(p.stat().st_mtime for pattern in BUILD_INPUTS for p in package.parent.glob(pattern))
        if stamp.exists() and stamp.stat().st_mtime >= newest:
            return folder
    rebuild = "reinstall the package with a C compiler" if installed else "run `make setup` to rebuild them"
    warnings.warn(f"the compiled round engine is older than its sources or incomplete: using the pure Python "
                  f"modules {', '.join(COMPILED_MODULES)} ({rebuild})", stacklevel=3)
    return None


def _load_library(folder: Path) -> None:
    """Import the group's shared library by its name: the shims import it so, and it is not on ``sys.path``."""
    import importlib.machinery
    import importlib.util
    import sys

    path = next(p for p in (folder / (ENGINE_LIBRARY + s) for s in importlib.machinery.EXTENSION_SUFFIXES)
                if p.exists())
    spec = importlib.util.spec_from_file_location(ENGINE_LIBRARY, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[ENGINE_LIBRARY] = module
    spec.loader.exec_module(module)


def compiled_portion(package: str) -> list[str]:
    """The folder of ``package``'s compiled modules when the compiled engine was chosen, else nothing: a regular
    package holding some of :data:`COMPILED_MODULES` puts it first on its ``__path__``."""
    if ENGINE_DIR is None:
        return []
    folder = ENGINE_DIR.joinpath(*package.split(".")[1:])
    return [str(folder)] if folder.is_dir() else []


def _engine_dir() -> Path | None:
    import os
    from pathlib import Path

    folder = choose_engine(Path(__file__).resolve().parent, os.environ)
    if folder is not None:
        _load_library(folder)
        __path__.insert(0, str(folder))  # controller.game (a namespace package) finds its compiled modules first
    return folder


#: The compiled engine's folder when it was chosen, None when the pure sources run (read by
#: :func:`compiled_portion`).
ENGINE_DIR = _engine_dir()
