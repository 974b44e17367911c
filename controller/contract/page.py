"""The contract as the dashboard reads it: ``controller/web/contract.json``, generated from this package.

The page (``controller/web/contract.js``) keeps no copy of the phases, the roles or the alarm kinds: it loads
this file at start. ``python -m controller.contract`` writes it; a test fails when the committed file differs
from what the Python definitions give, so the two cannot drift apart.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

from controller.contract.alarms import (
    ALARM_KINDS,
    DEVICE_CODES,
    DEVICE_LOST_PREFIX,
    INTEGRITY_PREFIXES,
    IRREGULARITY_PREFIX,
    JOURNAL_PREFIX,
    SURVEILLANCE,
)
from controller.contract.dealers import DEALER_PATTERN
from controller.contract.phases import BETWEEN_ROUNDS, PHASES, ROUND_PHASES
from controller.contract.roles import COMMAND_ROLES, ROLES, USER_PATTERN

#: where the page finds it: beside its own files
PAGE_CONTRACT: Final = Path(__file__).resolve().parents[1] / "web" / "contract.json"


def command_roles() -> dict[str, dict[str, Any]]:
    """The roles that send commands, as the page needs them: verbs, the alarm kinds each clears, its reason."""
    return {name: {"verbs": sorted(ROLES[name].verbs), "alarm_kinds": sorted(ROLES[name].alarm_kinds),
                   "reason_required": ROLES[name].reason_required} for name in COMMAND_ROLES}


def page_contract() -> dict[str, Any]:
    """Everything of the contract the page reads, as JSON-able data (sets in a fixed order)."""
    return {
        "phases": list(PHASES),
        "round_phases": [p for p in PHASES if p in ROUND_PHASES],
        "between_rounds": [p for p in PHASES if p in BETWEEN_ROUNDS],
        "alarm_kinds": list(ALARM_KINDS),
        # alarm_kind(code, halts) as data, for a table that publishes no ``kind`` of its alarms
        "alarm_kind_rules": {
            "journal_prefix": JOURNAL_PREFIX,
            "halting_integrity_prefixes": [*INTEGRITY_PREFIXES, IRREGULARITY_PREFIX],
            "integrity_codes": sorted(SURVEILLANCE),
            "device_prefix": DEVICE_LOST_PREFIX,
            "device_codes": sorted(DEVICE_CODES),
        },
        "roles": command_roles(),
        "user_pattern": USER_PATTERN,
        "dealer_pattern": DEALER_PATTERN,
    }


def page_contract_text() -> str:
    """The file's text: indented, keys in the order above, a final newline."""
    return json.dumps(page_contract(), indent=2) + "\n"


def write_page_contract(path: Path = PAGE_CONTRACT) -> bool:
    """Write the page's contract; whether the file changed."""
    text = page_contract_text()
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return False
    path.write_text(text, encoding="utf-8")
    return True
