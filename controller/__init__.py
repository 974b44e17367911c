"""Blackjack table controller: the pure game core, the table service and its command line.

The round engine (``controller/game/table.py``) may also be present compiled by mypyc
(``make setup`` builds it; several times faster, same source, same results). Python would
import a compiled module even when its source has changed since, so this package checks
first: in a checkout, a compiled engine built before the last change to ``controller/game`` (its
build stamp ``controller/game/.compiled`` older than a source) is set aside for the pure source,
with a warning; an installed package's engine (``pip install .`` compiles it, setup.py) was built
from the very source beside it and is used as is. ``TABLECTL_PURE_ENGINE=1`` always selects the
pure source.
"""

from __future__ import annotations


def _prefer_current_engine() -> None:
    import importlib.util
    import os
    import sys
    import warnings
    from pathlib import Path

    game = Path(__file__).resolve().parent / "game"
    compiled = list(game.glob("table.*.so"))
    if not compiled or "controller.game.table" in sys.modules:
        return
    forced = os.environ.get("TABLECTL_PURE_ENGINE") == "1"
    stamp = game / ".compiled"  # touched by the Makefile after each build (.so times are copied, not new)
    if not forced and not stamp.exists() and not (game.parent.parent / "pyproject.toml").exists():
        return  # an installed package (pip built its engine with the source beside it): always current
    newest_source = max(p.stat().st_mtime for p in game.glob("*.py") if p.name != "__init__.py")
    if not forced and stamp.exists() and stamp.stat().st_mtime >= newest_source:
        return
    if not forced:
        warnings.warn(
            "the compiled round engine is older than controller/game: using the pure Python engine "
            "(run `make setup` to rebuild it)",
            stacklevel=2,
        )
    spec = importlib.util.spec_from_file_location("controller.game.table", game / "table.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["controller.game.table"] = module
    spec.loader.exec_module(module)


_prefer_current_engine()
