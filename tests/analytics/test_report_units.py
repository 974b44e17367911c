"""``tablectl report`` in units a person reads, and the demo's closing line agreeing with it (issue #35): local
ISO times, percent, rounded rates in the text; ``--json`` exact and unchanged; the Ctrl-C summary's handle is the
settled rounds' handle, the report's."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

from tests.analytics.test_report import _report, _tablectl, played  # noqa: F401  (the module's demo journal)
from tests.mqtt_broker import Mosquitto


def test_the_text_report_is_in_units_a_person_reads(played: tuple[Path, str]) -> None:  # noqa: F811
    journal, _ = played
    done = _tablectl("report", str(journal))
    assert done.returncode == 0, done.stderr
    lines = {k.strip(): v.strip() for k, v in (line.split(": ", 1) for line in done.stdout.splitlines()
                                               if ": " in line and line.startswith(" "))}
    data = _report(journal)
    started = datetime.fromisoformat(lines["started"])
    assert started.tzinfo is not None and abs(started.timestamp() - data["started"]) < 1
    assert re.fullmatch(r"-?\d+\.\d\d%", lines["hold"]) and lines["hold"] != "-0.00%"
    assert float(lines["hold"].rstrip("%")) == round(data["hold"] * 100, 2)
    assert re.fullmatch(r"\d+", lines["rounds_per_hour"]), lines["rounds_per_hour"]
    assert lines["win_z"].endswith(" SD")
    # --json keeps the exact values
    assert isinstance(data["started"], float) and isinstance(data["hold"], float) and abs(data["hold"]) < 1


def test_the_ctrl_c_summary_counts_the_settled_rounds_as_the_report_does(tmp_path: Path,
                                                                        mosquitto_session: Mosquitto) -> None:
    state = tmp_path / "state"
    proc = subprocess.Popen([sys.executable, "-m", "controller.cli", "demo", "--speed", "fast", "--seed", "3",
                             "--broker", mosquitto_session.url, "--state-dir", str(state), "--no-dashboard"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "XDG_STATE_HOME": str(tmp_path / "xdg")})
    assert proc.stdout is not None
    settled = 0
    while settled < 4:
        line = proc.stdout.readline()
        assert line, proc.stderr.read() if proc.stderr else ""
        settled += line.startswith("t01 round")
    time.sleep(0.5)  # a round takes about a second at this pace: the next one has its wagers locked by now
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    [closing] = [line for line in out.splitlines() if line.startswith("t01: rounds")]
    rounds, handle = re.match(r"t01: rounds (\d+) handle (\S+)", closing).groups()  # type: ignore[union-attr]
    report = json.loads(_tablectl("report", str(state / "t01.journal"), "--json").stdout)
    assert (int(rounds), handle) == (report["rounds"], report["handle"]), (closing, report["handle"])
