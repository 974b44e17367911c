"""``tablectl conformance`` on the installed package, as a lab runs it (issue 36): the golden scenarios are package
data, so every shipped profile's evidence comes out of a plain wheel install, from any working directory, with no
checkout beside it. Was: ``.../site-packages/tests/scenarios: no such folder of golden scenarios``, exit 2."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from controller.profiles import available_profiles
from tests.installed_package import InstalledPackage

pytestmark = [pytest.mark.xdist_group("installed-package"), pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parent.parent


def test_the_wheel_carries_every_golden_scenario(installed_package: InstalledPackage) -> None:
    names = set(zipfile.ZipFile(installed_package.wheel).namelist())
    shipped = {f"controller/conformance_scenarios/{p.name}"
               for p in (ROOT / "controller" / "conformance_scenarios").glob("*.json")}
    assert shipped and shipped <= names


def test_every_shipped_profile_conforms_from_the_installed_package(installed_package: InstalledPackage,
                                                                   tmp_path: Path) -> None:
    listed = installed_package.run("profiles", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert {line.split()[0] for line in listed.stdout.splitlines() if line.strip()} == set(available_profiles())
    for profile in available_profiles():
        done = installed_package.run("conformance", profile, "--json", cwd=tmp_path)
        assert done.returncode == 0, f"{profile}: {done.stderr}"
        report = json.loads(done.stdout)
        assert report["uncovered"] == [] and report["failed"] == [], profile
        assert report["summary"]["scenarios"] > 0
        assert Path(report["scenarios_dir"]).is_relative_to(installed_package.site_packages), report["scenarios_dir"]
    page = tmp_path / "evidence.html"
    done = installed_package.run("conformance", "house-shoe-surrender", "--html", str(page), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "house-shoe-surrender" in page.read_text(encoding="utf-8")
