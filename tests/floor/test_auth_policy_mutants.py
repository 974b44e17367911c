"""The floor's auth policy, at the edges a plausible wrong change would pass unseen (issue 39): a wrong password
tried twice, a table id long enough that its client ids are cut, and each rule's refusal as it is worded.

Pure, like test_auth_policy.py: each case asks :class:`FloorAuth` directly.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from controller.floor.auth_policy import AuthPolicyError, FloorAuth, FloorUser, hash_password, reserved_client_ids
from controller.mqtt.addresses import client_id_for

PASSWORDS = {"t01": "table-secret-1", "jane.doe": "pit-secret-2", "recorder": "rec-secret-3"}
PERMS = {"publish": {"allow": ["tables.t01.state"]}, "subscribe": {"allow": ["tables.t01.>"]}}


@pytest.fixture(scope="module")
def users() -> dict[str, FloorUser]:
    return {u: FloorUser(u, role, hash_password(PASSWORDS[u]), ("MQTT",), PERMS)
            for u, role in (("t01", "table"), ("jane.doe", "pit"), ("recorder", "recorder"))}


def _policy(users: dict[str, FloorUser], tables: list[str] | None = None) -> FloorAuth:
    """A fresh policy (its own memory of checked passwords) over ``users``."""
    return FloorAuth(users, reserved_client_ids("tables", tables or ["t01"], "recorder"))


def _decide(policy: FloorAuth, user: str, password: str, cid: str = "jane-laptop") -> str:
    d = policy.decide(user=user, password=password, client_id=cid, client_type="mqtt")
    return "allowed" if d.allowed else d.reason


def test_a_wrong_password_tried_again_is_refused_again(users: dict[str, FloorUser]) -> None:
    policy = _policy(users)
    for _ in range(3):
        assert _decide(policy, "jane.doe", "guess") == "wrong password for 'jane.doe'"
        assert not policy.password_ok(users["jane.doe"], "guess")
    assert _decide(policy, "jane.doe", PASSWORDS["jane.doe"]) == "allowed"
    assert _decide(policy, "jane.doe", "guess") == "wrong password for 'jane.doe'", "a good check vouches for no other"


def test_a_good_password_remembered_for_one_user_lets_no_other_user_in(users: dict[str, FloorUser]) -> None:
    policy = _policy(users)
    assert _decide(policy, "jane.doe", PASSWORDS["jane.doe"]) == "allowed"
    assert _decide(policy, "t01", PASSWORDS["jane.doe"], "tablectl-tables-t01") == "wrong password for 't01'"
    assert _decide(policy, "recorder", PASSWORDS["jane.doe"], "recorder") == "wrong password for 'recorder'"
    assert _decide(policy, "jane.doe", PASSWORDS["jane.doe"]) == "allowed", "and it is still remembered"


def test_an_empty_password_is_refused_even_against_a_remembered_one(users: dict[str, FloorUser]) -> None:
    policy = _policy(users)
    assert _decide(policy, "jane.doe", PASSWORDS["jane.doe"]) == "allowed"
    assert _decide(policy, "jane.doe", "") == "wrong password for 'jane.doe'"


@pytest.mark.parametrize("length", [40, 46, 47, 48, 60, 64])
def test_the_witness_id_of_a_long_table_id_is_reserved_as_the_witness_makes_it(users: dict[str, FloorUser],
                                                                               length: int) -> None:
    """The witness's client id is the session id cut to 55 characters plus ``-witness`` (controller/mqtt/
    witness.py): whatever the table id's length, that id is the table's, and nobody else may take it."""
    table = ("t" * length)[:length]
    session = client_id_for("tables", table)
    witness = f"{session[:55]}-witness"
    reserved = reserved_client_ids("tables", [table], "recorder")
    assert reserved == {session: table, witness: table, "recorder": "recorder"}
    assert len(witness) <= 64
    policy = FloorAuth({**users, table: FloorUser(table, "table", users["t01"].password_hash, ("MQTT",), PERMS)},
                       reserved)
    assert _decide(policy, "jane.doe", PASSWORDS["jane.doe"], witness).startswith(
        f"client id {witness!r} is reserved for {table!r}")
    assert _decide(policy, "jane.doe", PASSWORDS["jane.doe"], session).startswith(
        f"client id {session!r} is reserved for {table!r}")
    assert _decide(policy, table, PASSWORDS["t01"], witness) == "allowed"
    assert _decide(policy, table, PASSWORDS["t01"], session) == "allowed"


def test_a_table_may_not_take_another_tables_ids_nor_the_recorder_anothers(users: dict[str, FloorUser]) -> None:
    t02 = FloorUser("t02", "table", users["t01"].password_hash, ("MQTT",), PERMS)
    policy = FloorAuth({**users, "t02": t02}, reserved_client_ids("tables", ["t01", "t02"], "recorder"))
    for cid in ("tablectl-tables-t01", "tablectl-tables-t01-witness"):
        assert _decide(policy, "t02", PASSWORDS["t01"], cid).startswith(f"client id {cid!r} is reserved for 't01'")
    for cid in ("tablectl-tables-t02", "tablectl-tables-t02-witness"):
        assert _decide(policy, "t02", PASSWORDS["t01"], cid) == "allowed"
    refused = _decide(policy, "jane.doe", PASSWORDS["jane.doe"], "recorder")
    assert refused.startswith("client id 'recorder' is reserved for 'recorder': 'jane.doe' may not take it")


@pytest.mark.parametrize("client_type", ["nats", "websocket", "MQTT", None])
def test_only_an_mqtt_connection_is_allowed_even_with_the_right_password(users: dict[str, FloorUser],
                                                                        client_type: str | None) -> None:
    d = _policy(users).decide(user="jane.doe", password=PASSWORDS["jane.doe"], client_id="j", client_type=client_type)
    assert not d.allowed and d.reason.startswith("'jane.doe': only MQTT connections")
    assert d.user is None


def test_a_refusal_is_not_allowed_and_names_no_user(users: dict[str, FloorUser]) -> None:
    for user, password in (("mallory", "x"), ("jane.doe", "guess")):
        d = _policy(users).decide(user=user, password=password, client_id="j", client_type="mqtt")
        assert d.allowed is False and d.user is None


def test_a_reserved_id_refusal_says_whose_it_is_and_why_in_full(users: dict[str, FloorUser]) -> None:
    assert _decide(_policy(users), "jane.doe", PASSWORDS["jane.doe"], "recorder") == (
        "client id 'recorder' is reserved for 'recorder': 'jane.doe' may not take it (DESIGN.md, 'Operators and "
        "roles': no user may take a table's client id; nor the recorder's, whose session holds the events it has "
        "not recorded)")


def test_an_allowed_users_claims_are_its_permissions_unlimited_and_its_connection_types(
        users: dict[str, FloorUser]) -> None:
    d = _policy(users).decide(user="t01", password=PASSWORDS["t01"], client_id="tablectl-tables-t01",
                              client_type="mqtt")
    assert d.allowed is True and d.reason == "" and d.user is users["t01"]
    assert d.user_claims("FLOOR") == {
        "name": "t01", "aud": "FLOOR",
        "nats": {"pub": {"allow": ["tables.t01.state"]}, "sub": {"allow": ["tables.t01.>"]},
                 "subs": -1, "data": -1, "payload": -1, "allowed_connection_types": ["MQTT"],
                 "type": "user", "version": 2}}


def test_a_remembered_password_is_not_hashed_again(users: dict[str, FloorUser],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import bcrypt

    checks: list[bytes] = []
    real = bcrypt.checkpw

    def counted(password: bytes, hashed: bytes) -> bool:
        checks.append(password)
        return real(password, hashed)

    monkeypatch.setattr(bcrypt, "checkpw", counted)
    policy = _policy(users)
    for _ in range(3):
        assert policy.password_ok(users["jane.doe"], PASSWORDS["jane.doe"])
        assert not policy.password_ok(users["jane.doe"], "guess")
    assert checks == [PASSWORDS["jane.doe"].encode()] + [b"guess"] * 3, "the good one once, every wrong one each time"


def test_the_users_file_keeps_its_account_and_refuses_another_version(users: dict[str, FloorUser],
                                                                       tmp_path: Path) -> None:
    path = tmp_path / "users.json"
    written = FloorAuth(users, reserved_client_ids("tables", ["t01"], "recorder"), "CASINO2").to_json()
    assert written.startswith('{\n "format": "tablectl-floor-users",\n "version": 1,\n "account": "CASINO2",\n')
    path.write_text(written)
    assert FloorAuth.load(path).account == "CASINO2"
    for version in (0, 2, "1"):
        path.write_text(written.replace('"version": 1', f'"version": {json.dumps(version)}'))
        with pytest.raises(AuthPolicyError, match="not what `tablectl broker-config --engine nats` writes"):
            FloorAuth.load(path)
