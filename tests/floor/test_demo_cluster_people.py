"""``tablectl demo --cluster 3`` has a person of each role its dashboard login offers (issue #35: only the
dashboard user could log in): pit, surveillance and technician, printed like the dashboard's login, each with
its role and password in the cluster's credentials."""

from __future__ import annotations

import tomllib
from pathlib import Path

from tests.floor.test_demo_cluster import _demo


async def test_the_floor_demo_has_a_pit_a_surveillance_and_a_technician_user(tmp_path: Path) -> None:
    state = tmp_path / "state"
    done = _demo(state, "--tables", "1", "--rounds", "1")
    assert done.returncode == 0, done.stderr
    assert "People (role user): pit pit.boss, surveillance eye.one, technician tech.one; passwords in " in done.stdout
    users = tomllib.loads((state / "cluster" / "credentials.toml").read_text())["users"]
    assert {users[u]["role"] for u in ("pit.boss", "eye.one", "tech.one")} == {"pit", "surveillance", "technician"}
