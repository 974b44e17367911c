"""What a table answers a command (docs/mqtt.md, "Commands"): published on ``.../cmd/<role>/<user>/<verb>/result``.

Here, not beside the commands' models (:mod:`controller.service.commands`), because the broker client publishes
results too (an internal error's refusal) and must not import the table service to spell one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CommandResult", "refused"]


@dataclass(frozen=True, slots=True)
class CommandResult:
    """What is published on ``.../cmd/<verb>/result``."""

    ok: bool
    verb: str
    id: str | int | None = None
    error: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    operator: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"ok": self.ok, "verb": self.verb}
        if self.id is not None:
            out["id"] = self.id
        if self.operator is not None:
            out["operator"] = self.operator
        if self.error is not None:
            out["error"] = self.error
        out.update(self.detail)
        return out

    def payload(self) -> bytes:
        return json.dumps(self.to_json(), separators=(",", ":")).encode()


def refused(verb: str, reason: str, request_id: str | int | None = None, operator: str | None = None) -> CommandResult:
    """A refusal with its reason (bad payload, or not allowed now); a verb from a topic is cut at 64 characters."""
    return CommandResult(False, verb[:64], request_id, reason, operator=operator)
