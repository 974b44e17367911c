"""The drivers' one registry (drivers/plugins.py): names -> backends, a name not yet registered imported from its
entry point, an unknown one refused naming the known ones; the device kinds, transports and console makers all
three tables of it."""

from __future__ import annotations

import pytest

from drivers import open_device, transport
from drivers.console import CONSOLE_MAKERS
from drivers.plugins import Registry
from drivers.registry import DEVICE_KINDS, DEVICES


def test_a_backend_registered_is_found_and_an_unknown_name_is_not() -> None:
    r: Registry[int] = Registry("widget", None, [("a", 1)])
    r.register("b", 2)
    assert (r.find("a"), r.find("b"), r.find("c")) == (1, 2, None)
    assert r.unknown("c") == "unknown widget 'c' (one of a, b)"


def test_a_name_not_registered_yet_is_loaded_from_its_entry_point(monkeypatch: pytest.MonkeyPatch) -> None:
    r: Registry[str] = Registry("widget", "tablectl.test-widgets")
    asked: list[tuple[str, str]] = []

    def load(group: str, name: str) -> bool:
        asked.append((group, name))
        r.register(name, f"loaded {name}")  # as a plugin module registers itself when imported
        return True

    monkeypatch.setattr("drivers.plugins.load_plugin", load)
    assert r.find("x") == "loaded x"
    assert r.find("x") == "loaded x"
    assert asked == [("tablectl.test-widgets", "x")]  # once: registered since


def test_the_three_tables_are_registries_the_simulators_entry_points_included() -> None:
    assert isinstance(DEVICES, Registry) and DEVICE_KINDS == ("shoe", "shuffler", "chips", "console", "cards")
    assert isinstance(transport.TRANSPORTS, Registry) and transport.TRANSPORTS.group == "tablectl.transports"
    assert isinstance(CONSOLE_MAKERS, Registry) and CONSOLE_MAKERS.group == "tablectl.consoles"
    assert transport.TRANSPORTS.find("sim") is not None  # simulators.memory, by its entry point
    assert CONSOLE_MAKERS.find("sim") is not None  # simulators.console, by its entry point


def test_an_unknown_device_kind_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"^unknown device kind 'toaster' \(one of shoe, shuffler, chips, console, "
                                         r"cards\)$"):
        open_device("toaster", "/dev/null")
