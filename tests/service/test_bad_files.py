"""Bad input a technician may give ``tablectl run`` and ``tablectl profiles`` (issue #33, "smaller ones").

A config or profile TOML nested absurdly deep, a device port that is not a serial port: each is one line on
stderr and exit 2, no traceback, as real processes on real files.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.service.test_secret_files import _one_line, _table_config, _tablectl

#: deeper than Python's recursion limit: tomllib recursed until RecursionError (a traceback, exit 1)
DEEP = 5000


def _deep_array() -> str:
    return "[" * DEEP + "]" * DEEP


def _deep_table() -> str:
    return "{a = " * DEEP + "1" + "}" * DEEP


@pytest.mark.parametrize("nested", [_deep_array, _deep_table])
def test_a_table_config_nested_deep_is_one_line_exit_2(tmp_path: Path, nested: object) -> None:
    path = _table_config(tmp_path, 'url = "mqtt://127.0.0.1:1"')
    assert callable(nested)
    path.write_text(f"junk = {nested()}\n" + path.read_text())
    _one_line(_tablectl("run", "--config", str(path), "--new-journal"), str(path), "nested too deeply")


@pytest.mark.parametrize("nested", [_deep_array, _deep_table])
def test_a_profile_nested_deep_is_one_line_exit_2(tmp_path: Path, nested: object) -> None:
    assert callable(nested)
    profile = tmp_path / "deep.toml"
    profile.write_text(f"junk = {nested()}\n")
    _one_line(_tablectl("profiles", str(profile)), str(profile), "nested too deeply")
    config = _table_config(tmp_path, 'url = "mqtt://127.0.0.1:1"')
    config.write_text(config.read_text().replace('profile = "house-h17"', f'profile = "{profile}"'))
    _one_line(_tablectl("run", "--config", str(config), "--new-journal"), "nested too deeply")


@pytest.mark.parametrize("port", ["/dev/zero", "regular-file"])
def test_a_device_port_that_is_not_a_serial_port_is_one_line_exit_2(tmp_path: Path, port: str) -> None:
    if port == "regular-file":
        port = str(tmp_path / "shoe.txt")
        Path(port).write_text("not a tty\n")
    path = _table_config(tmp_path, 'url = "mqtt://127.0.0.1:1"')
    path.write_text(path.read_text().replace(f'port = "{tmp_path / "nowhere" / "shoe"}"', f'port = "{port}"'))
    assert port in path.read_text()
    done = _tablectl("run", "--config", str(path), "--new-journal")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    line = done.stderr.strip().splitlines()[-1]  # after the log's lines (a journal made, recovered)
    assert f"port {port} is not a serial port (a tty)" in line, done.stderr
