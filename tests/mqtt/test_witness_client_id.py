"""The witness reader's client id against the floor's reserved ids (controller/floor/auth_policy.py).

A demo on the floor reads its one table's retained ``state`` as ``dashboard``; with the table's own reserved
witness id the floor's auth service refused it, so a one-table ``demo --cluster`` resume could not ask its
broker witness. The table itself, reading its own witnesses, keeps its reserved id.
"""

from __future__ import annotations

from controller.floor.auth_policy import reserved_client_ids
from controller.mqtt.witness import reader_client_id

PREFIX = "tables"


def test_another_user_reading_one_tables_witnesses_takes_no_id_reserved_for_it() -> None:
    reserved = reserved_client_ids(PREFIX, ["t01", "t02"], "recorder")
    for user in ("dashboard", "s.jones", "t02"):
        assert reader_client_id(PREFIX, {"t01"}, user) not in reserved, user


def test_the_table_reading_its_own_witnesses_uses_the_id_reserved_for_it() -> None:
    reserved = reserved_client_ids(PREFIX, ["t01"], "recorder")
    assert reserved[reader_client_id(PREFIX, {"t01"}, "t01")] == "t01"
    assert reserved[reader_client_id(PREFIX, {"t01"}, None)] == "t01"  # a broker without logins: as before


def test_a_reader_of_many_tables_is_the_pits() -> None:
    reserved = reserved_client_ids(PREFIX, ["t01", "t02"], "recorder")
    assert reader_client_id(PREFIX, {"t01", "t02"}, "dashboard") not in reserved
    assert reader_client_id(PREFIX, {"t01", "t02"}, "dashboard").endswith("-pit-witness")
