"""The docs' ``mosquitto_sub``/``mosquitto_pub`` examples against the demo print what they say, copied as written.

A newcomer copies them against ``tablectl demo``. On amqtt (the demo's broker until issue 35) a new client was
sent, on connect, the retained messages of topics other sessions subscribed to: ``-C 1`` printed another topic's
message (``online`` for ``state``, ``history`` for a command's result). Each example is read from the docs and
run against a real demo on its own broker with only what a reader fills in changed: the host and port (``-h``,
``-p``) and the password of the user it names (``-P PASSWORD``: the demo's ``credentials.toml``).

* a subscriber that prints a count of messages (``-C``) and names one topic prints messages of that topic
  (``-v`` added, so the topic printed is checked), three fresh clients in a row;
* a command (``mosquitto_pub`` on ``.../cmd/<role>/<user>/<verb>``) is answered on its ``/result`` topic with
  its verb and id, as the docs' subscriber beside it waits for.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.mqtt.demo_process import DemoBroker, running_demo

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

pytestmark = [pytest.mark.timeout(240), pytest.mark.xdist_group("docs-examples")]


def _examples(program: str) -> list[tuple[str, str]]:
    """(where, command) of every ``program`` example in the docs (up to a pipe, a backtick or the line's end)."""
    found = []
    for path in DOCS:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for cmd in re.findall(program + r" [^`|\n]*", line):
                found.append((f"{path.name}:{n}", cmd.strip().removesuffix("&").strip()))
    return found


#: commands to a table (the other publishes of the docs are a pit broker's, not the demo's: journal.md)
COMMANDS = [(w, c) for w, c in _examples("mosquitto_pub") if "/cmd/" in c]
#: subscribers that print a count of messages; those waiting for a command's result run beside the command
COUNTED = [(w, c) for w, c in _examples("mosquitto_sub") if " -C " in c]
RESULTS = {c.split(" -t ", 1)[1].split()[0]: c for _, c in COUNTED if "/result" in c}
SUBSCRIBERS = [(w, c) for w, c in COUNTED if "/result" not in c]


def _as_run(command: str, demo: DemoBroker) -> list[str]:
    """``command``'s arguments with this demo's host, port and the named user's password in them."""
    args = shlex.split(command)
    for flag in ("-h", "-p"):
        if flag in args:
            del args[args.index(flag):args.index(flag) + 2]
    assert "-u" in args and "-P" in args, f"`{command}`: the demo's broker takes no anonymous client: -u USER -P ..."
    user = args[args.index("-u") + 1]
    args[args.index("-P") + 1] = demo.password(user)
    return [*args, *demo.address_args()]


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoBroker]:
    """A running ``tablectl demo`` on its embedded broker."""
    if shutil.which("mosquitto_sub") is None:
        pytest.skip("mosquitto_sub is not installed (make system, or apt-get install mosquitto-clients)")
    with running_demo(tmp_path_factory.mktemp("docs-examples") / "state") as broker:
        assert broker.credentials is not None, broker.output
        # what a newcomer's screen does first: a dashboard-like subscriber to every topic, then gone
        subprocess.run(["mosquitto_sub", *broker.address_args(), *broker.login_args(), "-t", "tables/#", "-C", "20"],
                       capture_output=True, timeout=30, check=True)
        yield broker


def test_the_docs_have_such_examples() -> None:
    assert len(SUBSCRIBERS) >= 4, SUBSCRIBERS
    assert any("tables/t01/state" in c for _, c in SUBSCRIBERS), "the state example of docs/mqtt.md"
    assert COMMANDS, "the command example of docs/mqtt.md"


@pytest.mark.parametrize(("where", "command"), SUBSCRIBERS, ids=[w for w, _ in SUBSCRIBERS])
def test_a_docs_subscriber_prints_the_topic_it_names(where: str, command: str, demo: DemoBroker) -> None:
    args = _as_run(command, demo)
    topic = args[args.index("-t") + 1]
    assert "#" not in topic and "+" not in topic, f"{where}: an example of -C names one topic"
    if "-v" not in args:
        args.append("-v")
    for _ in range(3):  # a fresh client each time, as a newcomer trying again
        done = subprocess.run(args, capture_output=True, text=True, timeout=90)
        assert done.returncode == 0, f"{where}: {done.stderr}"
        printed, _, body = done.stdout.partition(" ")
        assert printed == topic, f"{where}: `{command}` printed a message of {printed}, not {topic}"
        assert body.strip(), f"{where}: `{command}` printed an empty message"


@pytest.mark.parametrize(("where", "command"), COMMANDS, ids=[w for w, _ in COMMANDS])
def test_a_docs_command_is_answered_on_its_result_topic(where: str, command: str, demo: DemoBroker) -> None:
    args = _as_run(command, demo)
    topic = args[args.index("-t") + 1]
    request = json.loads(args[args.index("-m") + 1])
    result_topic = f"{topic}/result"
    assert result_topic in RESULTS, f"{where}: no subscriber to {result_topic} beside it in the docs"
    subscriber = _as_run(RESULTS[result_topic], demo)
    waiting = subprocess.Popen([*subscriber, *([] if "-v" in subscriber else ["-v"]), "-W", "60"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(1.0)  # subscribed (as the docs' subscriber started first)
        sent = subprocess.run(args, capture_output=True, text=True, timeout=30)
        assert sent.returncode == 0, f"{where}: {sent.stderr}"
        out, err = waiting.communicate(timeout=90)
    finally:
        if waiting.poll() is None:
            waiting.kill()
            waiting.communicate()
    assert waiting.returncode == 0, f"{where}: no answer on {result_topic}: {err}"
    printed, _, body = out.partition(" ")
    assert printed == result_topic, f"{where}: printed {printed}"
    result = json.loads(body)
    assert result["verb"] == topic.rsplit("/", 1)[1] and result.get("id") == request.get("id"), result
    assert result["ok"] is True, f"{where}: {result}"
