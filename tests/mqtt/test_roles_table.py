"""The role table (controller/mqtt/roles.py): user names, alarm kinds, what each role may send and clear."""

from __future__ import annotations

import pytest

from controller.contract.alarms import needs_supervisor
from controller.mqtt.roles import ROLES, alarm_kind, check_user, grants, refusal


@pytest.mark.parametrize("name", ["s.jones", "a", "t01", "pit_boss-2", "x" * 64])
def test_a_user_name_of_the_charset_is_taken(name: str) -> None:
    assert check_user(name) is None


@pytest.mark.parametrize(("name", "needle"), [
    ("", "blank"), ("   ", "blank"), ("S.Jones", "'S'"), ("s jones", "' '"), ("x" * 65, "65 characters"),
    ("s.j\u043enes", "U+043E"),  # a Cyrillic o
    ("s.jones\n", "U+000A"), ("s/jones", "'/'"), ("s+", "'+'"), ("\u0455.jones", "U+0455"),
])
def test_any_other_user_name_is_refused_naming_the_character(name: str, needle: str) -> None:
    why = check_user(name)
    assert why is not None and needle in why


@pytest.mark.parametrize(("code", "halts", "kind"), [
    ("integrity_card_count", True, "integrity"), ("integrity_shuffle_composition", True, "integrity"),
    ("integrity_shuffle_count", True, "integrity"), ("peek_mismatch", True, "integrity"),
    ("shuffle_quality", False, "integrity"), ("irregularity:shoe", True, "integrity"),
    ("journal_behind_witness", True, "journal"), ("device_lost:shoe", True, "device"),
    ("dead_card", False, "procedure"), ("dealer_drew_on_stand", False, "procedure"),
    ("deck_change_due", False, "procedure"), ("deck_change_overdue", True, "procedure"),
    ("irregularity:console", False, "procedure"), ("insufficient_cards", False, "procedure"),
    ("irregularity:card_reader", False, "device"),
])
def test_every_alarm_the_engine_raises_has_its_kind(code: str, halts: bool, kind: str) -> None:
    assert alarm_kind(code, halts) == kind
    # an alarm the engine clears only with a named operator and a reason is surveillance's
    assert (kind in ("integrity", "journal")) == (needs_supervisor(code, halts) or code.startswith("journal"))


def test_each_role_sends_its_verbs_and_clears_its_alarms_only() -> None:
    assert refusal("pit", "close") is None and refusal("pit", "set_limits") is None
    assert "may not send close" in (refusal("surveillance", "close") or "")
    assert "may not send open" in (refusal("technician", "open") or "")
    assert "sends no commands" in (refusal("dashboard", "close") or "")
    assert "sends no commands" in (refusal("admin", "close") or "")
    integrity = ("integrity_card_count", True)
    assert "integrity alarm" in (refusal("pit", "ack_alarm", alarm=integrity, reason="x") or "")
    assert "integrity alarm" in (refusal("technician", "ack_alarm", alarm=integrity, reason="x") or "")
    assert refusal("surveillance", "ack_alarm", alarm=integrity, reason="recounted") is None
    assert "reason" in (refusal("surveillance", "ack_alarm", alarm=integrity) or "")
    assert "reason" in (refusal("surveillance", "ack_alarm", alarm=("journal_x", True)) or "")
    assert refusal("pit", "ack_alarm", alarm=("dead_card", False)) is None
    assert refusal("pit", "ack_alarm", alarm=("device_lost:shoe", True)) is None
    assert refusal("technician", "ack_alarm", alarm=("device_lost:shoe", True)) is None
    assert "procedure alarm" in (refusal("technician", "ack_alarm", alarm=("dead_card", False)) or "")
    assert "procedure alarm" in (refusal("surveillance", "ack_alarm", alarm=("dead_card", False), reason="r") or "")


def test_grants_fill_the_user_and_the_prefix() -> None:
    pit = grants("pit", prefix="tables", user="s.jones")
    assert pit.reads == ("tables/#",) and pit.denies == ("tables/+/ratings", "tables/+/ratings/open")
    assert "tables/+/cmd/pit/s.jones/close" in pit.writes
    assert all("/cmd/pit/s.jones/" in w for w in pit.writes)
    table = grants("table", prefix="tables", user="t01")
    assert table.reads == ("tables/t01/#", "tables/recorder/t01") and "tables/t01/cmd/+/+/+/result" in table.writes
    assert grants("tracking", prefix="p", user="tracking").reads == ("p/+/ratings", "p/+/ratings/open")
    assert grants("surveillance", prefix="p", user="eye").denies == ()
    recorder = grants("recorder", prefix="p", user="recorder")
    assert recorder.reads == ("p/+/events", "p/+/state", "p/+/ratings", "p/+/ratings/open")
    assert recorder.writes == ("p/recorder/#",) and recorder.denies == ()
    assert set(ROLES) == {"table", "dashboard", "pit", "surveillance", "technician", "tracking", "recorder"}
