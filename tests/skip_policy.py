"""In CI a skipped test is a failure: CI installs Mosquitto, Chromium and the compiled engine, so a test that
skips there for want of one of them hides a missing install step (``CI=true`` is set by ``.ci/run``'s callers;
a developer's machine may skip)."""

from __future__ import annotations

import os
from collections.abc import Generator
from typing import Any

import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if report.skipped and os.environ.get("CI") == "true" and not hasattr(report, "wasxfail"):
        why = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped in CI, which must have everything installed (CI=true): {why}"
