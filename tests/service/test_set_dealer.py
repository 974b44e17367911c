"""``set_dealer`` (DESIGN "The dealer on duty"): the pit's command, parsed and checked before the table sees it; the
setting ``require_dealer``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from controller.contract.results import CommandResult
from controller.contract.topics import CommandTopic
from controller.game import events as ev
from controller.game.events import DealerAssigned
from controller.service.commands import SetDealer, check_sender, parse_command
from controller.service.settings import ConfigError, load_settings
from tests.service.test_settings import MINIMAL


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


def test_require_dealer_is_a_setting_off_by_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for key in [k for k in os.environ if k.upper().startswith("TABLECTL_")]:
        monkeypatch.delenv(key)
    path = tmp_path / "t.toml"
    path.write_text(MINIMAL)
    assert load_settings(path).require_dealer is False
    path.write_text("require_dealer = true\n" + MINIMAL)
    assert load_settings(path).require_dealer is True
    path.write_text('require_dealer = "sometimes"\n' + MINIMAL)
    with pytest.raises(ConfigError) as info:
        load_settings(path)
    assert "require_dealer" in str(info.value) and "TABLECTL_REQUIRE_DEALER" in str(info.value)
    assert "\n" not in str(info.value)


async def test_a_relief_sent_during_a_round_is_accepted_as_pending_and_journaled_by_its_sender(tmp_path: Path) -> None:
    from controller.journal import Journal
    from controller.profiles import load_rules
    from controller.service.core import TableCore
    from controller.service.table_service import TableService
    from drivers.group import DeviceGroup

    rules = load_rules("nj-shoe")
    with Journal(tmp_path / "t01.journal") as journal:
        service = TableService(TableCore("t01", rules, journal), DeviceGroup())
        for event in (ev.TableOpened(now=1.0), ev.ShuffleDone(count=rules.cards_in_shoe), ev.CardDrawn("2C")):
            service.core.apply(event)  # the devices' inputs (no device here to ask anything of)

        async def send(body: bytes) -> dict[str, object]:
            return (await service.on_command(CommandTopic("pit", "s.jones", "set_dealer"), body)).to_json()

        assert await send(b'{"dealer": "d.ames", "id": 1}') == {"ok": True, "verb": "set_dealer", "id": 1,
                                                                  "operator": "s.jones", "seq": service.core.seq}
        for event in (ev.BetPlaced(1, 1000), ev.NoMoreBets(), *(ev.CardDrawn(c) for c in ("TS", "7H", "KD", "TD"))):
            service.core.apply(event)
        held = await send(b'{"dealer": "d.brun"}')
        assert held["ok"] is True and held["pending"] == "takes effect when round 1 settles", held
        assert service.table.dealer_on_duty == "d.ames"
        bad = await send(b'{"dealer": "d brun"}')
        assert bad["ok"] is False and "dealer id 'd brun' holds ' '" in str(bad["error"])
        service.core.apply(ev.Decision(spot=1, action="stand"))
        assert service.table.dealer_on_duty == "d.brun"
        inputs = [r.event for r in journal.inputs_since(0) if r.event["type"] == "dealer_assigned"]
        assert inputs == [{"type": "dealer_assigned", "dealer": "d.ames", "by": "s.jones"},
                          {"type": "dealer_assigned", "dealer": "d.brun", "by": "s.jones"}]
        refusals = [json.loads(r.body) for r in journal.records(1) if '"command_refused"' in r.body]
        assert [(r["verb"], r["operator"]) for r in refusals] == [("set_dealer", "s.jones")]
