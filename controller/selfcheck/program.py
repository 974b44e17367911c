"""The installed program against the hashes pip recorded for it (DESIGN.md, "Program authentication").

The program is every file the distribution installed, as its ``RECORD`` lists them (read through
``importlib.metadata``), except what pip writes at install (``RECORD``, ``INSTALLER``, ``REQUESTED``,
``direct_url.json``), the console scripts pip generates and compiled bytecode. :func:`check` hashes each one and
names each that differs or is missing, each module (``.py``, a compiled extension) under the distribution's
package folders that it did not install, and checks the distributions it depends on against their own ``RECORD``.

An editable install (a development checkout) records only its import hooks, so its files cannot be checked
against a build: :attr:`ProgramCheck.unverified` says so, and why, instead of passing or failing.
"""

from __future__ import annotations

import base64
import importlib.machinery
import json
import re
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from controller.selfcheck.digest import lines_digest, sha256_hex

DISTRIBUTION = "blackjack-table-controller"
#: the metadata pip writes at install (not in the wheel's RECORD)
INSTALL_METADATA = frozenset({"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"})
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


@dataclass(slots=True)
class DistributionCheck:
    """One distribution's files against its RECORD."""

    name: str
    version: str
    sha256: dict[str, str] = field(default_factory=dict)  # program file -> its hash now (present files)
    differs: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)  # modules under its package folders it did not install

    @property
    def ok(self) -> bool:
        return not (self.differs or self.missing or self.added)

    def problems(self) -> list[str]:
        """One line per problem, naming the file (``differs: controller/game/table.py``)."""
        prefix = "" if self.name == DISTRIBUTION else f"{self.name} {self.version}: "
        return ([f"{prefix}differs: {p}" for p in self.differs] + [f"{prefix}missing: {p}" for p in self.missing]
                + [f"{prefix}not installed by it: {p}" for p in self.added])


@dataclass(slots=True)
class ProgramCheck:
    """The result of :func:`check`: the program, its dependencies, or why it cannot be verified."""

    version: str
    program: DistributionCheck | None
    dependencies: list[DistributionCheck] = field(default_factory=list)
    #: a required dependency not installed or without a RECORD; a running package not the installed one
    other_problems: list[str] = field(default_factory=list)
    #: why the program's files cannot be checked against a build (an editable install, not installed), or None
    unverified: str | None = None

    @property
    def ok(self) -> bool:
        return self.program is not None and not self.problems()

    @property
    def build(self) -> str | None:
        """The build digest of the files as they are, when every one is there and matches (else None)."""
        if self.program is None or not self.program.ok:
            return None
        return lines_digest(self.program.sha256)

    def problems(self) -> list[str]:
        out = [] if self.program is None else self.program.problems()
        for dep in self.dependencies:
            out.extend(dep.problems())
        return out + self.other_problems

    def software(self) -> dict[str, object]:
        """``state``'s ``software``: the version and the build digest (None: unverified or not matching)."""
        return {"version": self.version, "build": self.build, "verified": self.ok and self.unverified is None}


def _recorded_hex(entry: metadata.PackagePath) -> str | None:
    h = entry.hash
    if h is None or h.mode != "sha256":
        return None
    return base64.urlsafe_b64decode(h.value + "=" * (-len(h.value) % 4)).hex()


def _scripts(dist: metadata.Distribution) -> set[str]:
    return {ep.name for ep in dist.entry_points if ep.group in ("console_scripts", "gui_scripts")}


def program_entries(dist: metadata.Distribution) -> list[metadata.PackagePath]:
    """The RECORD entries that are the program (see the module docstring)."""
    scripts = _scripts(dist)
    out = []
    for entry in dist.files or []:
        parts = entry.parts
        if entry.name.endswith(".pyc"):
            continue
        if len(parts) == 2 and parts[0].endswith(".dist-info") and parts[1] in INSTALL_METADATA:
            continue
        if parts and parts[0] == ".." and Path(entry.name).stem in scripts:  # pip's generated console script
            continue
        out.append(entry)
    return out


def _check_files(dist: metadata.Distribution, name: str) -> DistributionCheck:
    result = DistributionCheck(name, dist.version)
    for entry in program_entries(dist):
        path = entry.as_posix()
        try:
            data = Path(str(dist.locate_file(entry))).read_bytes()
        except FileNotFoundError:
            result.missing.append(path)
            continue
        except OSError:
            result.differs.append(path)
            continue
        actual = sha256_hex(data)
        result.sha256[path] = actual
        if _recorded_hex(entry) != actual:
            result.differs.append(path)
    return result


def _modules_not_installed(dist: metadata.Distribution) -> list[str]:
    """Modules (``.py``, compiled extensions) under the distribution's package folders it did not install."""
    recorded = {entry.as_posix() for entry in dist.files or []}
    folders = sorted({entry.parts[0] for entry in dist.files or [] if len(entry.parts) > 1
                      and not entry.parts[0].endswith((".dist-info", ".data")) and entry.parts[0] != ".."})
    root = Path(str(dist.locate_file("")))
    suffixes = (".py", *importlib.machinery.EXTENSION_SUFFIXES)
    added = []
    for folder in folders:
        for path in sorted((root / folder).rglob("*")):
            if "__pycache__" in path.parts or not path.name.endswith(suffixes) or not path.is_file():
                continue
            relative = path.relative_to(root).as_posix()
            if relative not in recorded:
                added.append(relative)
    return added


def _editable(dist: metadata.Distribution) -> str | None:
    """Where an editable install points (its checkout), or None for a real install."""
    try:
        direct = json.loads(dist.read_text("direct_url.json") or "{}")
    except ValueError:
        return None
    if isinstance(direct, dict) and isinstance(direct.get("dir_info"), dict) and direct["dir_info"].get("editable"):
        return str(direct.get("url", "a checkout")).removeprefix("file://")
    return None


def _running_from(dist: metadata.Distribution) -> str | None:
    """Why the ``controller`` package that runs is not the one the distribution installed, or None."""
    import controller

    running = Path(controller.__file__).resolve().parent
    installed = Path(str(dist.locate_file("controller"))).resolve()
    if running != installed:
        return f"the running controller package is {running}, not the installed {installed} (PYTHONPATH?)"
    return None


#: extras of ours that are not the program's (the developers' tools: pytest, mypy, playwright ...)
TOOL_EXTRAS = frozenset({"test"})
_EXTRA = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")


def _requirement_names(dist: metadata.Distribution, *, ours: bool) -> list[tuple[str, bool]]:
    """Each requirement to check: its name and whether it is conditional (checked only when installed). An
    extra's requirement is followed for our own extras (the demo's broker, the floor's), not the tools' nor a
    dependency's (nobody asked for those)."""
    out = []
    for req in dist.requires or []:
        m = _NAME.match(req.strip())
        extra = _EXTRA.search(req)
        if m is None or (extra is not None and (not ours or extra.group(1) in TOOL_EXTRAS)):
            continue
        out.append((m.group(0), ";" in req))
    return out


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _dependencies(dist: metadata.Distribution) -> tuple[list[DistributionCheck], list[str]]:
    """Every distribution ``dist`` depends on (and theirs), installed, against its own RECORD."""
    checks: list[DistributionCheck] = []
    problems: list[str] = []
    seen = {_normal(dist.metadata["Name"] or DISTRIBUTION)}
    queue = _requirement_names(dist, ours=True)
    while queue:
        name, conditional = queue.pop(0)
        key = _normal(name)
        if key in seen:
            continue
        seen.add(key)
        try:
            dep = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            if not conditional:
                problems.append(f"dependency not installed: {name}")
            continue
        if dep.files is None:
            problems.append(f"dependency {name} {dep.version}: installed without a RECORD (cannot be checked)")
            continue
        checks.append(_check_files(dep, dep.metadata["Name"] or name))
        queue.extend(_requirement_names(dep, ours=False))
    return checks, problems


def check(distribution: str = DISTRIBUTION, *, dependencies_if_unverified: bool = True) -> ProgramCheck:
    """The installed program and its dependencies against their RECORDs (see the module docstring).
    ``dependencies_if_unverified`` False: a program that cannot be verified (a development checkout) is reported
    at once, its dependencies unhashed (the start of ``run``/``demo`` in a checkout: seconds saved, nothing lost)."""
    try:
        dist = metadata.distribution(distribution)
    except metadata.PackageNotFoundError:
        import controller

        return ProgramCheck("unknown", None, unverified=(
            f"{distribution} is not installed: the program runs from {Path(controller.__file__).parent.parent} "
            "(a source tree), which no RECORD describes"))
    verifiable = dist.read_text("RECORD") is not None and _editable(dist) is None
    dependencies, dep_problems = _dependencies(dist) if verifiable or dependencies_if_unverified else ([], [])
    if dist.read_text("RECORD") is None:  # an .egg-info beside a source tree (SOURCES.txt, no hashes)
        return ProgramCheck(dist.version, None, dependencies, dep_problems, unverified=(
            f"{distribution} {dist.version} has no RECORD at {dist.locate_file('')} (a source tree's metadata, "
            "not an install): no file can be checked against a build"))
    checkout = _editable(dist)
    if checkout is not None:
        return ProgramCheck(dist.version, None, dependencies, dep_problems, unverified=(
            f"{distribution} {dist.version} is an editable install of {checkout} (a development checkout): its "
            "RECORD lists the import hooks, not the program files, so no file can be checked against a build; "
            "install the wheel (pip install .) to verify"))
    program = _check_files(dist, distribution)
    program.added = _modules_not_installed(dist)
    result = ProgramCheck(dist.version, program, dependencies, dep_problems)
    elsewhere = _running_from(dist)
    if elsewhere is not None:
        result.other_problems.insert(0, elsewhere)
    return result
