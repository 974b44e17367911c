"""Figures a table works out from its rules and keeps beside its journal to save work, trusted only when they check.

A table keeps what costs seconds of CPU at every start (the analytics' theory, the ratings' dealer outcomes) in
``<state_dir>/.theory`` (:data:`KEPT_DIR`). Those figures are published (the pit's hold against theoretical,
win_z) or price rated play, so anyone able to edit the file would change them: a kept file is a claim to check,
never a fact. One rule for every such file:

* the folder is the table's own (a real directory, not a link, owned by this user) and mode 0700, the file a
  regular file (a planted link is never followed, to read or to write) of mode 0600; a folder or file others
  may read or write is not trusted (the folder is set back to 0700, the file worked out again and replaced);
* the file holds exactly the fields its kind names and a seal: an HMAC-SHA256 of them (canonical JSON) under a
  key of that kind's own, derived from the journal's key (:func:`subkey`): an edited file, another table's, one
  for other rules put under this name, does not check; nor does one cut short, not JSON, with a field more or
  less;
* a journal without a key (the public test key: anyone can seal) keeps nothing on disk.

The callers say what happens then (worked out again and kept anew) and log the one-line reason
(:class:`NotChecked`). Floats go through JSON as their exact ``repr``: the figures read back are bit-identical.
"""

from __future__ import annotations

import errno
import hashlib
import hmac
import json
import os
import stat
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import controller
from controller.game.rules import Rules, rules_to_json
from controller.private_files import write_private

#: the folder beside the journal where a table keeps what it works out from its rules
KEPT_DIR = ".theory"
#: the field holding the seal
SEAL = "seal"
#: no kept file is larger (the dealer's outcomes, the largest, are about 100 kB): a bigger one is not read
MAX_BYTES = 16 << 20


class NotChecked(Exception):
    """A kept file that is not to be trusted: why, in one line."""


def subkey(seal: Callable[[str, bytes], str], purpose: str) -> bytes:
    """The key files of one kind (``purpose``) are sealed under: the journal's seal (an HMAC under its key,
    :meth:`controller.journal.reads.JournalReads.seal`) of a fixed text for that purpose. A child process working
    figures out may be given it: it seals that kind of file only, and the journal's key cannot be had from it."""
    return bytes.fromhex(seal(purpose, b"tablectl kept figures key"))


def canonical(fields: Mapping[str, Any]) -> bytes:
    """The bytes sealed and written: sorted keys, no spaces (floats as their exact ``repr``)."""
    return json.dumps(fields, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()


def seal_of(key: bytes, fields: Mapping[str, Any]) -> str:
    """The seal (hex) of ``fields`` under ``key``."""
    return hmac.new(key, canonical(fields), hashlib.sha256).hexdigest()


def rules_key(rules: Rules) -> str:
    """SHA-256 (hex) of every field of ``rules``: the exact rules figures are kept for."""
    return hashlib.sha256(canonical(rules_to_json(rules))).hexdigest()


def method_key(sources: Iterable[str]) -> str | None:
    """SHA-256 (hex) of the ``sources`` (paths under the ``controller`` package) the figures are worked out by:
    a new version works them out again. None when one cannot be read (then nothing is kept)."""
    root = Path(controller.__file__).resolve().parent
    digest = hashlib.sha256()
    try:
        for name in sources:
            digest.update(name.encode() + b"\x00" + (root / name).read_bytes() + b"\x00")
    except OSError:
        return None
    return digest.hexdigest()


def _own_folder(folder: Path, *, make: bool) -> str | None:
    """Check that ``folder`` is this user's real directory (made, mode 0700, when ``make``): else
    :class:`NotChecked` (OSError when it cannot be looked at). One open to others is set back to 0700, and why
    nothing it held is trusted is returned; else None."""
    if make:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = os.lstat(folder)
    if not stat.S_ISDIR(st.st_mode):
        raise NotChecked(f"{folder}: not a directory (a link or a file in its place): nothing kept there")
    if st.st_uid != os.geteuid():
        raise NotChecked(f"{folder}: owned by another user (uid {st.st_uid}): nothing kept there")
    if st.st_mode & 0o077:
        os.chmod(folder, 0o700)
        return f"{folder}: open to others (mode {stat.S_IMODE(st.st_mode):04o}): set back to 0700, none of it trusted"
    return None


def read_sealed(path: Path, key: bytes, fields: Iterable[str]) -> dict[str, Any] | None:
    """The fields kept at ``path`` when it checks (exactly ``fields`` and the seal, sealed under ``key``); None
    when nothing is kept there; :class:`NotChecked` (the reason) when something is that does not check. The
    caller checks the values (their types, the rules and sources named)."""
    try:
        opened = _own_folder(path.parent, make=False)
        if opened is not None:
            raise NotChecked(opened)
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise NotChecked(f"{path}: a link, not a file (never followed)") from None
        raise NotChecked(f"{path}: unreadable: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise NotChecked(f"{path}: not a regular file")
        if st.st_uid != os.geteuid() or st.st_mode & 0o077:
            raise NotChecked(f"{path}: open to others or another user's (mode {stat.S_IMODE(st.st_mode):04o})")
        raw = f.read(MAX_BYTES + 1)
    if len(raw) > MAX_BYTES:
        raise NotChecked(f"{path}: larger than {MAX_BYTES} bytes")
    try:
        kept = json.loads(raw)
    except ValueError as exc:
        raise NotChecked(f"{path}: not JSON ({exc})") from None
    if not isinstance(kept, dict) or set(kept) != {*fields, SEAL}:
        raise NotChecked(f"{path}: not the fields of its kind")
    seal = kept.pop(SEAL)
    if not isinstance(seal, str) or not hmac.compare_digest(seal, seal_of(key, kept)):
        raise NotChecked(f"{path}: its seal does not check (edited, or kept under another key)")
    return kept


def write_sealed(path: Path, key: bytes, fields: Mapping[str, Any]) -> None:
    """Keep ``fields`` at ``path``, sealed under ``key``: in this user's folder of mode 0700, a new file of mode
    0600 put in place atomically (a reader sees all of it or nothing; a link in its place is replaced, never
    followed). OSError or :class:`NotChecked` (a folder not to write in) when it cannot be kept."""
    _own_folder(path.parent, make=True)  # (one open to others is made private again: fit to write in)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    write_private(tmp, canonical({**fields, SEAL: seal_of(key, fields)}))
    os.replace(tmp, path)


def lock_file(path: Path) -> int:
    """An open descriptor of ``path``'s lock file beside it (mode 0600, never through a link: one planted in its
    place is removed) to ``flock``."""
    _own_folder(path.parent, make=True)
    lock = path.with_name(f"{path.name}.lock")
    try:
        return os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
    lock.unlink()  # the link itself, in the table's own folder: what it points to is left alone
    return os.open(lock, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
