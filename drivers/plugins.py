"""One registry for the drivers' backends, python-can style: names -> backends, entry points loaded here only.

Three tables use it: the transports a port's scheme names (:data:`drivers.transport.TRANSPORTS`: ``usb``, the
simulators' ``sim``), the console makers a config's ``backend`` names (:data:`drivers.console.CONSOLE_MAKERS`:
the simulators' ``sim``) and the device kinds (:data:`drivers.registry.DEVICES`). A package adds a backend by
registering it when imported, and names that module under the table's entry point group in its pyproject
(``tablectl.transports``, ``tablectl.consoles``): :meth:`Registry.find` imports it the first time the name is
asked for, so the drivers import nothing of the simulators and production never loads them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Generic, TypeVar

__all__ = ["Registry", "load_plugin"]

T = TypeVar("T")


def load_plugin(group: str, name: str) -> bool:
    """Import the module an installed package names ``name`` under the entry point ``group`` (it registers
    itself when imported); False when none does."""
    from importlib.metadata import entry_points

    found = False
    for point in entry_points(group=group, name=name):
        point.load()
        found = True
    return found


class Registry(dict[str, T], Generic[T]):
    """Backends by name (a dict, in the order registered); ``group``: the entry point group a name not
    registered yet is looked up in (None: the built-in ones only)."""

    def __init__(self, what: str, group: str | None = None, entries: Iterable[tuple[str, T]] = ()) -> None:
        super().__init__(entries)
        #: what a name names, for the error of an unknown one (``transport``, ``device kind``)
        self.what = what
        self.group = group

    def register(self, name: str, backend: T) -> None:
        """``name`` now names ``backend`` (a second registration replaces the first)."""
        self[name] = backend

    def find(self, name: str) -> T | None:
        """The backend ``name`` names, imported from its entry point the first time; None when none does."""
        backend = self.get(name)
        if backend is None and self.group is not None and load_plugin(self.group, name):
            backend = self.get(name)
        return backend

    def unknown(self, name: str) -> str:
        """The one-line error for a name nothing is registered under, naming the known ones."""
        return f"unknown {self.what} {name!r} (one of {', '.join(self)})"
