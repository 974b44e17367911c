"""``pip install .`` builds a wheel a table PC can use: the compiled engine, the dashboard and the profiles in
it, the demo's broker only as an extra. Built the way pip builds it (isolated, from this checkout's files)."""

from __future__ import annotations

import email
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_wheel_holds_the_compiled_engine_the_dashboard_and_the_profiles(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    [wheel] = tmp_path.glob("blackjack_table_controller-*.whl")
    assert not wheel.name.endswith("-none-any.whl"), f"a platform wheel (compiled), not {wheel.name}"
    names = set(zipfile.ZipFile(wheel).namelist())
    assert any(n.startswith("controller/game/table.") and n.endswith(".so") for n in names), "the compiled engine"
    assert "controller/game/table.py" in names, "the pure source beside it (the fallback)"
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
