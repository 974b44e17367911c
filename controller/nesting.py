"""Text from outside read without a traceback: lists and tables nested at most :data:`MAX_DEPTH` deep.

``tomllib`` and ``json`` recurse once per level, so a file nested a few thousand levels deep ends in a
``RecursionError`` traceback. A config, a profile or a scenario never needs more than a few levels: deeper is
refused in one line (the CLI exits 2).
"""

from __future__ import annotations

import tomllib
from typing import Any

#: lists and objects (tables) nested deeper than this are refused
MAX_DEPTH = 32
TOO_DEEP = f"nested too deeply: more than {MAX_DEPTH} levels of lists and tables"


class TomlError(ValueError):
    """A TOML text that is not valid, or nested too deeply: one line, without the file's name."""


def depth(value: Any) -> int:
    """How deep lists and objects nest in ``value`` (stops counting past :data:`MAX_DEPTH`); no recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack and deepest <= MAX_DEPTH:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
            stack.extend((child, level + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


def load_toml(text: str) -> dict[str, Any]:
    """``tomllib.loads``, with :class:`TomlError` for invalid TOML and for nesting past :data:`MAX_DEPTH`."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise TomlError(f"not valid TOML: {e}") from None
    except RecursionError:
        raise TomlError(TOO_DEEP) from None
    if depth(data) > MAX_DEPTH:
        raise TomlError(TOO_DEEP)
    return data
