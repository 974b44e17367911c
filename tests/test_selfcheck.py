"""Program authentication (DESIGN.md, a contract; issue 36) on a real wheel installed into a fresh venv: an edited,
removed or added installed file is named by ``tablectl selfcheck`` and refused by ``tablectl run``'s and ``demo``'s
start; the build digest and the seeded HMACs equal what a lab computes on its own from the wheel (zipfile, hashlib,
hmac here, nothing of ours); ``--reference WHEEL`` equals them too. Was: an edited ``.py`` of the installed
controller started and played; nothing said which build a table ran."""

from __future__ import annotations

import hashlib
import hmac
import importlib.machinery
import json
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.installed_package import InstalledPackage, restored

pytestmark = [pytest.mark.xdist_group("installed-package"), pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parent.parent
SEED = "00112233445566778899aabbccddeeff"


def _lab_lines(wheel: Path, per_file: Callable[[bytes], str]) -> tuple[dict[str, str], str]:
    """What a lab computes from its reference wheel with standard tools: per program file (every member but the
    RECORD and bytecode) a hex digest, and SHA-256 of the ``sha256sum``-style lines sorted by path."""
    with zipfile.ZipFile(wheel) as z:
        names = [n for n in z.namelist() if not n.endswith(("/", ".pyc")) and not n.endswith(".dist-info/RECORD")]
        files = {n: per_file(z.read(n)) for n in names}
    text = "".join(f"{files[n]}  {n}\n" for n in sorted(files))
    return files, hashlib.sha256(text.encode()).hexdigest()


def test_a_clean_install_passes_with_the_build_a_lab_computes(installed_package: InstalledPackage) -> None:
    done = installed_package.run("selfcheck")
    assert done.returncode == 0, done.stderr
    files, build = _lab_lines(installed_package.wheel, lambda b: hashlib.sha256(b).hexdigest())
    [line] = done.stdout.strip().splitlines()
    assert "blackjack-table-controller 0.1.0" in line and f"{len(files)} program files" in line, line
    assert line.endswith(f"build {build}"), line
    report = json.loads(installed_package.run("selfcheck", "--json").stdout)
    assert report["ok"] and report["build"] == build and report["files"] == len(files) and report["problems"] == []
    assert {d["name"].lower() for d in report["dependencies"]} >= {"pydantic", "paho-mqtt", "cryptography"}


def test_the_seeded_hmacs_equal_a_labs_own_from_the_wheel(installed_package: InstalledPackage) -> None:
    key = bytes.fromhex(SEED)
    files, combined = _lab_lines(installed_package.wheel, lambda b: hmac.new(key, b, hashlib.sha256).hexdigest())
    for args in (("selfcheck", "--seed", SEED),
                 ("selfcheck", "--seed", SEED, "--reference", str(installed_package.wheel))):
        done = installed_package.run(*args)
        assert done.returncode == 0, done.stderr
        lines = done.stdout.strip().splitlines()
        assert lines[-1] == f"{combined}  combined", args
        assert {path: digest for digest, path in (line.split("  ", 1) for line in lines[:-1])} == files
    data = json.loads(installed_package.run("selfcheck", "--seed", SEED, "--json").stdout)
    assert data["seeded"]["combined"] == combined and data["seeded"]["files"] == files
    other = installed_package.run("selfcheck", "--seed", "ff" + SEED[2:])
    assert other.stdout.strip().splitlines()[-1] != f"{combined}  combined", "another seed, another digest"


def test_the_reference_wheel_gives_the_installed_build(installed_package: InstalledPackage) -> None:
    _, build = _lab_lines(installed_package.wheel, lambda b: hashlib.sha256(b).hexdigest())
    done = installed_package.run("selfcheck", "--reference", str(installed_package.wheel))
    assert done.returncode == 0 and done.stdout.strip().endswith(f"build {build}"), done.stdout + done.stderr


def _refused_everywhere(installed: InstalledPackage, named: str, tmp_path: Path) -> None:
    """selfcheck names it (exit 2); run and demo stop before anything opens (exit 2, one line naming it)."""
    done = installed.run("selfcheck")
    assert done.returncode == 2 and named in done.stderr, done.stderr
    assert "build" not in done.stdout
    config = tmp_path / "t01.toml"
    config.write_text('table_id = "t01"\nprofile = "ny-4620"\n')
    for args in (("run", "--config", str(config)), ("demo", "--rounds", "1", "--state-dir", str(tmp_path / "s"))):
        started = installed.run(*args, timeout=120)
        lines = started.stderr.strip().splitlines()
        assert started.returncode == 2 and len(lines) == 1, started.stderr
        assert "program authentication failed" in lines[0] and named in lines[0], lines
    assert not (tmp_path / "s").exists(), "the demo started nothing"


def test_an_edited_installed_file_is_named_and_refused(installed_package: InstalledPackage, tmp_path: Path) -> None:
    money = installed_package.site_packages / "controller" / "game" / "money.py"
    with restored(money):
        money.write_bytes(money.read_bytes() + b"\n# a payout changed on the table PC\n")
        _refused_everywhere(installed_package, "differs: controller/game/money.py", tmp_path)
    assert installed_package.run("selfcheck").returncode == 0, "put back: the build passes again"


def test_a_removed_installed_file_is_named_and_refused(installed_package: InstalledPackage, tmp_path: Path) -> None:
    profile = installed_package.site_packages / "controller" / "shipped_profiles" / "ny-4620.toml"
    with restored(profile):
        profile.unlink()
        _refused_everywhere(installed_package, "missing: controller/shipped_profiles/ny-4620.toml", tmp_path)


@pytest.mark.parametrize("added", ["controller/game/payouts.py", "drivers/extra_module{ext}"])
def test_a_module_the_distribution_did_not_install_is_named_and_refused(installed_package: InstalledPackage,
                                                                        tmp_path: Path, added: str) -> None:
    name = added.format(ext=importlib.machinery.EXTENSION_SUFFIXES[0])
    path = installed_package.site_packages / name
    with restored(path):
        path.write_bytes(b"PAYOUT = 100\n")
        _refused_everywhere(installed_package, f"not installed by it: {name}", tmp_path)


def test_an_edited_dependency_is_named(installed_package: InstalledPackage) -> None:
    [client] = installed_package.site_packages.glob("paho/mqtt/client.py")
    with restored(client):
        client.write_bytes(client.read_bytes() + b"\n# changed\n")
        done = installed_package.run("selfcheck")
    assert done.returncode == 2 and "paho-mqtt" in done.stderr and "differs: paho/mqtt/client.py" in done.stderr


def test_a_shadowing_source_tree_is_not_the_installed_program(installed_package: InstalledPackage,
                                                              tmp_path: Path) -> None:
    """PYTHONPATH put before the installed package runs other code: that is a mismatch, not a pass (here even a
    byte-for-byte copy of the installed package: what runs is not what pip installed and RECORD describes)."""
    import shutil

    shutil.copytree(installed_package.site_packages / "controller", tmp_path / "shadow" / "controller")
    env = {"PYTHONPATH": str(tmp_path / "shadow"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([str(installed_package.python), "-m", "controller.cli", "selfcheck"], capture_output=True,
                          text=True, timeout=120, env=env, cwd=tmp_path)
    assert done.returncode == 2 and "not the installed" in done.stderr, done.stderr


@pytest.mark.parametrize(("args", "message"), [
    (("--seed", "zz"), "not hex digits"), (("--seed", ""), "empty"),
    (("--reference", "/nope/x.whl"), "not a readable wheel")])
def test_bad_input_is_one_line_and_exit_2(installed_package: InstalledPackage, args: tuple[str, ...],
                                          message: str) -> None:
    done = installed_package.run("selfcheck", *args)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and message in lines[0], done.stderr


def test_the_development_checkout_says_it_is_unverified_and_still_runs(tmp_path: Path) -> None:
    """An editable install (or a source tree) records no program files: selfcheck says so (exit 1), and run goes on
    (here to its config's own refusal, still the one line on stderr), so ``make demo`` works in a checkout; the
    table's log warns at its start (tests/service/test_program_watch.py)."""
    done = subprocess.run([sys.executable, "-m", "controller.cli", "selfcheck"], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert done.returncode == 1 and "unverified" in done.stderr, done.stderr
    run = subprocess.run([sys.executable, "-m", "controller.cli", "run", "--config", str(tmp_path / "none.toml")],
                         capture_output=True, text=True, timeout=120, cwd=ROOT)
    [line] = run.stderr.strip().splitlines()
    assert run.returncode == 2 and "none.toml" in line and "program" not in line, run.stderr
