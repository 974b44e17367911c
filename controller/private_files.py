"""Files holding a secret are refused unless only their owner may read them (mode 0600, DESIGN "The casino floor").

One rule for every such file the product reads: the journal key, a table config holding the broker password,
a password file (``tablectl recorder --password-file``), the floor's ``credentials.toml`` and the auth callout's
``auth/service.toml`` and seed. Each caller turns the line into its own error (exit 2).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


def open_to_others(path: str | os.PathLike[str], what: str, st: os.stat_result | None = None) -> str | None:
    """Why ``path`` (a file holding ``what``) may not be used, in one line, or None: it is not a regular file, or
    its group or others have any access. ``st``: its ``stat`` when the caller has it. OSError if it cannot be read."""
    p = Path(path)
    st = p.stat() if st is None else st
    if not stat.S_ISREG(st.st_mode):
        return f"{what} {p}: not a regular file"
    if st.st_mode & 0o077:
        return f"{what} {p}: readable by others (mode {stat.S_IMODE(st.st_mode):04o}); it must be 0600: chmod 600 {p}"
    return None


def write_private(path: Path, data: bytes | str) -> None:
    """Write ``data`` to a new file of mode 0600: never readable by others, not even for a moment (a file in
    place is replaced)."""
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)
