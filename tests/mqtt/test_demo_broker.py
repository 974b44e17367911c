"""The demo's own broker delivers exactly what each subscription asks for, retained messages included.

On amqtt 0.12.1 (the demo's broker until issue 35) a new client was sent, as it connected, the retained messages
of topics other sessions had subscribed to: ``mosquitto_sub -t tables/t01/state -C 1`` printed ``online`` (the
``status``), and a subscriber to its own ``set_limits/result`` got a 75 kB ``history``. These run the real demo
and the real Mosquitto clients against its broker, with the login the demo printed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator

import pytest

from tests.mqtt.demo_process import DemoBroker, running_demo

pytestmark = [pytest.mark.timeout(180), pytest.mark.xdist_group("demo-broker")]

PIT_USER = "s.jones"  # the demo's pit supervisor (docs/mqtt.md's examples)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoBroker]:
    if shutil.which("mosquitto_sub") is None:
        pytest.skip("mosquitto_sub is not installed (make system, or apt-get install mosquitto-clients)")
    with running_demo(tmp_path_factory.mktemp("demo-broker") / "state", "--tables", "2") as broker:
        # what a newcomer's screen does first: a subscriber to every topic, then gone
        subprocess.run(["mosquitto_sub", *broker.address_args(), *broker.login_args(), "-t", "tables/#", "-C", "20"],
                       capture_output=True, timeout=30, check=True)
        yield broker


def test_a_subscriber_to_state_gets_a_state_ten_times_in_ten(demo: DemoBroker) -> None:
    for n in range(10):  # a fresh client each time, as a person trying again
        done = subprocess.run(["mosquitto_sub", *demo.address_args(), *demo.login_args(),
                               "-t", "tables/t01/state", "-C", "1", "-v"], capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, done.stderr
        topic, _, body = done.stdout.partition(" ")
        assert topic == "tables/t01/state", f"try {n + 1}: printed {done.stdout[:120]!r}"
        state = json.loads(body)
        assert state["table_id"] == "t01" and state["seq"] >= 1, body[:200]


def test_a_subscriber_to_its_commands_result_gets_that_result_and_nothing_else(demo: DemoBroker) -> None:
    result_topic = f"tables/t01/cmd/pit/{PIT_USER}/set_limits/result"
    sub = subprocess.Popen(["mosquitto_sub", *demo.address_args(), *demo.login_args(PIT_USER),
                            "-t", result_topic, "-C", "1", "-v", "-W", "30"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # the subscription is made before the command: mosquitto_sub prints nothing until it has a message
        subprocess.run(["mosquitto_sub", *demo.address_args(), *demo.login_args(PIT_USER),
                        "-t", result_topic, "-W", "1"], capture_output=True, timeout=10)
        subprocess.run(["mosquitto_pub", *demo.address_args(), *demo.login_args(PIT_USER), "-q", "1",
                        "-t", f"tables/t01/cmd/pit/{PIT_USER}/set_limits",
                        "-m", '{"min_bet": "10", "max_bet": "500", "id": "r-1"}'],
                       capture_output=True, timeout=10, check=True)
        out, err = sub.communicate(timeout=40)
    finally:
        if sub.poll() is None:
            sub.kill()
            sub.communicate()
    assert sub.returncode == 0, err
    topic, _, body = out.partition(" ")
    assert topic == result_topic, f"printed {len(out)} bytes of {topic}, not {result_topic}"
    result = json.loads(body)
    assert result["verb"] == "set_limits" and result["id"] == "r-1", result


def _listening(ports: set[int]) -> list[tuple[str, int]]:
    """(address, port) of each TCP socket listening on one of ``ports`` (Linux's /proc/net/tcp and tcp6)."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for row in list(f)[1:]:
                local, state = row.split()[1], row.split()[3]
                address, port = local.rsplit(":", 1)
                if state == "0A" and int(port, 16) in ports:  # 0A: LISTEN
                    ip = ".".join(str(b) for b in reversed(bytes.fromhex(address))) if len(address) == 8 else address
                    found.append((ip, int(port, 16)))
    return found


def test_the_broker_listens_on_loopback_only(demo: DemoBroker) -> None:
    listening = _listening({demo.port, demo.ws_port})
    assert {port for _, port in listening} == {demo.port, demo.ws_port}, listening
    assert all(ip == "127.0.0.1" for ip, _ in listening), listening


def test_the_broker_refuses_an_anonymous_client(demo: DemoBroker) -> None:
    if demo.credentials is None:
        pytest.fail("the demo's broker printed no login: it takes anonymous clients")
    done = subprocess.run(["mosquitto_sub", *demo.address_args(), "-t", "tables/t01/state", "-C", "1", "-W", "5"],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode != 0 and not done.stdout, (done.returncode, done.stdout[:200])
    wrong = subprocess.run(["mosquitto_sub", *demo.address_args(), "-u", "dashboard", "-P", "not-it",
                            "-t", "tables/t01/state", "-C", "1", "-W", "5"], capture_output=True, text=True, timeout=30)
    assert wrong.returncode != 0 and not wrong.stdout, (wrong.returncode, wrong.stdout[:200])
