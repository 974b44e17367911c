"""``tablectl dashboard`` and :func:`serve_dashboard`: what is served, bad input, a clean Ctrl-C."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.cli import main
from controller.dashboard.server import Dashboard, serve_dashboard
from controller.errors import UsageError

ROOT = Path(__file__).resolve().parents[2]
TABLECTL = "import sys; from controller.cli import main; sys.exit(main())"


@pytest.fixture
def served() -> Iterator[Dashboard]:
    dash = serve_dashboard(0, "ws://127.0.0.1:9001", "pit1/tables")
    try:
        yield dash
    finally:
        dash.stop()


def get(url: str) -> tuple[int, dict[str, str], bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, {k.lower(): v for k, v in r.headers.items()}, r.read()
    except urllib.error.HTTPError as e:
        return e.code, {k.lower(): v for k, v in e.headers.items()}, e.read()


def test_the_url_carries_the_broker_and_prefix_and_binds_loopback(served: Dashboard) -> None:
    assert served.url.startswith("http://127.0.0.1:")
    assert "broker=ws%3A%2F%2F127.0.0.1%3A9001" in served.url
    assert "prefix=pit1%2Ftables" in served.url


def test_it_serves_the_page_its_modules_and_the_mqtt_bundle(served: Dashboard) -> None:
    base = served.url.split("?")[0]
    status, headers, body = get(served.url)
    assert status == 200 and b'src="mqtt.min.js"' in body
    # connections to itself and the broker it was given, no other host (issue #33)
    assert "connect-src 'self' ws://127.0.0.1:9001;" in headers["content-security-policy"]
    for name in ("app.js", "model.js", "cards.js", "dom.js", "analytics.js", "floor.js", "floor_model.js",
                 "recorder_model.js", "dealer_model.js", "dealers.js", "contract.js", "vendor/uPlot.iife.min.js"):
        status, headers, _ = get(base + name)
        assert (status, headers["content-type"]) == (200, "text/javascript")
    status, _, body = get(base + "mqtt.min.js")
    assert status == 200 and len(body) > 100_000
    status, headers, body = get(base + "vendor/uPlot.min.css")
    assert (status, headers["content-type"]) == (200, "text/css") and b".uplot" in body
    status, _, body = get(base + "config.json")
    config = json.loads(body)
    assert {k: config[k] for k in ("broker", "brokers", "prefix")} == {
        "broker": "ws://127.0.0.1:9001", "brokers": ["ws://127.0.0.1:9001"], "prefix": "pit1/tables"}
    # the roles that send commands, from controller/contract/roles.py: which alarms each may clear (contract.json,
    # generated from controller/contract, served like the page's other files)
    status, headers, body = get(base + "contract.json")
    assert (status, headers["content-type"]) == (200, "application/json")
    contract = json.loads(body)
    assert contract["roles"]["surveillance"] == {"verbs": ["ack_alarm", "selfcheck"],
                                                 "alarm_kinds": ["integrity", "journal"], "reason_required": True}
    assert set(contract["roles"]) == {"pit", "surveillance", "technician"}


def test_it_serves_nothing_else(served: Dashboard) -> None:
    base = served.url.split("?")[0]
    for path in ("..%2Fpyproject.toml", "../pyproject.toml", "%2e%2e/package.json", "node_modules/"):
        assert get(base + path)[0] == 404, path
    status, _, _ = get(base + "?list")  # the page itself, never a directory listing
    assert status == 200


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--broker-ws", "mqtt://127.0.0.1:1883"], "--broker-ws"),
        (["--broker-ws", "ws://:9001"], "--broker-ws"),
        (["--broker-ws", "ws://127.0.0.1:9001; script-src *"], "--broker-ws"),  # the policy is written from it
        (["--broker-ws", "ws://u:pw@127.0.0.1:9001"], "--broker-ws"),
        (["--prefix", "tables/#"], "--prefix"),
        (["--prefix", "/tables"], "--prefix"),
        (["--port", "70000"], "--port"),
    ],
)
def test_bad_input_exits_2_with_one_line_naming_it(
    args: list[str], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["dashboard", *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("tablectl dashboard: " + words)


def test_serve_dashboard_refuses_a_bad_broker_url() -> None:
    with pytest.raises(UsageError):
        serve_dashboard(0, "http://127.0.0.1:9001", "tables")


def test_a_port_in_use_is_a_runtime_failure(served: Dashboard, capsys: pytest.CaptureFixture[str]) -> None:
    port = served.url.split(":")[2].split("/")[0]
    assert main(["dashboard", "--port", port]) == 1
    assert "cannot listen on 127.0.0.1:" + port in capsys.readouterr().err


def test_tablectl_dashboard_prints_the_url_and_exits_0_on_ctrl_c() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", TABLECTL, "dashboard", "--port", "0", "--broker-ws", "ws://127.0.0.1:9001"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("Pit dashboard: http://127.0.0.1:"), line
        url = line.split(": ", 1)[1].strip()
        assert get(url)[0] == 200
        # its last line before it waits for Ctrl-C: a SIGINT sent before that line is a
        # KeyboardInterrupt outside run()'s try block (exit 130)
        assert proc.stderr is not None
        assert "Ctrl-C to stop" in proc.stderr.readline()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for f in (proc.stdout, proc.stderr):
            if f is not None:
                f.close()


def test_a_tab_closed_while_a_file_is_sent_prints_no_traceback(served: Dashboard,
                                                               capfd: pytest.CaptureFixture[str]) -> None:
    """A browser tab closed while the mqtt.js bundle is on its way: the socket's write fails (broken pipe,
    reset); that is a client gone, not a server error to print with a traceback on the demo's console."""
    import socket
    import struct
    import time
    from urllib.parse import urlsplit

    address = urlsplit(served.url)
    for _ in range(4):
        with socket.create_connection((address.hostname, address.port)) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.sendall(b"GET /mqtt.min.js HTTP/1.1\r\nHost: x\r\n\r\n")
            s.recv(1024)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # closes with a reset
    time.sleep(0.5)
    with urllib.request.urlopen(served.url.split("?")[0]) as page:  # still serving
        assert page.status == 200
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Exception occurred" not in err, err
