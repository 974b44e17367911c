"""MQTT commands: valid ones become engine events; bad ones are refused naming field and reason."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.contract.results import CommandResult, refused
from controller.contract.topics import CommandTopic
from controller.game.events import AlarmAcknowledged, DecksChanged, LimitsSet, TableClosed, TableOpened
from controller.service.commands import (
    AckAlarm,
    Close,
    DecksChangedCmd,
    Open,
    SetLimits,
    accepted,
    check_sender,
    parse_command,
)


def _refusal(verb: str, payload: bytes | str, user: str = "op") -> dict[str, object]:
    result = parse_command(verb, payload, user=user)
    assert isinstance(result, CommandResult), f"{verb} {payload!r} was accepted: {result!r}"
    out = result.to_json()
    assert out["ok"] is False
    assert out["verb"] == verb
    return out


def test_set_limits_parses_money_strings_and_whole_dollars_to_cents() -> None:
    cmd = parse_command("set_limits", b'{"min_bet": "7.50", "max_bet": 500, "id": "r-1", "operator": "s.jones"}',
                        user="s.jones")
    assert isinstance(cmd, SetLimits)
    assert (cmd.min_bet, cmd.max_bet, cmd.id) == (750, 50000, "r-1")
    assert cmd.to_event(1.0) == LimitsSet(min_bet=750, max_bet=50000, operator="s.jones")
    assert accepted(cmd, seq=12).to_json() == {"ok": True, "verb": "set_limits", "id": "r-1", "seq": 12,
                                               "operator": "s.jones"}


@pytest.mark.parametrize(
    ("payload", "field", "reason"),
    [
        ('{"min_bet": 5.5, "max_bet": "10", "operator": "op"}', "min_bet", "not a float"),
        ('{"min_bet": "5", "max_bet": "1.234", "operator": "op"}', "max_bet", "at most two places"),
        ('{"min_bet": "5", "operator": "op"}', "max_bet", "required field missing"),
        ('{"min_bet": "50", "max_bet": "10", "operator": "op"}', "max_bet", "must not be below min_bet (50)"),
        ('{"min_bet": "0", "max_bet": "10", "operator": "op"}', "min_bet", "must be positive"),
        ('{"min_bet": "5", "max_bet": "10", "bogus": 1, "operator": "op"}', "bogus", "unknown field"),
    ],
)
def test_set_limits_refusals_name_the_field_and_reason(payload: str, field: str, reason: str) -> None:
    error = str(_refusal("set_limits", payload)["error"])
    assert error.startswith(f"{field}:"), error
    assert reason in error


def test_refusal_echoes_the_request_id() -> None:
    out = _refusal("ack_alarm", '{"alarm_id": "seven", "id": 42, "operator": "s.jones"}', user="s.jones")
    assert out["id"] == 42 and out["operator"] == "s.jones"
    assert str(out["error"]).startswith("alarm_id:")


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (b"{not json", "malformed JSON"),
        (b"\xff\xfe", "not UTF-8"),
        (b"[1, 2]", "must be a JSON object, not list"),
        (b'"open"', "must be a JSON object, not str"),
        (b"{" + b" " * 5000 + b"}", "payload too large"),
    ],
)
def test_malformed_payloads_are_refused_with_a_reason(payload: bytes, reason: str) -> None:
    assert reason in str(_refusal("close", payload)["error"])


def test_unknown_verb_is_refused_listing_known_ones() -> None:
    error = str(_refusal("explode", b"{}")["error"])
    assert "unknown command 'explode'" in error
    assert "set_limits" in error


def test_an_unknown_verb_still_echoes_the_request_id() -> None:
    """A pit system matches answers by id: the soak waited in vain for the answer to cmd/explode."""
    result = _refusal("explode", b'{"id": "r-9"}')
    assert result["id"] == "r-9" and result["ok"] is False


def test_each_verb_maps_to_its_engine_event() -> None:
    opened = parse_command("open", b'{"operator": "op"}', user="op")
    assert isinstance(opened, Open)
    assert opened.to_event(10.0) == TableOpened(now=10.0, deck_set="A", operator="op")
    closed = parse_command("close", b'{"operator": "op"}', user="op")
    assert not isinstance(closed, CommandResult)
    assert closed.to_event(11.0) == TableClosed(now=11.0, operator="op")
    ack = parse_command("ack_alarm", b'{"alarm_id": 3, "operator": "op"}', user="op")
    assert isinstance(ack, AckAlarm)
    assert ack.to_event(0) == AlarmAcknowledged(alarm_id=3, operator="op")
    ack = parse_command("ack_alarm", b'{"alarm_id": 3, "operator": "op", "reason": "card recounted"}', user="op")
    assert isinstance(ack, AckAlarm)
    assert ack.to_event(0) == AlarmAcknowledged(alarm_id=3, operator="op", reason="card recounted")
    decks = parse_command("decks_changed", b'{"deck_set": "B", "operator": "op"}', user="op")
    assert isinstance(decks, DecksChangedCmd)
    assert decks.to_event(12.0) == DecksChanged(now=12.0, deck_set="B", operator="op")


@pytest.mark.parametrize("payload", ['{"alarm_id": 0}', '{"alarm_id": true}',
                                     '{"alarm_id": "3"}', '{}'])
def test_ack_alarm_needs_a_positive_integer_id(payload: str) -> None:
    assert str(_refusal("ack_alarm", payload)["error"]).startswith("alarm_id:")


def test_deck_set_must_be_a_short_id() -> None:
    assert str(_refusal("decks_changed", '{"deck_set": "a b"}')["error"]).startswith("deck_set:")
    assert str(_refusal("open", '{"deck_set": ""}')["error"]).startswith("deck_set:")


def test_refused_result_payload_is_json() -> None:
    assert json.loads(refused("close", "table busy", "x").payload()) == {
        "ok": False,
        "verb": "close",
        "id": "x",
        "error": "table busy",
    }


@given(st.binary(max_size=300))
def test_arbitrary_bytes_never_raise(payload: bytes) -> None:
    for verb in ("open", "close", "set_limits", "ack_alarm", "decks_changed"):
        result = parse_command(verb, payload, user="op")
        if isinstance(result, CommandResult):
            assert result.ok is False and result.error


@given(st.dictionaries(st.sampled_from(["min_bet", "max_bet", "id", "x", "operator"]),
                       st.none() | st.integers() | st.text()))
def test_arbitrary_objects_never_raise(data: dict[str, object]) -> None:
    result = parse_command("set_limits", json.dumps(data), user="op")
    if isinstance(result, CommandResult):
        assert result.error
    else:
        assert 0 < result.min_bet <= result.max_bet


# ---- operators (DESIGN.md, "Operators and roles") -------------------------------------------------


@pytest.mark.parametrize(
    ("verb", "payload"),
    [("open", b""), ("close", b"{}"), ("set_limits", b'{"min_bet": "5", "max_bet": "500"}'),
     ("ack_alarm", b'{"alarm_id": 1, "reason": "checked"}'), ("decks_changed", b'{"deck_set": "B"}')],
)
def test_the_operator_is_the_topics_user_when_the_payload_names_none(verb: str, payload: bytes) -> None:
    cmd = parse_command(verb, payload, user="s.jones")
    assert not isinstance(cmd, CommandResult), cmd
    assert cmd.operator == "s.jones" and getattr(cmd.to_event(1.0), "operator", None) == "s.jones"
    assert accepted(cmd, seq=3).to_json()["operator"] == "s.jones"


@pytest.mark.parametrize("operator", ['"   "', '"a.li"', '"S.JONES"', '"s.j\u043enes"', "7", "null", '""'])
def test_a_payload_operator_other_than_the_sender_is_refused(operator: str) -> None:
    out = _refusal("close", f'{{"operator": {operator}, "id": "r-1"}}', user="s.jones")
    assert str(out["error"]).startswith("operator:") and "is not the sender 's.jones'" in str(out["error"]), out
    assert out["operator"] == "s.jones" and out["id"] == "r-1"


def test_a_payload_operator_equal_to_the_sender_is_taken() -> None:
    cmd = parse_command("close", b'{"operator": "s.jones"}', user="s.jones")
    assert isinstance(cmd, Close) and cmd.operator == "s.jones"


@pytest.mark.parametrize(("user", "needle"), [
    ("   ", "blank"), ("", "blank"), ("S.Jones", "'S'"), ("s.j\u043enes", "U+043E"), ("x" * 65, "65 characters"),
    ("tab\tbed", "U+0009"),
])
def test_a_sender_that_is_no_user_name_is_refused_before_anything_else(user: str, needle: str) -> None:
    out = _refusal("close", b"\xff not even UTF-8", user=user)
    assert str(out["error"]).startswith("sender refused:") and needle in str(out["error"]), out
    assert "operator" not in out


@pytest.mark.parametrize(("role", "verb", "needle"), [
    ("surveillance", "close", "may not send close"), ("technician", "set_limits", "may not send set_limits"),
    ("dashboard", "open", "sends no commands"), ("admin", "close", "sends no commands"),
    ("Pit", "close", "sends no commands"),
])
def test_a_role_that_may_not_send_the_verb_is_refused(role: str, verb: str, needle: str) -> None:
    result = check_sender(CommandTopic(role, "s.jones", verb))
    assert result is not None and not result.ok and needle in str(result.error)
    assert check_sender(CommandTopic("pit", "s.jones", "close")) is None
    assert check_sender(CommandTopic("surveillance", "eye.1", "ack_alarm")) is None


@pytest.mark.parametrize(("payload", "needle"), [
    (b'{"alarm_id": 1, "alarm_id": 2}', "duplicate key 'alarm_id'"),
    (b'{"operator": "s.jones", "operator": "a.li"}', "duplicate key 'operator'"),
    (b'{"id": {"x": 1, "x": 2}}', "duplicate key 'x'"),
    (b"[" * 2040 + b"]" * 2040, "nested 2040 deep"),
    (b'{"id": ' + b"[" * 9 + b"]" * 9 + b"}", "nested 10 deep"),
    (b'{"min_bet": NaN, "max_bet": "5"}', "NaN is not a number"),
    (b'{"min_bet": Infinity, "max_bet": "5"}', "Infinity is not a number"),
])
def test_duplicate_keys_absurd_nesting_and_non_numbers_are_refused_in_one_line(payload: bytes, needle: str) -> None:
    out = _refusal("set_limits", payload, user="s.jones")
    error = str(out["error"])
    assert error.startswith("malformed JSON:") and needle in error and "\n" not in error, error


def test_brackets_inside_strings_are_not_nesting() -> None:
    cmd = parse_command("ack_alarm", json.dumps({"alarm_id": 1, "reason": "[[[[[[[[[[[[{{{{{{{{{{"}), user="eye")
    assert isinstance(cmd, AckAlarm) and cmd.reason == "[[[[[[[[[[[[{{{{{{{{{{"


@pytest.mark.parametrize(("reason", "why"), [('""', "1 to 200"), ('"' + "r" * 201 + '"', "1 to 200"),
                                             ('"   "', "blank"), ('"\\u00a0"', "printable"),
                                             ('"two\\nlines"', "printable"), ("12", "valid string")])
def test_an_acknowledgement_reason_is_1_to_200_printable_characters(reason: str, why: str) -> None:
    error = str(_refusal("ack_alarm", f'{{"alarm_id": 2, "reason": {reason}}}')["error"])
    assert error.startswith("reason:") and why in error, error


def test_only_ack_alarm_takes_a_reason() -> None:
    assert _refusal("close", '{"reason": "end of shift"}')["error"] == "reason: unknown field"


def test_a_sender_refusal_stays_short_whatever_the_topic_holds() -> None:
    """A topic level may be 65,535 bytes: the answer and the journaled refusal quote at most 64 characters of it."""
    for command in (CommandTopic("pit", "s.jones", "x" * 5000), CommandTopic("p" * 5000, "s.jones", "close"),
                    CommandTopic("pit", "u" * 5000, "close")):
        result = check_sender(command)
        assert result is not None and len(result.payload()) < 400, result
    unknown = check_sender(CommandTopic("pit", "s.jones", "explode"), b'{"id": "r-9"}')
    assert unknown is not None and unknown.id == "r-9"
    assert unknown.error == "explode refused: unknown command 'explode'; known: open, close, set_limits, ack_alarm, " \
                            "decks_changed, selfcheck, set_dealer"
