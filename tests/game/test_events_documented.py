"""docs/mqtt.md documents every event type the engine publishes on ``.../events``, with its fields."""

from __future__ import annotations

import json
import re
from pathlib import Path

from controller.journal import admission, schema
from controller.scenario import ScenarioError, iter_scenario_files, run_scenario

ROOT = Path(__file__).resolve().parents[2]
#: ``self._record("type", ...)``, the name possibly on the next line
RECORD_CALL = re.compile(r"""\b_record\(\s*["']([a-z_]+)["']""")
#: a record the table service journals itself, no engine input causing it (``command_refused``)
SERVICE_RECORD = re.compile(r"""["']type["']: ["']([a-z_]+)["']""")
#: the records the service journals under a named constant (a new journal's first, an adoption, a migration)
SERVICE_RECORD_CONSTANTS = {admission.STARTED, admission.ADOPTED, schema.MIGRATED}


def documented() -> dict[str, str]:
    """``type`` -> its fields cell, from the table of docs/mqtt.md's "Event types" section."""
    text = (ROOT / "docs" / "mqtt.md").read_text(encoding="utf-8")
    section = text.split("\n### Event types\n", 1)[1].split("\n#", 1)[0]
    body = section.split("\n|---", 1)[1]  # the rows under the header
    rows = re.findall(r"^\| `([a-z_]+)` \| (.*?) \|", body, flags=re.MULTILINE)
    return dict(rows)


def recorded_in_source() -> set[str]:
    """Every record type named in the engine and the service (``controller/**/*.py``)."""
    names: set[str] = set()
    for path in (ROOT / "controller").rglob("*.py"):
        names |= set(RECORD_CALL.findall(path.read_text(encoding="utf-8")))
    for path in (ROOT / "controller" / "service").glob("*.py"):
        names |= set(SERVICE_RECORD.findall(path.read_text(encoding="utf-8")))
    return names | SERVICE_RECORD_CONSTANTS


def recorded_by_scenarios() -> dict[str, set[str]]:
    """The record types and their fields the engine published playing every golden scenario."""
    seen: dict[str, set[str]] = {}
    for name in iter_scenario_files(str(ROOT / "controller" / "conformance_scenarios")):
        try:
            result = run_scenario(json.loads(Path(name).read_text(encoding="utf-8")))
        except ScenarioError:
            continue  # the malformed and refused ones
        for record in result["events"]:
            seen.setdefault(record["type"], set()).update(k for k in record if k != "type")
    return seen


def test_every_event_type_the_engine_records_is_documented() -> None:
    source = recorded_in_source()
    assert {"card", "payout", "phase", "no_more_bets", "round_settled", "shuffle_requested"} <= source, (
        "the search for _record(...) calls found too little: has the engine's recording changed?")
    missing = sorted(source - set(documented()))
    assert not missing, f"docs/mqtt.md, 'Event types': no row for {missing}"


def test_every_event_played_is_documented_with_its_fields() -> None:
    docs = documented()
    played = recorded_by_scenarios()
    assert len(played) >= 15, sorted(played)
    for type_, fields in sorted(played.items()):
        assert type_ in docs, f"docs/mqtt.md, 'Event types': no row for {type_!r}"
        cell = docs[type_]
        undocumented = sorted(f for f in fields if f"`{f}`" not in cell)
        assert not undocumented, f"docs/mqtt.md, 'Event types', {type_!r}: fields {undocumented} not named"


def test_documented_types_exist() -> None:
    stale = sorted(set(documented()) - recorded_in_source())
    assert not stale, f"docs/mqtt.md, 'Event types' documents types the engine never records: {stale}"
