"""The recorder's tests run each case on both backends: an SQLite file and a fresh PostgreSQL database."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A URL where no recorder database is yet: an SQLite path, or a fresh PostgreSQL database."""
    if request.param == "sqlite":
        return str(tmp_path / "recorder.db")
    url: str = request.getfixturevalue("postgres_url")
    return url
