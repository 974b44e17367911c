"""Helpers shared by the dashboard's browser tests and ``docs/screenshots/make.py``.

:class:`Publisher` runs ``tests/e2e/publisher.py`` in a subprocess and drives it over stdin;
:class:`Tablectl` runs the real ``tablectl`` (``demo``, ``dashboard``) in a subprocess;
:func:`find_chromium` locates Debian's Chromium (never a downloaded one); :class:`BrokerWatch`
subscribes to the broker itself, so a test compares the page with the messages as delivered;
:data:`READ_TABLE`, :func:`read_table` and :func:`expected_table` read the table view in one
call and say what it must show for a ``state`` snapshot.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from queue import Empty, Queue
from typing import Any, Protocol

import paho.mqtt.client as paho
from paho.mqtt.enums import CallbackAPIVersion
from playwright.sync_api import Page, expect

from controller.game.events import Tick
from controller.journal.admission import open_table_journal
from controller.profiles import load_rules
from controller.service.core import TableCore

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-quic",
]


def find_chromium() -> str | None:
    """Debian's Chromium: ``$CHROMIUM``, ``/usr/bin/chromium``, or ``chromium`` on ``$PATH``."""
    for candidate in (os.environ.get("CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


class BrokerAddress(Protocol):
    """Where a broker's MQTT-over-TCP listener is (Mosquitto or the demo's embedded NATS node)."""

    @property
    def host(self) -> str: ...

    @property
    def port(self) -> int: ...


class Publisher:
    """``tests/e2e/publisher.py`` in a subprocess, driven line by line over its stdin."""

    def __init__(self, broker: BrokerAddress, prefix: str = "tables", tables: str = "t01,t02") -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.e2e.publisher", "--port", str(broker.port), "--prefix", prefix,
             "--tables", tables],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        self._lines: Queue[str] = Queue()
        threading.Thread(target=self._pump, daemon=True).start()
        self.expect("ready")

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line.strip())
        self._lines.put("<eof>")

    def expect(self, word: str, timeout: float = 10.0) -> str:
        """The next stdout line, which must start with ``word``."""
        try:
            line = self._lines.get(timeout=timeout)
        except Empty:
            raise AssertionError(f"publisher said nothing within {timeout} s (waiting for {word!r})") from None
        if not line.startswith(word):
            err = self.proc.stderr.read() if self.proc.poll() is not None and self.proc.stderr else ""
            raise AssertionError(f"publisher: expected {word!r}, got {line!r} {err}")
        return line

    def send(self, command: str, answer: str) -> str:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return self.expect(answer)

    def step(self) -> str:
        return self.send("step", "step")

    def kill(self) -> None:
        """SIGKILL: the broker publishes each table's last will (``offline``)."""
        self.proc.kill()
        self.proc.wait(timeout=5)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=5)
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if f is not None:
                f.close()


def tablectl_command() -> list[str]:
    """The installed ``tablectl`` console script beside this Python (else ``python -m controller.cli``)."""
    script = Path(sys.executable).with_name("tablectl")
    return [str(script)] if os.access(script, os.X_OK) else [sys.executable, "-m", "controller.cli"]


class Tablectl:
    """A real ``tablectl`` command in a subprocess; its output (stdout and stderr) read line by line."""

    def __init__(self, *args: str) -> None:
        self.args = [*tablectl_command(), *args]
        self.proc = subprocess.Popen(
            self.args,
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
        )
        self.lines: list[str] = []
        self._cond = threading.Condition()
        self._eof = False
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._cond:
                self.lines.append(line.rstrip("\n"))
                self._cond.notify_all()
        with self._cond:
            self._eof = True
            self._cond.notify_all()

    def output(self) -> str:
        with self._cond:
            return "\n".join(self.lines)

    def line_starting(self, prefix: str, timeout: float = 15.0) -> str:
        """The first output line starting with ``prefix`` (waits for it), without the prefix."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for line in self.lines:
                    if line.startswith(prefix):
                        return line[len(prefix):].strip()
                left = deadline - time.monotonic()
                if self._eof or left <= 0:
                    raise AssertionError(f"no line {prefix!r} from {' '.join(self.args)}:\n{chr(10).join(self.lines)}")
                self._cond.wait(left)

    def interrupt(self) -> None:
        """Ctrl-C (SIGINT): the command stops cleanly."""
        self.proc.send_signal(signal.SIGINT)

    def kill(self) -> None:
        """SIGKILL: nothing is closed; the broker publishes the MQTT last wills."""
        self.proc.kill()
        self.proc.wait(timeout=10)

    def wait(self, timeout: float = 30.0) -> int:
        """The exit code, once the command has exited (and its output has been read)."""
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"{' '.join(self.args)} still running after {timeout} s:\n{self.output()}") from None
        with self._cond:
            self._cond.wait_for(lambda: self._eof, timeout=5)
        return code

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def raise_deck_change_warning(journal: Path, profile: str, *, minutes_left: float) -> None:
    """Advance a stopped demo table's clock (the engine's ``Tick`` input) to ``minutes_left``
    before its deck change is due, through the table's own core and journal, as a service that
    ticks would: the engine raises the "deck change due" warning alarm, which the demo publishes
    when it resumes the journal (``tablectl demo`` on the same ``--state-dir``).

    Needed because the demo's own clock ticks (if at all) far apart: a test cannot wait for the
    deck change to come due by itself."""
    rules = load_rules(profile)
    # as the table's own service would: under the demo's journal key, its anchor kept up to date
    with open_table_journal(journal, table_id=journal.stem, key_file=journal.parent / "journal.key") as j:
        core = TableCore(journal.stem, rules, j)
        assert core.recover() > 0, f"nothing to resume in {journal}"
        opened = datetime.fromisoformat(core.state()["deck_set"]["opened_at"]).timestamp()
        core.apply(Tick(now=opened + rules.deck_change_hours * 3600 - minutes_left * 60))
        assert [a["code"] for a in core.table.alarm_list()] == ["deck_change_due"], core.table.alarm_list()


# One call into the page: what the table view shows, in the shape of a ``state`` snapshot, with
# the ``seq`` it was drawn from. The page draws ``data-seq`` and the layout in the same render, so
# the two agree even while the table keeps publishing.
READ_TABLE = """() => {
  const root = document.querySelector('#table');
  const spots = {};
  for (const el of document.querySelectorAll('#felt .spot[data-occupied="true"]')) {
    spots[el.dataset.spot] = [...el.querySelectorAll('.hand')].map((h) => ({
      cards: [...h.querySelectorAll('.card')].map((c) => c.dataset.card),
      wager: h.querySelector('[data-field="wager"]').dataset.amount,
      wagerText: h.querySelector('[data-field="wager"]').textContent,
      total: h.querySelector('[data-field="total"]').textContent,
      outcome: h.querySelector('[data-field="outcome"]')?.textContent ?? null,
      payout: h.querySelector('[data-field="payout"]')?.textContent ?? null,
    }));
  }
  const dealerEl = document.querySelector('#dealer');
  return {
    table: root?.dataset.table ?? null,
    seq: root?.dataset.seq ?? '',
    status: root?.dataset.status ?? null,
    spots,
    dealer: [...document.querySelectorAll('#dealer .card')].map((c) => c.dataset.card),
    hole: dealerEl?.dataset.hole ?? null,
    dealerHtml: dealerEl?.outerHTML ?? '',
  };
}"""


def read_table(page: Page) -> dict[str, Any]:
    """What the table view shows now (see :data:`READ_TABLE`)."""
    got: dict[str, Any] = page.evaluate(READ_TABLE)
    return got


def shown_table(got: dict[str, Any]) -> dict[str, Any]:
    """The part of :func:`read_table` that :func:`expected_table` predicts."""
    return {
        "spots": {
            n: [{k: h[k] for k in ("cards", "wager", "total")} for h in hands] for n, hands in got["spots"].items()
        },
        "dealer": got["dealer"],
        "hole": got["hole"],
    }


def expected_table(state: dict[str, Any]) -> dict[str, Any]:
    """What the table view must show for ``state`` (a face-down card is ``hidden``)."""
    spots = {}
    for n, spot in state["spots"].items():
        hands = spot["hands"]
        if not hands:
            continue
        spots[n] = [
            {
                "cards": [c if c is not None else "hidden" for c in h["cards"]],
                "wager": h["wager"],
                "total": (("soft " if h["soft"] else "") + str(h["total"])) if h["cards"] else "",
            }
            for h in hands
        ]
    dealer = [c if c is not None else "hidden" for c in state["dealer"]["cards"]]
    return {"spots": spots, "dealer": dealer, "hole": "down" if "hidden" in dealer else "up"}


def money_text(amount: str, *, signed: bool = False) -> str:
    """How the page writes money: ``"7.50"`` -> ``$7.50``, ``"1000"`` -> ``$1,000``; ``signed``:
    ``"-25"`` -> ``−$25``, ``"20"`` -> ``+$20``, ``"0"`` -> ``$0``."""
    negative = amount.startswith("-")
    dollars, _, cents = amount.lstrip("+-").partition(".")
    cents = cents.ljust(2, "0")[:2]
    text = f"${int(dollars):,}" + ("" if cents == "00" else f".{cents}")
    zero = int(dollars) == 0 and cents == "00"
    if negative and not zero:
        return "−" + text
    return "+" + text if signed and not zero else text


_watch_ids = itertools.count(1)


class BrokerWatch:
    """A plain MQTT subscriber to ``<prefix>/#``: the last ``state``/``status``/``alarms`` per table,
    and every ``state`` it received, by ``seq`` (:meth:`state_with_seq`)."""

    def __init__(self, broker: BrokerAddress, prefix: str = "tables", login: tuple[str, str] | None = None) -> None:
        self.prefix = prefix
        self.latest: dict[tuple[str, str], Any] = {}
        self.states: dict[tuple[str, int], dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._client = paho.Client(CallbackAPIVersion.VERSION2, client_id=f"e2e-watch-{os.getpid()}-{next(_watch_ids)}")
        self._client.on_message = self._on_message
        if login is not None:
            self._client.username_pw_set(*login)
        self._client.connect(broker.host, broker.port)
        self._client.subscribe(f"{prefix}/#", qos=1)
        self._client.loop_start()

    def _on_message(self, _c: paho.Client, _u: object, msg: paho.MQTTMessage) -> None:
        parts = msg.topic.split("/")
        if len(parts) != 3:
            return
        text = msg.payload.decode()
        value: Any = text if parts[2] == "status" else json.loads(text) if text else None
        with self._lock:
            self.latest[(parts[1], parts[2])] = value
            if parts[2] == "state" and isinstance(value, dict) and isinstance(value.get("seq"), int):
                self.states[(parts[1], value["seq"])] = value

    def get(self, table: str, kind: str) -> Any:
        with self._lock:
            return self.latest.get((table, kind))

    def state_with_seq(self, table: str, seq: int, timeout: float = 5.0) -> dict[str, Any]:
        """The ``state`` of ``table`` whose ``seq`` is ``seq`` (as the broker delivered it to this
        subscriber; waits for it up to ``timeout``)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                state = self.states.get((table, seq))
            if state is not None:
                return state
            time.sleep(0.01)
        raise AssertionError(f"no state with seq {seq} for {table}; last: {self.get(table, 'state')}")

    def last_settled(self, table: str, *, upto_seq: int) -> dict[str, Any] | None:
        """The last ``settled`` state of ``table`` received with a ``seq`` up to ``upto_seq``."""
        with self._lock:
            settled = [(seq, s) for (t, seq), s in self.states.items()
                       if t == table and seq <= upto_seq and s.get("phase") == "settled"]
        return max(settled, key=lambda x: x[0])[1] if settled else None

    def wait_for(self, table: str, kind: str, predicate: Callable[[Any], bool], timeout: float = 10.0) -> Any:
        """The latest ``kind`` message of ``table`` once ``predicate`` holds for it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.get(table, kind)
            if value is not None and predicate(value):
                return value
            time.sleep(0.01)
        raise AssertionError(f"{table}/{kind}: condition not met within {timeout} s; last: {self.get(table, kind)!r}")

    def publish(self, topic: str, payload: str, *, retain: bool = False) -> None:
        """Publish as an outside client would (QoS 1), and wait until the broker has it."""
        self._client.publish(topic, payload, qos=1, retain=retain).wait_for_publish(timeout=5)

    def close(self) -> None:
        self._client.loop_stop()
        self._client.disconnect()


def acknowledge_on_page(page: Page, alarm_id: int) -> None:
    """Press the alarm's Acknowledge button: the page reports the command accepted and drops the alarm."""
    alarm = page.locator(f'#alarms li[data-alarm="{alarm_id}"]')
    alarm.locator("button.ack").click()
    result = page.locator("#ack-result")
    expect(result).to_have_attribute("data-ok", "true")
    expect(result).to_contain_text(f"alarm {alarm_id} acknowledged")
    expect(alarm).to_have_count(0)
    expect(page.locator('[data-field="no-alarms"]')).to_be_visible()
