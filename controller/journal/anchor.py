"""The journal's key and anchor, and opening a table's journal for its service (``docs/journal.md``).

Key: a file of mode 0600 (64 hex digits, or at least 16 raw bytes) kept apart from the journal
(setting ``journal_key``; a demo keeps ``<state-dir>/journal.key``). :func:`load_key` refuses a key
file readable by others or too short, in one line.

Anchor: a small file outside the journal's directory (setting ``anchor_dir``; a table PC's default is
``/var/lib/tablectl-anchor``, a demo's ``$XDG_STATE_HOME/tablectl/anchors``), named by the **table id**
and the key's public id (``t01.<key id>.anchor``: one anchor per table and key, never a path a symlink
could redirect), recording the table id, the id of the journal the table keeps, its last input id and
``seq``, the row at its head and that row's chain hash, HMAC-signed with the journal key. It is
rewritten at open, after every commit that adds rows (before the commit is acknowledged: nothing of it has
left the process yet) and at a clean close (written and renamed, no fsync: it never gets ahead of the
journal's own durable commits, and a ``kill -9`` keeps it as it keeps the journal's ``-wal``). As a witness
(:class:`AnchorWitness`) it refuses a journal whose id is not the anchored one (another table's journal, a new
empty one, a swapped file), a journal shorter than it or whose anchored row's hash is not the anchored one, and
an anchor that does not check (altered, another table's, unreadable); it is silent when there is none. What is
left: a commit cut off that a crash caught before its anchor was written (never acknowledged: the same as a
crash before it), and after a power cut whatever the anchor's own unsynced write lost (the broker's retained
``state`` and the recorder catch a rollback of anything published).

Opening a table's journal, judging its witnesses and adopting it: :mod:`controller.journal.admission`.
"""

from __future__ import annotations

import errno
import json
import os
import re
import secrets
import stat
from pathlib import Path

from controller.contract.topics import compact_json
from controller.journal.chain import AnchorPoint, Mac, key_id
from controller.journal.errors import JournalError
from controller.journal.witnesses import Testimony
from controller.journal.writer import Journal
from controller.private_files import open_to_others

__all__ = ["ANCHOR_SIZE", "Anchor", "AnchorWitness", "anchor_testimony", "create_key",
           "default_anchor_dir", "load_key"]

KEY_BYTES = 32
#: an anchor file's size: its JSON (about 330 bytes) padded with spaces, so each commit overwrites it whole
ANCHOR_SIZE = 512
#: a table id (an anchor's file is named by it)
_TABLE_ID = re.compile(r"[A-Za-z0-9_-]{1,32}")


def default_anchor_dir() -> Path:
    """A demo's anchors: ``$XDG_STATE_HOME/tablectl/anchors``, else ``~/.local/state/tablectl/anchors``."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "tablectl" / "anchors"

def load_key(path: str | os.PathLike[str]) -> bytes:
    """The journal key in ``path``; :class:`JournalError` (one line) if missing, unreadable, open to others
    or too short."""
    p = Path(path)
    try:
        refusal = open_to_others(p, "journal key")  # one rule for every file holding a secret
        if refusal is not None:
            raise JournalError(refusal)
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


def _symlink_on(path: Path) -> Path | None:
    """The first folder of absolute ``path`` (from the root down) that is a symbolic link, or None (folders not
    made yet are none)."""
    at = Path(path.anchor)
    for part in path.parts[1:]:
        at = at / part
        try:
            if stat.S_ISLNK(os.lstat(at).st_mode):
                return at
        except FileNotFoundError:
            return None
        except OSError:
            return None  # unreadable: the anchor's own read and write then say why
    return None


def _canonical(fields: dict[str, object]) -> str:
    """The text an anchor's ``mac`` signs: its fields as compact JSON, keys sorted (written at every commit, on the
    card's way: :func:`~controller.contract.topics.compact_json`, the bytes ``json.dumps(fields, sort_keys=True,
    separators=(",", ":"))`` gives an anchor's ASCII fields, as every anchor written so far was signed)."""
    return compact_json(fields, sort_keys=True).decode()


class Anchor:
    """The anchor of one table's journal under one key, in ``directory`` (see the module docstring)."""

    def __init__(self, directory: str | os.PathLike[str], table_id: str, key: bytes) -> None:
        if not _TABLE_ID.fullmatch(table_id):
            raise JournalError(f"anchor: {table_id!r} is not a table id")
        given = Path(directory)
        if given.is_symlink():
            raise JournalError(f"anchor_dir {given}: a symbolic link (to {os.readlink(given)}); give the real "
                               "directory (an anchor never follows a link someone could redirect)")
        link = _symlink_on(Path(os.path.abspath(given)))
        if link is not None:
            raise JournalError(f"anchor_dir {given}: {link} is a symbolic link (to {os.readlink(link)}); give the "
                               "real path (an anchor never follows a link someone could redirect, in any folder "
                               "of its path)")
        self.table_id = table_id
        self.directory = Path(os.path.abspath(given))
        self.path = self.directory / f"{table_id}.{key_id(key)}.anchor"
        self._mac = Mac(key)
        self._made = False  # the directory exists (made once: the anchor is written at every commit)
        self._held: tuple[int, tuple[int, int]] | None = None  # the anchor file written last, for :meth:`record`
        self._last: AnchorPoint | None = None  # the point written last
        self._unchecked = False  # written in place since the file at the path was last found to be the held one

    def _sign(self, fields: dict[str, object]) -> str:
        return self._mac(b"tablectl anchor " + _canonical(fields).encode()).hex()

    def read(self) -> AnchorPoint | None:
        """The recorded point, None when there is no anchor; :class:`JournalError` (one line) if it does not check."""
        where = f"anchor {self.path}"
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            return None
        except OSError as exc:
            why = "a symbolic link" if exc.errno == errno.ELOOP else exc.strerror
            raise JournalError(f"{where}: unreadable ({why})") from None
        try:
            with os.fdopen(fd, "rb") as f:
                data = json.loads(f.read(65536).decode("utf-8"))
        except (OSError, ValueError) as exc:
            raise JournalError(f"{where}: unreadable (not an anchor's JSON: {str(exc).splitlines()[0][:80]})") from None
        if not isinstance(data, dict):
            raise JournalError(f"{where}: unreadable (not an anchor)")
        mac = data.pop("mac", None)
        if mac != self._sign(data):
            raise JournalError(f"{where}: its signature does not check under this key (altered, or written "
                               "under another key)")
        if data.get("table_id") != self.table_id:
            raise JournalError(f"{where}: it is the anchor of table {data.get('table_id')!r}, not "
                               f"{self.table_id} (another table's anchor put in its place)")
        try:
            return AnchorPoint(**{k: v for k, v in data.items() if k != "table_id"})
        except TypeError as exc:
            raise JournalError(f"{where}: unreadable (not an anchor: {exc})") from None

    def _text(self, point: AnchorPoint) -> bytes:
        """The signed anchor, padded with spaces to :data:`ANCHOR_SIZE` bytes (JSON ignores them) so that
        :meth:`record` overwrites it whole, in place. Written at every commit, before the commit's records leave:
        the fields named (not ``dataclasses.asdict``) and the signed JSON text reused as the file's (``mac`` last):
        5.5 us instead of 20 (measured); :meth:`read` takes either layout (an anchor written before)."""
        fields = {"table_id": self.table_id, "journal_id": point.journal_id, "inputs": point.inputs,
                  "seq": point.seq, "table": point.table, "row": point.row, "head": point.head}
        signed = _canonical(fields)
        mac = self._mac(b"tablectl anchor " + signed.encode()).hex()
        return (signed[:-1] + ',"mac":"' + mac + '"}').encode().ljust(ANCHOR_SIZE - 1) + b"\n"

    def record(self, point: AnchorPoint) -> None:
        """Record ``point`` after a commit: one ``pwrite`` of the whole anchor in place, in the file held open since
        it was last written at its path (a write-and-rename costs ext4 a flush of the new file, 0.15 to 0.6 ms, as
        much as the commit's own fsync: ``benchmarks/journal.py --anchor``). That the file at the path is still the
        held one is for :meth:`check`, which the table runs once the commit's news has left (off a card's path); a
        record after one not checked checks first. A file moved away, replaced or deleted is written again by
        :meth:`write`."""
        text = self._text(point)
        held = self._held
        if (held is not None and len(text) == ANCHOR_SIZE and (not self._unchecked or self._at_path(held[1]))
                and os.pwrite(held[0], text, 0) == len(text)):
            self._last, self._unchecked = point, True
            return
        self.write(point)

    def check(self) -> None:
        """The file at the path is the one the last points were written in (not moved away, replaced or deleted
        since; one ``stat``): else the last point is written again there by :meth:`write`."""
        held, last = self._held, self._last
        if not self._unchecked or held is None or last is None:
            return
        if not self._at_path(held[1]):
            self.write(last)
        self._unchecked = False

    def _at_path(self, ino: tuple[int, int]) -> bool:
        """Whether the file at the path is ``ino`` (device, inode)."""
        try:
            now = os.stat(self.path, follow_symlinks=False)
        except FileNotFoundError:
            return False
        return (now.st_dev, now.st_ino) == ino

    def write(self, point: AnchorPoint) -> None:
        """Record ``point`` (written beside and renamed over: never a torn anchor); then held open for
        :meth:`record`."""
        text = self._text(point)
        self.close()
        tmp = self.directory / f".{self.path.name}.tmp{os.getpid()}"
        if not self._made:
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        except FileNotFoundError:  # the folder was removed since: made again, as at the first write
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        self._made = True
        try:
            os.write(fd, text)
            st = os.fstat(fd)
            os.replace(tmp, self.path)
        except BaseException:
            os.close(fd)
            raise
        self._held = (fd, (st.st_dev, st.st_ino))
        self._last, self._unchecked = point, False

    def close(self) -> None:
        """Let go of the anchor file held for :meth:`record` (it stays as last written)."""
        held, self._held = self._held, None
        self._unchecked = False
        if held is not None:
            os.close(held[0])


class AnchorWitness:
    """The anchor as a witness (:class:`controller.journal.witnesses.Witness`)."""

    def __init__(self, anchor: Anchor) -> None:
        self.anchor = anchor
        self.name = f"its anchor {anchor.path}"

    def testify(self, journal: Journal) -> Testimony:
        try:
            point = self.anchor.read()
        except JournalError as exc:
            return Testimony(self.name, "differs", None, str(exc).split(": ", 1)[1])
        if point is None:
            return Testimony(self.name, "silent", None, f"no anchor of {self.anchor.table_id} under this key in "
                                                        f"{self.anchor.directory}")
        if point.journal_id != journal.journal_id:
            return Testimony(self.name, "differs", point.seq,
                             f"it records journal {point.journal_id} for table {self.anchor.table_id}, but this is "
                             f"journal {journal.journal_id} (another table's journal, a new one or a swapped file "
                             "in its place)")
        if ((journal.last_input_id < point.inputs or journal.last_seq < point.seq)
                and not (journal.readonly and journal.reaches(point.inputs, point.seq))):  # a reader: its writer
            return Testimony(self.name, "ahead", point.seq, f"input {point.inputs}")  # may have gone on since
        if (journal.row_hash(point.table, point.row) or b"").hex() != point.head:
            return Testimony(self.name, "differs", point.seq,
                             f"{point.table} row {point.row} is not the anchored one (rolled back and played "
                             "again, or replaced by another copy)")
        return Testimony(self.name, "vouches", point.seq)


def anchor_testimony(directory: str | os.PathLike[str], key: bytes, journal: Journal, table_hint: str) -> Testimony:
    """What the anchors in ``directory`` say of ``journal`` when its table is not known (``tablectl journal
    verify``): the anchor under ``key`` that records this journal's id, else the anchor of ``table_hint`` (the
    file's stem), which then names another journal, else silent."""
    folder = Path(directory)
    suffix = f".{key_id(key)}.anchor"
    tables = sorted(p.name[:-len(suffix)] for p in folder.glob(f"*{suffix}")) if folder.is_dir() else []
    for table_id in tables:
        if not _TABLE_ID.fullmatch(table_id):
            continue
        anchor = Anchor(folder, table_id, key)
        try:
            point = anchor.read()
        except JournalError:
            continue
        if point is not None and point.journal_id == journal.journal_id:
            return AnchorWitness(anchor).testify(journal)
    if table_hint in tables:  # the anchor of the table the file is named for: another journal's, or broken
        return AnchorWitness(Anchor(folder, table_hint, key)).testify(journal)
    return Testimony(f"its anchor in {folder}", "silent", None, f"no anchor of this journal under this key in {folder}")
