"""The build's two jobs beyond pyproject.toml: compile the round engine with mypyc, ship the profiles.

* ``pip install .`` (and the wheel it builds) compiles the modules of every round (``controller.COMPILED_MODULES``,
  the one list of them, read from ``controller/__init__.py``'s source: the round engine, the croupier, the cards,
  hands, rules and legality it reads, the bench's basic-strategy players) with mypyc, as black and mypy ship
  theirs: the same sources, several times faster. They are one group, so their calls to each other are native: a
  shim per module and the group's shared library ``controller_engine__mypyc``, all in their own folder
  ``controller/_compiled/`` (:class:`BuildEngine`: ``game/table.*.so`` ..., never beside the sources), where
  ``controller/__init__.py`` looks for them and chooses, all of them compiled or none. The extensions are
  optional: where no C compiler exists the build goes on and the package runs the pure sources.
  ``TABLECTL_PURE_BUILD=1`` skips them (the Makefile's editable install does, then compiles in place itself with
  ``setup.py build_ext --inplace`` and ``TABLECTL_REQUIRE_COMPILED=1``, so a developer's edit is never hidden
  behind an older build and a failed compile stops the build).
* An in-place build (``setup.py build_ext --inplace``, ``pip install -e .``) that produced the whole group writes
  the build stamp ``controller/_compiled/.built``: a checkout's build is used only when that stamp is newer than
  every source it was built from (``controller/__init__.py``). A build that left a module out (no C compiler)
  writes none.
* The shipped profiles stay where DESIGN puts them, ``config/profiles/``, and are installed as the
  package ``controller.shipped_profiles``, so a pip-installed ``tablectl`` knows them by name.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

from setuptools import find_namespace_packages, setup
from setuptools.command.build_ext import build_ext
from setuptools.extension import Extension

#: the folder of the compiled group under the package, and the stamp of a checkout's in-place build in it
#: (controller/__init__.py's BUILD_DIR_NAME and BUILD_STAMP; tests/test_package.py checks that they agree)
BUILD_DIR = Path("controller") / "_compiled"
STAMP = BUILD_DIR / ".built"


def _compiled_modules() -> list[str]:
    """``controller.COMPILED_MODULES``, read from the source (importing the package at build time would choose an
    engine)."""
    tree = ast.parse((Path(__file__).resolve().parent / "controller" / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "COMPILED_MODULES"
                                                for t in node.targets):
            return [str(name) for name in ast.literal_eval(node.value)]
    raise RuntimeError("controller/__init__.py names no COMPILED_MODULES")


#: the modules compiled, one group: the hot path of every round (their other imports stay pure Python: the events
#: and effects, which take whatever a journal or a device sends, money, the EV tables)
COMPILED = [module.replace(".", "/") + ".py" for module in _compiled_modules()]


def _in_build_dir(name: str) -> str:
    """An extension's name inside the build folder: ``controller.game.table`` -> ``controller._compiled.game.table``,
    the group's library -> ``controller._compiled.controller_engine__mypyc`` (its file only: each is imported under
    its own name, controller/__init__.py)."""
    prefix = ".".join(BUILD_DIR.parts) + "."
    if name.startswith(prefix):
        return name
    return prefix + name.removeprefix("controller.")


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
    """``build_ext`` that builds the group into ``controller/_compiled/`` and stamps an in-place build of the whole
    group (see the module docstring)."""

    def finalize_options(self) -> None:
        for extension in self.distribution.ext_modules or []:
            extension.name = _in_build_dir(extension.name)
        super().finalize_options()

    def run(self) -> None:
        if self.inplace:  # setuptools copies each built module to its package's folder, which it does not create
            build_py = self.get_finalized_command("build_py")
            for extension in self.extensions:
                Path(build_py.get_package_dir(extension.name.rpartition(".")[0])).mkdir(parents=True, exist_ok=True)
        super().run()
        if not self.inplace or not self.extensions:  # an editable install builds in place too (editable_mode)
            return
        built = [Path(self.get_ext_fullpath(ext.name)) for ext in self.extensions]  # in place: the build folder
        stamp = Path(self.get_finalized_command("build_py").get_package_dir("controller")) / STAMP.relative_to(
            "controller")
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
