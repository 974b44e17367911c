"""The journal's key and anchor, and opening a table's journal for its service (``docs/journal.md``).

Key: a file of mode 0600 (64 hex digits, or at least 16 raw bytes) kept apart from the journal
(setting ``journal_key``; a demo keeps ``<state-dir>/journal.key``). :func:`load_key` refuses a key
file readable by others or too short, in one line.

Anchor: a small file outside the journal's directory (setting ``anchor_dir``; by default
``$XDG_STATE_HOME/tablectl/anchors``, else ``~/.local/state/tablectl/anchors``), named by the
SHA-256 of the journal's absolute path, recording the journal's id, its last input id and ``seq``,
the row at its head and that row's chain hash, HMAC-signed with the journal key. It is rewritten at
open, after every :data:`controller.service.journal.ANCHOR_EVERY` commits that add rows and at a clean close
(written and renamed, no fsync: it never gets ahead of the journal's own durable commits). At start
a journal that is missing, emptied, shorter than its anchor, or whose anchored row's hash is not the
anchored one (rolled back, replaced by another journal or an older copy) is refused. The window:
a rollback to a point at or after the last anchor write (at most ``ANCHOR_EVERY - 1`` commits, or
whatever a power cut took of the anchor's own unsynced write) is not caught by the anchor.

:func:`open_table_journal` is the one way the table service and the demo open a journal: key,
anchor check, the whole chain verified, then the anchor recorded.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import stat
from dataclasses import asdict
from pathlib import Path
from typing import Literal

from controller.service.journal import AnchorPoint, Journal, JournalError, Synchronous, _Mac

__all__ = ["Anchor", "create_key", "default_anchor_dir", "load_key", "open_table_journal"]

KEY_BYTES = 32


def default_anchor_dir() -> Path:
    """``$XDG_STATE_HOME/tablectl/anchors``, else ``~/.local/state/tablectl/anchors``."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "tablectl" / "anchors"


def load_key(path: str | os.PathLike[str]) -> bytes:
    """The journal key in ``path``; :class:`JournalError` (one line) if missing, unreadable, open to others
    or too short."""
    p = Path(path)
    try:
        st = p.stat()
        if not stat.S_ISREG(st.st_mode):
            raise JournalError(f"journal key {p}: not a regular file")
        if st.st_mode & 0o077:
            raise JournalError(f"journal key {p}: readable by others (mode {stat.S_IMODE(st.st_mode):04o}); "
                               f"it must be 0600: chmod 600 {p}")
        data = p.read_bytes()
    except FileNotFoundError:
        raise JournalError(f"journal key {p}: no such file") from None
    except OSError as exc:
        raise JournalError(f"journal key {p}: cannot read: {exc.strerror}") from None
    text = data.strip()
    if len(text) == 2 * KEY_BYTES:
        try:
            return bytes.fromhex(text.decode("ascii"))
        except (UnicodeDecodeError, ValueError):
            pass
    if len(data) < 16:
        raise JournalError(f"journal key {p}: too short ({len(data)} bytes; 64 hex digits expected)")
    return data


def create_key(path: str | os.PathLike[str]) -> bytes:
    """Write a new random key (64 hex digits, mode 0600) at ``path``, which must not exist; return it."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    key = secrets.token_bytes(KEY_BYTES)
    try:
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise JournalError(f"journal key {p}: already exists") from None
    except OSError as exc:
        raise JournalError(f"journal key {p}: cannot create: {exc.strerror}") from None
    with os.fdopen(fd, "w") as f:
        f.write(key.hex() + "\n")
        f.flush()
        os.fsync(f.fileno())
    return key


class Anchor:
    """The anchor of one journal, in ``directory`` (see the module docstring)."""

    def __init__(self, directory: str | os.PathLike[str], journal_path: str | os.PathLike[str], key: bytes) -> None:
        self.journal_path = Path(journal_path).resolve()
        self.directory = Path(directory).resolve()
        if self.directory == self.journal_path.parent:
            raise JournalError(f"anchor_dir {self.directory}: the journal's own directory; an anchor is kept "
                               "outside it (so a state directory put back from a backup is caught)")
        name = hashlib.sha256(str(self.journal_path).encode()).hexdigest()
        self.path = self.directory / f"{name}.anchor"
        self._mac = _Mac(key)

    def _sign(self, fields: dict[str, object]) -> str:
        return self._mac(json.dumps(fields, sort_keys=True, separators=(",", ":")).encode()).hex()

    def read(self) -> AnchorPoint | None:
        """The recorded point, None when there is no anchor; :class:`JournalError` if it does not check."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise JournalError(f"anchor {self.path} of journal {self.journal_path}: unreadable: {exc}") from None
        if not isinstance(data, dict):
            raise JournalError(f"anchor {self.path}: not an anchor")
        mac = data.pop("mac", None)
        try:
            point = AnchorPoint(**{k: v for k, v in data.items() if k != "journal"})
        except TypeError as exc:
            raise JournalError(f"anchor {self.path}: not an anchor ({exc})") from None
        if mac != self._sign(data) or data.get("journal") != str(self.journal_path):
            raise JournalError(f"anchor {self.path} of journal {self.journal_path}: does not check under this "
                               "key (altered, or another table's key)")
        return point

    def write(self, point: AnchorPoint) -> None:
        """Record ``point`` (written beside and renamed over: never a torn anchor)."""
        fields: dict[str, object] = {"journal": str(self.journal_path), **asdict(point)}
        text = json.dumps({**fields, "mac": self._sign(fields)}, sort_keys=True) + "\n"
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = self.path.with_suffix(f".tmp{os.getpid()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, self.path)

    def check(self, journal: Journal, point: AnchorPoint) -> None:
        """Refuse (one line) a journal behind ``point`` or off its chain."""
        where = f"journal {journal.path}"
        told = f"its anchor ({self.path}) records input {point.inputs}, seq {point.seq}"
        if journal.last_input_id < point.inputs or journal.last_seq < point.seq:
            raise JournalError(f"{where}: behind its anchor: it ends at input {journal.last_input_id}, seq "
                               f"{journal.last_seq}, but {told} (truncated, emptied or rolled back)")
        if journal.journal_id != point.journal_id:
            raise JournalError(f"{where}: not the journal its anchor records (journal id {journal.journal_id}, "
                               f"anchored {point.journal_id}): another journal put in its place")
        if (journal.row_hash(point.table, point.row) or b"").hex() != point.head:
            raise JournalError(f"{where}: {point.table} row {point.row} is not the anchored one ({told}): rolled "
                               "back or replaced by an older copy")


NewJournal = Literal["no", "yes", "if-unanchored"]


def open_table_journal(path: str | os.PathLike[str], *, key_file: str | os.PathLike[str],
                       anchor_dir: str | os.PathLike[str] | None = None, new: NewJournal = "no",
                       synchronous: Synchronous = "FULL") -> Journal:
    """Open a table's journal for its service: key, anchor, the whole chain verified, anchor recorded.

    ``new``: ``"yes"`` creates the journal (refused if one exists), ``"no"`` refuses a missing one,
    ``"if-unanchored"`` (a demo's table) creates it only when no anchor records it. Every refusal is a
    :class:`JournalError` of one line.
    """
    jpath = Path(path)
    key = create_key(key_file) if new == "yes" and not Path(key_file).exists() else load_key(key_file)
    anchor = Anchor(anchor_dir if anchor_dir is not None else default_anchor_dir(), jpath, key)
    exists = jpath.exists()
    point = anchor.read() if new != "yes" else None
    if new == "yes" and exists and jpath.stat().st_size > 0:
        raise JournalError(f"journal {jpath}: already exists (--new-journal only creates a journal)")
    if not exists and new != "yes":
        if point is not None:
            raise JournalError(f"journal {jpath}: missing, but its anchor ({anchor.path}) records input "
                               f"{point.inputs}, seq {point.seq}: put the journal back (nothing starts from zero)")
        if new == "no":
            raise JournalError(f"journal {jpath}: no such journal (a new one only on purpose: --new-journal)")
    journal = Journal(jpath, key=key, synchronous=synchronous)
    try:
        journal.verify()
        if point is not None:
            anchor.check(journal, point)
        try:
            anchor.write(journal.anchor_point())
        except OSError as exc:
            raise JournalError(f"anchor {anchor.path}: cannot write: {exc.strerror}") from None
        journal.anchor = anchor
    except BaseException:
        journal.close()
        raise
    return journal
