"""The role table's checks word for word and at their limits (issue 39's kind of gap): each refusal in full, a name
of exactly 64 characters shown whole and one of 65 cut, user names at 64 and 65, each role's grants in full."""

from __future__ import annotations

import pytest

from controller.contract.roles import COMMAND_ROLES, check_user, command_topic, grants, refusal

INTEGRITY = ("integrity_card_count", True)


def test_each_refusal_in_full() -> None:
    assert refusal("dashboard", "close") == "role 'dashboard' sends no commands (roles that do: pit, surveillance, " \
                                            "technician)"
    assert refusal("nobody", "close") == "role 'nobody' sends no commands (roles that do: pit, surveillance, " \
                                         "technician)"
    assert refusal("pit", "explode") == "unknown command 'explode'; known: open, close, set_limits, ack_alarm, " \
                                        "decks_changed, selfcheck, set_dealer"
    assert refusal("technician", "open") == "role technician may not send open (only pit)"
    assert refusal("surveillance", "ack_alarm", alarm=("dead_card", False), reason="r") == (
        "role surveillance may not acknowledge a procedure alarm (dead_card; only pit)")
    said = refusal("pit", "ack_alarm", alarm=INTEGRITY, reason="x") or ""
    assert said.startswith("role pit may not acknowledge a")
    assert said.endswith(" integrity alarm (integrity_card_count; only surveillance)")
    assert refusal("technician", "ack_alarm", alarm=("journal_behind_witness", True), reason="x") == (
        "role technician may not acknowledge a journal alarm (journal_behind_witness; only surveillance)")
    assert refusal("pit", "ack_alarm", alarm=("device_lost:shoe", True)) is None
    assert refusal("technician", "ack_alarm", alarm=("device_lost:shoe", True)) is None
    assert refusal("surveillance", "ack_alarm", alarm=INTEGRITY, reason="") == (
        "role surveillance acknowledges an alarm only with a reason")
    assert refusal("surveillance", "ack_alarm", alarm=INTEGRITY, reason="recounted") is None
    assert refusal("surveillance", "ack_alarm") is None, "no alarm named: only the verb is checked"
    assert COMMAND_ROLES == ("pit", "surveillance", "technician")


@pytest.mark.parametrize(("length", "shown"), [(64, "r" * 64), (65, "r" * 61 + "..."), (300, "r" * 61 + "...")])
def test_a_name_from_a_topic_is_shown_whole_up_to_64_characters(length: int, shown: str) -> None:
    assert refusal("r" * length, "close") == f"role {shown!r} sends no commands (roles that do: pit, surveillance, " \
                                             "technician)"
    assert refusal("pit", "v" * length) == (f"unknown command {shown.replace('r', 'v')!r}; known: open, close, "
                                            "set_limits, ack_alarm, decks_changed, selfcheck, set_dealer")


def test_user_names_at_their_limits_and_each_reason_in_full() -> None:
    assert check_user("x" * 64) is None
    assert check_user("x" * 65) == "user name is 65 characters long (at most 64)"
    assert check_user("") == "user name is blank"
    assert check_user(" \t") == "user name is blank"
    assert check_user("s.Jones") == ("user name 's.Jones' holds 'J' (U+004A): only a-z 0-9 . _ - (lower case) are "
                                     "allowed")
    assert check_user("é" * 65) == "user name is 65 characters long (at most 64)"


def test_a_command_topic_and_the_grants_of_each_role_in_full() -> None:
    assert command_topic("tables/t01", "pit", "s.jones", "close") == "tables/t01/cmd/pit/s.jones/close"
    pit = grants("pit", prefix="p", user="s.jones")
    assert pit.writes == tuple(f"p/+/cmd/pit/s.jones/{v}" for v in ("open", "close", "set_limits", "decks_changed",
                                                                      "ack_alarm", "selfcheck", "set_dealer"))
    assert grants("surveillance", prefix="p", user="eye").writes == ("p/+/cmd/surveillance/eye/ack_alarm",
                                                                             "p/+/cmd/surveillance/eye/selfcheck")
    assert grants("technician", prefix="p", user="t").writes == ("p/+/cmd/technician/t/ack_alarm",)
    assert grants("technician", prefix="p", user="t").denies == ("p/+/ratings", "p/+/ratings/open")
    dash = grants("dashboard", prefix="p", user="screen")
    assert (dash.reads, dash.denies, dash.writes) == (("p/#",), ("p/+/ratings", "p/+/ratings/open"), ())
    table = grants("table", prefix="p", user="t01")
    assert table.writes == tuple(f"p/t01/{k}" for k in ("status", "state", "events", "alarms", "history",
                                                         "analytics", "ratings", "ratings/open", "cmd/+/+/+/result"))
    assert grants("tracking", prefix="p", user="tr").writes == ()


def test_a_64_character_name_is_judged_by_its_characters_and_a_kind_two_roles_clear_names_both() -> None:
    assert check_user("X" * 64) == (f"user name {'X' * 64!r} holds 'X' (U+0058): only a-z 0-9 . _ - (lower case) "
                                    "are allowed")
    assert refusal("surveillance", "ack_alarm", alarm=("device_lost:shoe", True), reason="r") == (
        "role surveillance may not acknowledge a device alarm (device_lost:shoe; only pit, technician)")
