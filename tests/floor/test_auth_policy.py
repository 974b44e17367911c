"""The floor's auth callout, pure: each rule of controller/floor/auth_policy.py, the JWTs it signs, its files.

The same decisions are tried on a real cluster in test_client_ids.py; here each rule alone, and what the
answer carries (the user's account and permissions, signed by the issuer; a refusal that names the rule and
never the password).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from controller.floor.auth_policy import AuthPolicyError, FloorAuth, FloorUser, hash_password, reserved_client_ids
from controller.floor.auth_service import AuthServiceError, ServiceConfig, answer
from controller.floor.nats_config import permissions_of, write_nats_cluster
from controller.floor.nats_jwt import JwtError, decode_claims, encode_claims, new_account_seed, signer

PASSWORDS = {"t01": "table-secret-1", "jane.doe": "pit-secret-2", "recorder": "rec-secret-3"}


@pytest.fixture(scope="module")
def policy() -> FloorAuth:
    perms = {"publish": {"allow": ["tables.t01.state"]}, "subscribe": {"allow": ["tables.t01.>"]}}
    users = {u: FloorUser(u, role, hash_password(PASSWORDS[u]), types, perms)
             for u, role, types in (("t01", "table", ("MQTT",)), ("jane.doe", "pit", ("MQTT", "MQTT_WS")),
                                    ("recorder", "recorder", ("MQTT", "MQTT_WS")))}
    return FloorAuth(users, reserved_client_ids("tables", ["t01"], "recorder"))


def _decide(policy: FloorAuth, user: str | None, password: str | None, cid: str | None, kind: str = "mqtt") -> str:
    d = policy.decide(user=user, password=password, client_id=cid, client_type=kind)
    return "allowed" if d.allowed else d.reason


def test_the_reserved_ids_are_each_tables_session_and_witness_and_the_recorders() -> None:
    assert reserved_client_ids("tables", ["t01", "t02"], "recorder") == {
        "tablectl-tables-t01": "t01", "tablectl-tables-t01-witness": "t01",
        "tablectl-tables-t02": "t02", "tablectl-tables-t02-witness": "t02", "recorder": "recorder"}


def test_each_rule_refuses_and_names_itself(policy: FloorAuth) -> None:
    assert _decide(policy, "t01", PASSWORDS["t01"], "tablectl-tables-t01") == "allowed"
    assert _decide(policy, "jane.doe", PASSWORDS["jane.doe"], "jane-laptop") == "allowed"
    assert _decide(policy, "mallory", "x", "m") == "unknown user 'mallory'"
    assert _decide(policy, None, None, "m") == "no user name given"
    assert _decide(policy, "jane.doe", "guess", "j") == "wrong password for 'jane.doe'"
    assert _decide(policy, "jane.doe", None, "j") == "wrong password for 'jane.doe'"
    assert _decide(policy, "jane.doe", PASSWORDS["t01"], "j") == "wrong password for 'jane.doe'"
    assert "only MQTT" in _decide(policy, "jane.doe", PASSWORDS["jane.doe"], None, "nats")
    assert "only MQTT" in _decide(policy, "jane.doe", PASSWORDS["jane.doe"], "", "mqtt")
    taken = _decide(policy, "jane.doe", PASSWORDS["jane.doe"], "tablectl-tables-t01")
    assert taken.startswith("client id 'tablectl-tables-t01' is reserved for 't01'")
    assert "reserved for 't01'" in _decide(policy, "recorder", PASSWORDS["recorder"], "tablectl-tables-t01-witness")
    assert "reserved for 'recorder'" in _decide(policy, "t01", PASSWORDS["t01"], "recorder")
    for reason in (taken, _decide(policy, "jane.doe", "guess", "j")):
        assert not any(p in reason for p in PASSWORDS.values())


def test_a_checked_password_is_remembered_and_a_changed_hash_forgets_it(policy: FloorAuth) -> None:
    user = policy.users["jane.doe"]
    assert policy.password_ok(user, PASSWORDS["jane.doe"])
    assert policy.password_ok(user, PASSWORDS["jane.doe"])  # from memory
    rotated = FloorUser(user.name, user.role, hash_password("new"), user.connection_types, user.permissions)
    assert not policy.password_ok(rotated, PASSWORDS["jane.doe"])
    broken = FloorUser(user.name, user.role, "not a hash", user.connection_types, user.permissions)
    assert not policy.password_ok(broken, "anything")


def _request(user: str, password: str, cid: str, server_key: object) -> str:
    claims = {"sub": "ADVCSGN3", "aud": "nats-authorization-request",
              "nats": {"user_nkey": "UABC", "server_id": {"id": "NSERVER1", "name": "n1"},
                       "client_info": {"user": user, "type": "mqtt", "mqtt_id": cid, "kind": "Client"},
                       "connect_opts": {"user": user, "pass": password},
                       "type": "authorization_request", "version": 2}}
    return encode_claims(claims, server_key)


def test_an_answer_is_signed_by_the_issuer_and_grants_the_users_account_and_permissions(policy: FloorAuth) -> None:
    issuer, server = signer(new_account_seed()), signer(new_account_seed())
    token, refused = answer(_request("t01", PASSWORDS["t01"], "tablectl-tables-t01", server), policy, issuer)
    assert refused is None
    response = decode_claims(token, verify_with=issuer)
    assert (response["sub"], response["aud"], response["iss"]) == ("UABC", "NSERVER1", issuer.public_key.decode())
    user = decode_claims(response["nats"]["jwt"], verify_with=issuer)
    assert (user["sub"], user["aud"], user["name"]) == ("UABC", "FLOOR", "t01")
    assert user["nats"]["pub"] == {"allow": ["tables.t01.state"]}
    assert user["nats"]["allowed_connection_types"] == ["MQTT"]
    with pytest.raises(JwtError):
        decode_claims(token, verify_with=server)  # another key's signature does not check


def test_a_refusal_is_signed_too_and_carries_the_reason_not_a_jwt(policy: FloorAuth) -> None:
    issuer, server = signer(new_account_seed()), signer(new_account_seed())
    token, logged = answer(_request("jane.doe", PASSWORDS["jane.doe"], "recorder", server), policy, issuer)
    assert logged is not None and logged.startswith("user 'jane.doe' from ? with client id 'recorder' (mqtt): ")
    response = decode_claims(token, verify_with=issuer)
    assert response["nats"]["error"].startswith("client id 'recorder' is reserved for 'recorder'")
    assert logged.endswith(response["nats"]["error"]) and "jwt" not in response["nats"]
    assert PASSWORDS["jane.doe"] not in logged


@pytest.mark.parametrize("token", ["", "a.b", "not.a.jwt", "eyJhbGciOiJIUzI1NiJ9.e30.c2ln"])
def test_what_is_not_an_authorization_request_gets_no_answer(policy: FloorAuth, token: str) -> None:
    with pytest.raises(JwtError):
        answer(token, policy, signer(new_account_seed()))


def test_the_files_round_trip_and_a_damaged_one_is_named(tmp_path: Path, policy: FloorAuth) -> None:
    path = tmp_path / "users.json"
    path.write_text(policy.to_json())
    again = FloorAuth.load(path)
    assert again.users == policy.users and again.reserved == policy.reserved
    for text, says in (("{", "unreadable"), ('{"format": "x", "version": 1}', "not what"),
                       (policy.to_json().replace('"recorder": "recorder"', '"recorder": "ghost"'), "ghost")):
        path.write_text(text)
        with pytest.raises(AuthPolicyError, match=says):
            FloorAuth.load(path)
    with pytest.raises(AuthPolicyError, match="missing"):
        FloorAuth.load(tmp_path / "none.json")


def test_broker_config_writes_what_the_service_reads(tmp_path: Path) -> None:
    files = write_nats_cluster(tmp_path / "floor", ["t01"], people={"surveillance": ["sam"]})
    config = ServiceConfig.load(files.dir)
    assert list(config.servers) == ["n1", "n2", "n3"] and config.user == "floor-auth"
    sam = config.policy.users["sam"]
    assert dict(sam.permissions) == permissions_of(next(g for g in files.grants if g.user == "sam"))
    assert config.policy.password_ok(sam, files.passwords["sam"])
    assert json.loads((files.dir / "auth" / "users.json").read_text())["reserved_client_ids"]["recorder"] == "recorder"
    (files.dir / "auth" / "issuer.nk").write_text("SAnot-a-seed\n")
    with pytest.raises(AuthServiceError, match=r"issuer\.nk"):
        ServiceConfig.load(files.dir)


def test_floor_auth_without_its_files_exits_2_in_one_line(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "controller.cli", "floor-auth", "--dir", str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "service.toml: missing" in done.stderr and "older tablectl" in done.stderr
