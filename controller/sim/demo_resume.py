"""What a demo's state directory was started with, so a resume plays the same simulated devices or refuses.

The simulated shoe is rebuilt on a resume from the demo's ``--seed`` and ``--shuffler`` (the shoes already
dealt, then the one in play at its position): resumed with another of either, the shoe would deal cards the
journal's shoe had already dealt and the table halts on a false integrity alarm ("5D seen 7 times").
So the first start writes them to ``<state-dir>/demo.json`` and a resume with another value is refused,
naming the option (exit 2). A state dir from before this file is taken as it is, and the file written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from controller.private_files import write_private

__all__ = ["OPTIONS_FILE", "DemoOptionsDiffer", "check_resume"]

#: the options a demo's state directory was started with
OPTIONS_FILE = "demo.json"


class DemoOptionsDiffer(ValueError):
    """A resume asked with a device option other than the state directory's: the line says which."""


def _recorded(seed: int, shuffler: str) -> dict[str, Any]:
    """The options the simulated devices' state depends on, by command-line name."""
    return {"--seed": seed, "--shuffler": shuffler}


def check_resume(state_dir: Path, *, fresh: bool, seed: int, shuffler: str) -> None:
    """Write the options at a state directory's first start (``fresh``: it has no journals yet); on a resume,
    :class:`DemoOptionsDiffer` naming the first option whose value differs from the first start's."""
    path = state_dir / OPTIONS_FILE
    wanted = _recorded(seed, shuffler)
    try:
        if fresh:
            raise FileNotFoundError(path)
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        write_private(path, json.dumps(wanted, indent=1) + "\n")  # like every file of a state dir
        return
    try:
        held = json.loads(text)
        if not isinstance(held, dict):
            raise ValueError("not a JSON object")
    except ValueError as e:
        raise DemoOptionsDiffer(f"{path}: unreadable ({e}); it records the options this state dir was "
                                "started with (remove it to take the options given now)") from None
    for name, value in wanted.items():
        if name in held and held[name] != value:
            raise DemoOptionsDiffer(
                f"{name} {value}: the state dir {state_dir} was started with {name} {held[name]}, and its "
                f"simulated shoes follow it; resume with {name} {held[name]}, or start on a fresh --state-dir")
