"""The build digest and the seeded HMACs, computed the way a lab computes them with standard tools.

The build digest is SHA-256 of the lines ``<sha256 hex>  <path>\\n`` (one per program file, sorted by path, the
path as ``RECORD`` writes it): what ``sha256sum`` prints. With a seed, each file's HMAC-SHA256 keyed by the seed's
bytes, and the combined digest, SHA-256 of the lines ``<hmac hex>  <path>\\n`` sorted by path. :func:`from_wheel`
computes the same from a wheel file alone (a lab's reference copy), reading no installed file.
"""

from __future__ import annotations

import hashlib
import hmac
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

#: files of a wheel that are not the program: its RECORD (and RECORD's signatures), compiled bytecode
_WHEEL_NOT_PROGRAM = ("RECORD", "RECORD.jws", "RECORD.p7s")


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def lines_digest(per_file: Mapping[str, str]) -> str:
    """SHA-256 of ``<hex>  <path>\\n`` per file, sorted by path (``sha256sum``'s lines)."""
    text = "".join(f"{per_file[path]}  {path}\n" for path in sorted(per_file))
    return sha256_hex(text.encode("utf-8"))


def hmac_hex(seed: bytes, data: bytes) -> str:
    return hmac.new(seed, data, hashlib.sha256).hexdigest()


def parse_seed(text: str) -> bytes:
    """The seed's bytes from hex (ValueError naming what is wrong)."""
    cleaned = text.strip()
    if cleaned.lower().startswith("0x"):
        cleaned = cleaned[2:]
    if not cleaned:
        raise ValueError("--seed: empty (give the lab's seed in hex, e.g. 00112233)")
    try:
        return bytes.fromhex(cleaned)
    except ValueError:
        raise ValueError(f"--seed {text[:80]!r}: not hex digits (an even number of 0-9 a-f)") from None


@dataclass(frozen=True, slots=True)
class Seeded:
    """Per program file the HMAC keyed by the seed, and the combined digest."""

    files: dict[str, str]
    combined: str


def seeded(seed: bytes, contents: Iterable[tuple[str, bytes]]) -> Seeded:
    files = {path: hmac_hex(seed, data) for path, data in contents}
    return Seeded(files, lines_digest(files))


def is_program_in_wheel(name: str) -> bool:
    """A wheel member that is part of the program (not a folder, its RECORD or bytecode)."""
    if name.endswith("/") or name.endswith(".pyc"):
        return False
    head, _, tail = name.rpartition("/")
    return not (head.endswith(".dist-info") and "/" not in head and tail in _WHEEL_NOT_PROGRAM)


@dataclass(frozen=True, slots=True)
class WheelProgram:
    """A wheel's program files: each one's SHA-256, the build digest, and (with a seed) the HMACs."""

    path: Path
    sha256: dict[str, str]
    build: str
    seeded: Seeded | None


def from_wheel(wheel: Path, seed: bytes | None = None) -> WheelProgram:
    """The build digest (and seeded HMACs) of ``wheel``'s program files (OSError / zipfile.BadZipFile if the
    file is no wheel)."""
    with zipfile.ZipFile(wheel) as z:
        names = sorted(n for n in z.namelist() if is_program_in_wheel(n))
        if not any(n.endswith(".dist-info/RECORD") for n in z.namelist()):
            raise zipfile.BadZipFile("no .dist-info/RECORD: not a wheel")
        contents = [(n, z.read(n)) for n in names]
    sha = {n: sha256_hex(data) for n, data in contents}
    return WheelProgram(wheel, sha, lines_digest(sha), None if seed is None else seeded(seed, contents))
