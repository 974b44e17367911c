"""Blackjack table controller: the pure game core, the table service and its command line.

The modules of every round (:data:`COMPILED_MODULES`: the round engine, the croupier, the cards,
hands, rules and legality it reads, and the bench's basic-strategy players) may also be present
compiled by mypyc (``make setup`` builds them; several times faster, same sources, same results),
as one group: a shim per module beside its source and one shared library, :data:`ENGINE_LIBRARY`,
at the top of the tree (``pip install .`` puts it in ``site-packages``). Python would import a
compiled module even when its source has changed since, so this package checks first: in a
checkout, a compiled set built before the last change to one of the sources it was built from
(:data:`BUILD_INPUTS`; its build stamp ``controller/game/.compiled`` older than one of them), or
an incomplete one, is set aside as a whole for the pure sources, with a warning, so compiled and
pure modules never mix; an installed package's set (``pip install .`` compiles it, setup.py) was
built from the very sources beside it and is used as is. ``TABLECTL_PURE_ENGINE=1`` always selects
the pure sources of all of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence
    from importlib.machinery import ModuleSpec
    from pathlib import Path
    from types import ModuleType

#: The modules mypyc compiles, as one group (setup.py's ``COMPILED`` names the same files; tests/test_package.py
#: checks that they agree).
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
    "controller.strategy.chart",
    "controller.strategy.player",
)

#: The sources a build depends on, as patterns from the checkout's top: the compiled modules and every module whose
#: types they read (the Makefile's ``ENGINE_INPUTS``, the same patterns). A build older than any of them is stale.
BUILD_INPUTS = ("controller/game/*.py", "controller/strategy/*.py", "controller/contract/*.py", "cardnotation/*.py")

#: The group's shared library (setup.py's ``group_name`` with mypyc's suffix): a top-level module,
#: as mypyc lays out a group of several modules.
ENGINE_LIBRARY = "controller_engine__mypyc"


class _PureSources:
    """Imports the compiled modules from their ``.py`` sources (ahead of the finder that would take the ``.so``)."""

    def __init__(self, sources: dict[str, Path]) -> None:
        self.sources = sources

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        import importlib.util

        source = self.sources.get(fullname)
        return None if source is None else importlib.util.spec_from_file_location(fullname, source)


def _prefer_current_engine() -> None:
    import importlib.machinery
    import importlib.util
    import os
    import sys
    import warnings
    from pathlib import Path

    package = Path(__file__).resolve().parent
    root = package.parent
    sources = {name: root / (name.replace(".", "/") + ".py") for name in COMPILED_MODULES}
    shims = [s for s in sources.values() if any(s.parent.glob(s.stem + ".*.so"))]
    if not shims or any(name in sys.modules for name in COMPILED_MODULES):
        return
    forced = os.environ.get("TABLECTL_PURE_ENGINE") == "1"
    stamp = package / "game" / ".compiled"  # touched by the Makefile after each build (.so times are copied, not new)
    installed = not stamp.exists() and not (root / "pyproject.toml").exists()
    library = next((p for p in (root / (ENGINE_LIBRARY + s) for s in importlib.machinery.EXTENSION_SUFFIXES)
                    if p.exists()), None)
    if not forced and installed and len(shims) == len(sources) and library is not None:
        return  # an installed package (pip built the set with the sources beside it): current
    # a checkout: its own build, complete (a shim for every module, the shared library at its top) and newer than
    # every source, or none of it; an installed set pip could not finish building (each part is optional): none
    newest_source = max(p.stat().st_mtime for pattern in BUILD_INPUTS for p in root.glob(pattern))
    current = (stamp.exists() and stamp.stat().st_mtime >= newest_source and len(shims) == len(sources)
               and library is not None)
    if not forced and current and library is not None:
        # the shims import the library by name; an editable install does not put the checkout's top on sys.path
        spec = importlib.util.spec_from_file_location(ENGINE_LIBRARY, library)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[ENGINE_LIBRARY] = module
        spec.loader.exec_module(module)
        return
    if not forced:
        rebuild = ("reinstall the package with a C compiler" if installed else "run `make setup` to rebuild them")
        warnings.warn(
            "the compiled round engine is older than its sources or incomplete: using the pure Python modules "
            f"{', '.join(COMPILED_MODULES)} ({rebuild})",
            stacklevel=2,
        )
    sys.meta_path.insert(0, _PureSources(sources))


_prefer_current_engine()
