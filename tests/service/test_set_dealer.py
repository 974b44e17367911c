"""``set_dealer`` (DESIGN "The dealer on duty"): the pit's command, parsed and checked before the table sees it."""

from __future__ import annotations

import pytest

from controller.contract.results import CommandResult
from controller.contract.topics import CommandTopic
from controller.game.events import DealerAssigned
from controller.service.commands import SetDealer, check_sender, parse_command


def test_a_dealer_id_or_null_becomes_the_engine_input_by_the_sender() -> None:
    cmd = parse_command("set_dealer", b'{"dealer": "d.ames", "id": "r-9"}', user="s.jones")
    assert isinstance(cmd, SetDealer) and cmd.id == "r-9"
    assert cmd.to_event(5.0) == DealerAssigned(dealer="d.ames", by="s.jones")
    out = parse_command("set_dealer", b'{"dealer": null}', user="s.jones")
    assert isinstance(out, SetDealer) and out.to_event(5.0) == DealerAssigned(dealer=None, by="s.jones")


@pytest.mark.parametrize(("payload", "needle"), [
    (b"{}", "dealer: required field missing"),  # a sign-out is said (null), never implied
    (b'{"dealer": "D.Ames"}', "dealer: dealer id 'D.Ames' holds 'D' (U+0044): only a-z 0-9 . _ - (lower case)"),
    (b'{"dealer": ""}', "dealer: dealer id is blank"),
    (b'{"dealer": "' + b"d" * 65 + b'"}', "dealer: dealer id is 65 characters long (at most 64)"),
    (b'{"dealer": 7}', "dealer: dealer id must be a string"),
    (b'{"dealer": ["d.ames"]}', "dealer: dealer id must be a string"),
    (b'{"dealer": "d.ames", "by": "badge"}', "by: unknown field"),  # the sender is who assigns
    (b'{"dealer": "d.ames", "operator": "a.li"}', "is not the sender"),
])
def test_a_bad_dealer_is_refused_in_one_line_naming_the_rule(payload: bytes, needle: str) -> None:
    result = parse_command("set_dealer", payload, user="s.jones")
    assert isinstance(result, CommandResult) and result.ok is False
    assert result.error is not None and needle in result.error and "\n" not in result.error, result.error
    assert result.operator == "s.jones"


@pytest.mark.parametrize("role", ["surveillance", "technician", "dashboard"])
def test_no_role_but_the_pit_may_send_it(role: str) -> None:
    result = check_sender(CommandTopic(role, "eye.one", "set_dealer"), b'{"dealer": "d.ames"}')
    assert result is not None and result.ok is False and "set_dealer" in (result.error or "")
    assert check_sender(CommandTopic("pit", "s.jones", "set_dealer"), b'{"dealer": "d.ames"}') is None
