"""The build's two jobs beyond pyproject.toml: compile the round engine with mypyc, ship the profiles.

* ``pip install .`` (and the wheel it builds) compiles ``controller/game/table.py`` with mypyc, as black
  and mypy ship theirs: the same source, about three times faster. The extension is optional: where no
  C compiler exists the build goes on and the package runs the pure source (``controller/__init__.py``
  picks whichever is there). ``TABLECTL_PURE_BUILD=1`` skips it (the Makefile's editable install does,
  then compiles in place itself with ``setup.py build_ext --inplace`` and ``TABLECTL_REQUIRE_COMPILED=1``,
  so a developer's edit is never hidden behind an older build and a failed compile stops the build).
* The shipped profiles stay where DESIGN puts them, ``config/profiles/``, and are installed as the
  package ``controller.shipped_profiles``, so a pip-installed ``tablectl`` knows them by name.
"""

from __future__ import annotations

import os

from setuptools import find_namespace_packages, setup
from setuptools.extension import Extension

#: the modules compiled: the round engine, the hot path of every round (its imports stay pure Python)
COMPILED = ["controller/game/table.py"]


def _compiled_engine() -> list[Extension]:
    if os.environ.get("TABLECTL_PURE_BUILD") == "1":
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:  # the build requirement is missing: a pure package still works
        return []
    # "--config-file=": not pyproject's [tool.mypy] (its pydantic plugin is not a build requirement; the
    # engine imports only controller.game)
    extensions: list[Extension] = mypycify(["--config-file=", *COMPILED], opt_level="3")
    required = os.environ.get("TABLECTL_REQUIRE_COMPILED") == "1"  # the Makefile's build: a failure is an error
    for extension in extensions:
        extension.optional = not required  # no C compiler: a warning and the pure source, not a failed install
    return extensions


setup(
    packages=[*find_namespace_packages(include=["cardnotation*", "controller*", "drivers*", "simulators*"]),
              "controller.shipped_profiles"],
    package_dir={"controller.shipped_profiles": "config/profiles"},  # its files: pyproject's package-data
    ext_modules=_compiled_engine(),
)
