"""The journal's writer lock is a real lock (issue #33, item 5): an exclusive ``flock`` on the journal file itself,
held for the writer's life, not on a side file anyone can delete.

The move: a demo plays on a state directory; someone deletes ``t01.journal.lock`` (the side file the lock used to be
taken on) and starts a second writer on the same journal. The code before let it through the lock (a new lock file,
a new lock) and it died on a UNIQUE constraint, exit 1. Now it is refused by the lock, one line, exit 2, and the
first plays on; readers (``journal verify``, ``recall``) need no lock at all and read the journal in use.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.mqtt_broker import Mosquitto
from tests.service.wal_cut import last_seq

TABLECTL = [sys.executable, "-m", "controller.cli"]




def _demo(state: Path, rounds: int, broker: str) -> list[str]:
    """A demo on a broker both share: on its own embedded broker the second demo would be refused by that
    broker's lock on the state dir before it reached the journal's."""
    return [*TABLECTL, "demo", "--tables", "1", "--rounds", str(rounds), "--seed", "5", "--speed", "fast",
            "--state-dir", str(state), "--no-dashboard", "--quiet", "--broker", broker]


def test_a_second_writer_is_refused_by_the_lock_even_with_the_lock_file_deleted(tmp_path: Path,
                                                                               mosquitto: Mosquitto) -> None:
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "xdg")}
    state = tmp_path / "state"
    journal = state / "t01.journal"
    first = subprocess.Popen(_demo(state, 100_000, mosquitto.url), env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while last_seq(journal) < 20:
            assert first.poll() is None, first.stderr.read() if first.stderr else ""
            assert time.monotonic() < deadline
            time.sleep(0.05)
        Path(f"{journal}.lock").unlink(missing_ok=True)  # the side file gone: the lock must not go with it
        second = subprocess.run(_demo(state, 100_001, mosquitto.url), env=env, capture_output=True, text=True,
                                timeout=120)
        line = second.stderr.strip()
        assert second.returncode == 2, line
        assert len(line.splitlines()) == 1 and "Traceback" not in line, line
        assert "t01.journal: in use by another program" in line, line

        # readers take no lock: they read the journal in use
        key = state / "journal.key"
        verify = subprocess.run([*TABLECTL, "journal", "verify", str(journal), "--key", str(key)], env=env,
                                capture_output=True, text=True, timeout=120)
        assert verify.returncode == 0, verify.stdout + verify.stderr
        recall = subprocess.run([*TABLECTL, "recall", str(journal), "--key", str(key), "--last", "1", "--json"],
                                env=env, capture_output=True, text=True, timeout=120)
        assert recall.returncode == 0, recall.stderr
        seen = last_seq(journal)
        deadline = time.monotonic() + 30
        while last_seq(journal) <= seen:  # the first plays on
            assert time.monotonic() < deadline, "the first writer stopped"
            time.sleep(0.05)
    finally:
        first.send_signal(signal.SIGINT)
        err = first.communicate(timeout=60)[1]
    assert first.returncode == 0, err
