"""The recorder's tests run each case on both backends: an SQLite file and a fresh PostgreSQL database; the
readers' tests read a recorder's database filled from a real demo's journals (tests/recorder/floor.py)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.cli import main as tablectl
from controller.recorder.store import open_store
from tests.recorder.floor import record

#: rounds each demo table plays
ROUNDS = 6
#: the pits of the demo's tables, as their ``state`` names them
PITS = {"t01": "pit-1", "t02": "pit-1", "t03": None}


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A URL where no recorder database is yet: an SQLite path, or a fresh PostgreSQL database."""
    if request.param == "sqlite":
        return str(tmp_path / "recorder.db")
    url: str = request.getfixturevalue("postgres_url")
    return url


@pytest.fixture(scope="session")
def played(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A demo state dir: three tables, ROUNDS rounds each, carded players seated (real journals, real key)."""
    mp = pytest.MonkeyPatch()
    mp.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("xdg")))
    state = tmp_path_factory.mktemp("played") / "state"
    try:
        assert tablectl(["demo", "--tables", "3", "--rounds", str(ROUNDS), "--seed", "11", "--speed", "max",
                         "--state-dir", str(state), "--no-dashboard", "--quiet"]) == 0
        yield state
    finally:
        mp.undo()


@pytest.fixture
def state(played: Path, tmp_path: Path) -> Path:
    """A copy of the played state dir, this test's to change."""
    copy = tmp_path / "state"
    shutil.copytree(played, copy)
    return copy


@pytest.fixture(scope="session", params=["sqlite", "postgresql"])
def recorded(request: pytest.FixtureRequest, played: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The recorder's database of the demo as it was played (every event, head and rating), one per backend for
    the session: the readers' tests only read it. Its URL."""
    if request.param == "sqlite":
        url = str(tmp_path_factory.mktemp("recorded") / "recorder.db")
    else:
        url = request.getfixturevalue("postgres_server").fresh_database()
    with open_store(url) as store:
        record(store, played, PITS)
    return url


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which reads the groups into the node ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The readers' tests run in one xdist worker (``--dist loadgroup``): the session's demo and filled databases
    are then made once, not once per worker."""
    for item in items:
        if "played" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("recorder-played"))
