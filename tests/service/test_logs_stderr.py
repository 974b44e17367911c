"""The program's log lines go to the stderr of the moment (controller.service.logs.configure_logging)."""

from __future__ import annotations

import io
import logging
import sys

import pytest

from controller.service.logs import configure_logging


def test_logs_follow_stderr_after_it_is_replaced_and_the_first_one_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A handler that held the stderr it was made with wrote "--- Logging error ---" tracebacks once that
    stream was replaced and closed (a fresh-clone CI failure: a tablectl run in-process, then another test)."""
    first, second = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stderr", first)
    configure_logging("INFO", fmt="text")
    log = logging.getLogger("controller.test")
    log.warning("one")
    first.close()
    monkeypatch.setattr(sys, "stderr", second)
    log.warning("two")
    assert second.getvalue().rstrip().endswith("controller.test: two")
    assert "Logging error" not in second.getvalue()
