"""Refusals a person reads (issue #35): an alarm's id sent as a string, and the article before an alarm's kind."""

from __future__ import annotations

import pytest

from controller.contract.results import CommandResult
from controller.contract.roles import refusal
from controller.service.commands import parse_command


@pytest.mark.parametrize(("payload", "says"), [
    (b'{"alarm_id": "1"}', 'alarm_id: the alarm\'s number, as a JSON number such as 7 (not "1")'),
    (b'{"alarm_id": 1.5}', "alarm_id: the alarm's number, as a JSON number such as 7 (not 1.5)"),
    (b'{"alarm_id": 0}', "alarm_id: the alarm's number: alarms are numbered from 1 (not 0)"),
])
def test_an_alarm_id_that_is_not_a_number_is_refused_in_words(payload: bytes, says: str) -> None:
    result = parse_command("ack_alarm", payload, user="s.jones")
    assert isinstance(result, CommandResult) and result.error == says
    assert "Input should be" not in (result.error or "")


def test_an_alarm_id_that_is_a_number_is_taken() -> None:
    assert not isinstance(parse_command("ack_alarm", b'{"alarm_id": 3}', user="s.jones"), CommandResult)


def test_the_kind_of_an_alarm_takes_its_article() -> None:
    why = refusal("pit", "ack_alarm", alarm=("integrity_card_count", True), reason="checked")
    assert why is not None and "may not acknowledge an integrity alarm" in why, why
