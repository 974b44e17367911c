"""The build's two jobs beyond pyproject.toml: compile the round engine with mypyc, ship the profiles.

* ``pip install .`` (and the wheel it builds) compiles the modules of every round (:data:`COMPILED`: the
  round engine, the croupier, the cards, hands, rules and legality it reads, the bench's basic-strategy
  players) with mypyc, as black and mypy ship theirs: the same sources, several times faster. They are
  one group, so their calls to each other are native: a shim per module beside its source and the
  group's shared library ``controller_engine__mypyc`` at the top of the tree. The extensions are
  optional: where no C compiler exists the build goes on and the package runs the pure sources
  (``controller/__init__.py`` picks whichever is there, all of them compiled or none).
  ``TABLECTL_PURE_BUILD=1`` skips them (the Makefile's editable install does, then compiles in place
  itself with ``setup.py build_ext --inplace`` and ``TABLECTL_REQUIRE_COMPILED=1``, so a developer's edit
  is never hidden behind an older build and a failed compile stops the build).
* An in-place build (``pip install -e .``, ``setup.py build_ext --inplace``) that produced the whole group
  writes the build stamp ``controller/game/.compiled`` (:class:`BuildEngine`): a checkout's compiled set
  is used only when that stamp is newer than every source it was built from (``controller/__init__.py``),
  and without it an editable install's own fresh build was taken for a stale one, with a warning on every
  command and the pure engine. A build that left a module out (no C compiler) writes none.
* The shipped profiles stay where DESIGN puts them, ``config/profiles/``, and are installed as the
  package ``controller.shipped_profiles``, so a pip-installed ``tablectl`` knows them by name.
"""

from __future__ import annotations

import os
from pathlib import Path

from setuptools import find_namespace_packages, setup
from setuptools.command.build_ext import build_ext
from setuptools.extension import Extension

#: the build stamp of a checkout's in-place build (controller/__init__.py and the Makefile read it)
STAMP = Path("controller") / "game" / ".compiled"

#: the modules compiled, one group: the hot path of every round (controller.COMPILED_MODULES names the same
#: modules and the Makefile's ENGINE_SOURCES the same files; their other imports stay pure Python: the events and
#: effects, which take whatever a journal or a device sends, money, the EV tables)
COMPILED = [
    "controller/game/cards.py",
    "controller/game/hand.py",
    "controller/game/rules.py",
    "controller/game/legality.py",
    "controller/game/table.py",
    "controller/game/deal.py",
    "controller/game/errors.py",
    "controller/game/transitions.py",
    "controller/game/alarms.py",
    "controller/game/pit.py",
    "controller/game/shoe.py",
    "controller/game/bets.py",
    "controller/game/decisions.py",
    "controller/game/dealer.py",
    "controller/game/settlement.py",
    "controller/game/public_view.py",
    "controller/game/croupier.py",
    "controller/strategy/chart.py",
    "controller/strategy/player.py",
]


def _compiled_engine() -> list[Extension]:
    if os.environ.get("TABLECTL_PURE_BUILD") == "1":
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:  # the build requirement is missing: a pure package still works
        return []
    # "--config-file=": not pyproject's [tool.mypy] (its pydantic plugin is not a build requirement; the modules
    # import only controller.game, controller.contract, cardnotation and controller.strategy). group_name: the
    # shared library's name (mypyc's default is a hash of the module names)
    extensions: list[Extension] = mypycify(["--config-file=", *COMPILED], opt_level="3",
                                           group_name="controller_engine")
    required = os.environ.get("TABLECTL_REQUIRE_COMPILED") == "1"  # the Makefile's build: a failure is an error
    for extension in extensions:
        extension.optional = not required  # no C compiler: a warning and the pure source, not a failed install
    return extensions


class BuildEngine(build_ext):
    """``build_ext`` that stamps an in-place build of the whole group (see the module docstring)."""

    def run(self) -> None:
        super().run()
        if not self.inplace or not self.extensions:  # an editable install builds in place too (editable_mode)
            return
        built = [Path(self.get_ext_fullpath(ext.name)) for ext in self.extensions]  # in place: beside the sources
        stamp = Path(self.get_finalized_command("build_py").get_package_dir("controller.game")) / STAMP.name
        if all(p.exists() for p in built) and stamp.parent.is_dir():
            stamp.touch()  # after every module was copied in: newer than the sources it was built from


if __name__ == "__main__":  # as pip's build backend runs it; a test imports BuildEngine
    setup(
        packages=[*find_namespace_packages(include=["cardnotation*", "controller*", "drivers*", "simulators*"]),
                  "controller.shipped_profiles"],
        package_dir={"controller.shipped_profiles": "config/profiles"},  # its files: pyproject's package-data
        ext_modules=_compiled_engine(),
        cmdclass={"build_ext": BuildEngine},
    )
