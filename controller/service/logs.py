"""Structured logs: one JSON object a line (for journald and log shippers) or readable text.

The service logs with ``extra={...}`` fields (table, device, event, details); this formatter
puts them beside the standard ones. What the service logs is public by construction (records
the engine already redacted, device health, command verbs), so no line at any level carries
the hole card before it is turned.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any, Final, TextIO

#: attributes every LogRecord has; anything else came in through ``extra``
_STANDARD: Final = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    return {k: v for k, v in vars(record).items() if k not in _STANDARD and not k.startswith("_")}


class JsonFormatter(logging.Formatter):
    """``{"ts": ..., "level": ..., "logger": ..., "msg": ..., <extra fields>}``."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, tz=UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
            **_fields(record),
        }
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str, separators=(",", ":"))


class TextFormatter(logging.Formatter):
    """``time level logger: msg key=value ...`` for a terminal."""

    def format(self, record: logging.LogRecord) -> str:
        extra = " ".join(f"{k}={json.dumps(v, default=str)}" for k, v in _fields(record).items())
        line = f"{self.formatTime(record, '%H:%M:%S')} {record.levelname:<7} {record.name}: {record.getMessage()}"
        if extra:
            line += " " + extra
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is when a line is logged, as logging's own last-resort handler does.

    A handler holding the stream it was made with kept writing to it after it was replaced and closed (a
    ``tablectl`` run inside a test session, or by a host program that redirects stderr): every later line
    was a "--- Logging error ---" traceback on the new stderr.
    """

    def __init__(self) -> None:
        logging.Handler.__init__(self)

    @property
    def stream(self) -> TextIO:
        return sys.stderr


def configure_logging(level: str = "INFO", *, fmt: str = "json", stream: TextIO | None = None) -> None:
    """Send the program's logs to ``stream`` (stderr) at ``level`` in ``fmt`` ("json" or "text")."""
    handler: logging.Handler = logging.StreamHandler(stream) if stream is not None else _StderrHandler()
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
