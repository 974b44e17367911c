"""``pip install .`` builds a wheel a table PC can use: the compiled engine, the dashboard and the profiles in
it, the demo's broker only as an extra. Built the way pip builds it (isolated, from this checkout's files)."""

from __future__ import annotations

import ast
import email
import re
import subprocess
import sys
import zipfile
from fnmatch import fnmatch
from pathlib import Path

import controller

ROOT = Path(__file__).resolve().parent.parent


def _setup_compiled() -> list[str]:
    """setup.py's COMPILED, read from its source (setup.py runs setup() when imported)."""
    tree = ast.parse((ROOT / "setup.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "COMPILED" for t in node.targets):
            value: list[str] = ast.literal_eval(node.value)
            return value
    raise AssertionError("setup.py has no COMPILED")


def test_setup_the_makefile_and_the_package_name_the_same_compiled_modules() -> None:
    """setup.py compiles COMPILED; controller.COMPILED_MODULES sets the same modules aside when their build is stale,
    judged on controller.BUILD_INPUTS, the patterns the Makefile's build depends on (ENGINE_INPUTS)."""
    compiled = _setup_compiled()
    assert [p.removesuffix(".py").replace("/", ".") for p in compiled] == list(controller.COMPILED_MODULES)
    assert all(any(fnmatch(p, pattern) for pattern in controller.BUILD_INPUTS) for p in compiled)
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    inputs = re.search(r"^ENGINE_INPUTS := \$\(wildcard ([^)]*)\)$", makefile, re.MULTILINE)
    assert inputs is not None and inputs.group(1).split() == list(controller.BUILD_INPUTS)
    assert re.search(r"^controller/game/\.compiled: .*\$\(ENGINE_INPUTS\)$", makefile, re.MULTILINE)
    setup = (ROOT / "setup.py").read_text(encoding="utf-8")
    assert f'group_name="{controller.ENGINE_LIBRARY.removesuffix("__mypyc")}"' in setup
    clean = next(line for line in makefile.splitlines() if ".compiled" in line and line.lstrip().startswith("rm"))
    assert f"{controller.ENGINE_LIBRARY}*.so" in clean and "controller/strategy/*.so" in clean


def test_the_wheel_holds_the_compiled_engine_the_dashboard_and_the_profiles(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    [wheel] = tmp_path.glob("blackjack_table_controller-*.whl")
    assert not wheel.name.endswith("-none-any.whl"), f"a platform wheel (compiled), not {wheel.name}"
    names = set(zipfile.ZipFile(wheel).namelist())
    for module in controller.COMPILED_MODULES:
        path = module.replace(".", "/")
        assert any(n.startswith(path + ".") and n.endswith(".so") for n in names), f"{module} compiled"
        assert path + ".py" in names, f"the pure source of {module} beside it (the fallback)"
    assert any(n.startswith(controller.ENGINE_LIBRARY + ".") and n.endswith(".so") for n in names), "their library"
    assert {"controller/web/index.html", "controller/web/app.js", "controller/web/analytics.js",
            "controller/web/dom.js", "controller/web/vendor/mqtt.min.js", "controller/web/vendor/uPlot.iife.min.js",
            "controller/web/vendor/uPlot.min.css"} <= names
    shipped = {Path(n).stem for n in names if n.startswith("controller/shipped_profiles/") and n.endswith(".toml")}
    assert shipped == {p.stem for p in (ROOT / "config" / "profiles").glob("*.toml")}
    [meta_name] = [n for n in names if n.endswith(".dist-info/METADATA")]
    meta = email.message_from_bytes(zipfile.ZipFile(wheel).read(meta_name))
    requires = meta.get_all("Requires-Dist") or []
    assert any(r.startswith("paho-mqtt") for r in requires), requires
    amqtt = [r for r in requires if r.startswith("amqtt")]
    assert amqtt and all('extra == "demo"' in r for r in amqtt), "the embedded broker only with [demo]"
