"""``tablectl conformance PROFILE --html FILE``: the printable evidence opens in Chromium, shows every clause with its
options, bounds and scenarios, fetches nothing, and prints to PDF (what a lab attaches)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from playwright.sync_api import Page

TABLECTL = [sys.executable, "-m", "controller.cli"]


@pytest.mark.parametrize("profile", ["ny-4620", "european-6d"])
def test_the_conformance_page_shows_each_clause_and_fetches_nothing(profile: str, tmp_path: Path, page: Page) -> None:
    evidence = json.loads(subprocess.run([*TABLECTL, "conformance", profile, "--json"], capture_output=True,
                                         text=True, check=True).stdout)
    out = tmp_path / f"{profile}.html"
    done = subprocess.run([*TABLECTL, "conformance", profile, "--html", str(out)], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == f"conformance evidence written to {out}", done.stderr
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(out.as_uri())
    assert requests == [out.as_uri()], f"a self-contained page fetches nothing else: {requests}"
    summary = page.locator("#summary td").all_inner_texts()
    assert summary == [str(evidence["summary"][k]) for k in ("clauses", "covered", "scenarios", "failed")]
    rows = page.locator("#clauses tr[data-clause]")
    assert rows.count() == len(evidence["clauses"])
    for i, clause in enumerate(evidence["clauses"]):
        row = rows.nth(i)
        assert row.get_attribute("data-clause") == clause["clause"]
        text = row.inner_text()
        for option in clause["options"]:
            assert f"{option['option']} = {option['value']}" in text
            if option["bound"]:
                assert option["bound"] in text
        for file in clause["scenarios"]:
            assert file in text
        assert "pass" in text and "FAIL" not in text
    assert page.locator("#uncovered").inner_text().startswith("none")
    assert page.locator("#failed").inner_text().startswith("none")
    assert page.locator("#scenarios tr[data-file]").count() == len(evidence["scenarios"])
    assert page.pdf(format="A4")[:4] == b"%PDF", "the page prints"
