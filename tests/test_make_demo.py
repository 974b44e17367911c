"""``make demo`` on a terminal: Ctrl-C stops the demo, and make exits with the demo's own status.

The README's first command is ``make demo``, stopped with Ctrl-C. The terminal sends SIGINT to its whole
foreground process group, make included, and GNU make dies of it (exit 130, "Interrupt") even when the
demo inside stops cleanly with 0. The test runs the project's Makefile on a real pseudo-terminal, with a
stand-in venv whose ``tablectl`` stops on SIGINT with 0 (so nothing is built or installed), presses Ctrl-C
and reads make's exit status.
"""

from __future__ import annotations

import os
import pty
import select
import shutil
import signal
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

_TABLECTL = """#!{python}
import signal, sys, time
signal.signal(signal.SIGINT, lambda *_: sys.exit({status}))
print("demo running", flush=True)
time.sleep(30)
sys.exit(9)
"""


def _stand_in(tmp: Path, status: int) -> Path:
    """A copy of the Makefile in ``tmp`` with an up-to-date stand-in venv and engine build."""
    shutil.copy(ROOT / "Makefile", tmp / "Makefile")
    earlier = time.time() - 60  # the inputs first, then each target after what it is made from
    for name in ("pyproject.toml", "requirements.lock"):
        (tmp / name).write_text("")
        os.utime(tmp / name, (earlier, earlier))
    venv = tmp / ".venv"
    (venv / "bin").mkdir(parents=True)
    (tmp / "controller" / "_compiled").mkdir(parents=True)
    tablectl = venv / "bin" / "tablectl"
    tablectl.write_text(_TABLECTL.format(python=sys.executable, status=status))
    tablectl.chmod(0o755)
    (venv / ".installed").touch()
    os.utime(venv / ".installed", (earlier + 10, earlier + 10))
    (tmp / "controller" / "_compiled" / ".built").touch()
    return tmp


def _read_until(fd: int, needle: bytes, timeout: float) -> bytes:
    out = b""
    end = time.monotonic() + timeout
    while needle not in out and time.monotonic() < end:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
    return out


def _make_demo_then_ctrl_c(cwd: Path) -> tuple[int, bytes]:
    """``make demo`` as a terminal's foreground job; Ctrl-C once the demo runs; make's exit status."""
    make = shutil.which("make")
    if make is None:
        pytest.skip("no make on this machine")
    pid, fd = pty.fork()
    if pid == 0:  # the child: a session leader on the pty, its process group the terminal's foreground
        os.chdir(cwd)
        os.execv(make, [make, "--no-print-directory", "demo"])
    try:
        out = _read_until(fd, b"demo running", 20)
        assert b"demo running" in out, out.decode(errors="replace")
        os.write(fd, b"\x03")  # Ctrl-C: the terminal signals its foreground process group
        out += _read_until(fd, b"\x00never", 3)
        _, status = os.waitpid(pid, 0)
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        os.close(fd)
    return (os.waitstatus_to_exitcode(status), out)


def test_ctrl_c_on_make_demo_exits_with_the_demos_status_0(tmp_path: Path) -> None:
    code, out = _make_demo_then_ctrl_c(_stand_in(tmp_path, 0))
    assert code == 0, out.decode(errors="replace")
    assert b"Interrupt" not in out, out.decode(errors="replace")


def test_a_demo_that_fails_on_ctrl_c_still_fails_make(tmp_path: Path) -> None:
    code, out = _make_demo_then_ctrl_c(_stand_in(tmp_path, 3))
    assert code == 2, out.decode(errors="replace")  # make's own status for a recipe that failed
