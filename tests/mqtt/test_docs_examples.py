"""The docs' ``mosquitto_sub ... -C 1`` examples print the topic they name, copied as written, on the demo's broker.

A newcomer copies them against ``tablectl demo``, whose embedded broker (amqtt 0.12.1) sends a new client, on
connect, the retained messages of the topics other sessions subscribed to (DESIGN's facts): ``-C 1`` then
printed another topic's message (``history`` for ``analytics``). Each example is read from the docs, pointed
at a running demo (only ``-h``/``-p`` changed) and run with ``-v`` added, so the topic printed is checked.
"""

from __future__ import annotations

import re
import shlex
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.mqtt.embedded_broker import free_port

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

pytestmark = pytest.mark.timeout(180)


def _examples() -> list[tuple[str, str]]:
    """(where, command) of every ``mosquitto_sub`` example that prints a count of messages (``-C``)."""
    found = []
    for path in DOCS:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for cmd in re.findall(r"mosquitto_sub [^`|\n]*", line):
                if " -C " in cmd:
                    found.append((f"{path.name}:{n}", cmd.strip()))
    return found


EXAMPLES = _examples()


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """A running ``tablectl demo`` on its embedded broker; its MQTT port."""
    if shutil.which("mosquitto_sub") is None:
        pytest.skip("mosquitto_sub is not installed (make system, or apt-get install mosquitto-clients)")
    port, ws_port = free_port(), free_port()
    while ws_port == port:
        ws_port = free_port()
    state = tmp_path_factory.mktemp("docs-examples")
    proc = subprocess.Popen(
        [sys.executable, "-m", "controller.cli", "demo", "--speed", "fast", "--no-dashboard", "--quiet",
         "--port", str(port), "--ws-port", str(ws_port), "--state-dir", str(state / "state")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if "Journals:" in line:
                break
        # what a newcomer's screen does first: a dashboard-like subscriber to every topic, then gone
        subprocess.run(["mosquitto_sub", "-h", "127.0.0.1", "-p", str(port), "-t", "tables/#", "-C", "20"],
                       capture_output=True, timeout=30, check=True)
        yield port
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()


def test_the_docs_have_such_examples() -> None:
    assert len(EXAMPLES) >= 3, EXAMPLES


@pytest.mark.parametrize(("where", "command"), EXAMPLES, ids=[w for w, _ in EXAMPLES])
def test_a_docs_example_prints_the_topic_it_names(where: str, command: str, demo: int) -> None:
    args = shlex.split(command)
    topic = args[args.index("-t") + 1]
    assert "#" not in topic and "+" not in topic, f"{where}: an example of -C 1 names one topic"
    for flag in ("-h", "-p"):
        if flag in args:
            del args[args.index(flag):args.index(flag) + 2]
    args += ["-h", "127.0.0.1", "-p", str(demo), "-v"]
    for _ in range(3):  # a fresh client each time, as a newcomer trying again
        done = subprocess.run(args, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, f"{where}: {done.stderr}"
        printed = done.stdout.split(" ", 1)[0]
        assert printed == topic, f"{where}: `{command}` printed a message of {printed}, not {topic}"
