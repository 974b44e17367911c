"""The live ``<root>/analytics`` topic: hold against theoretical and pace since the table was last opened.

``tablectl report`` computes these figures in one pass over a journal (:func:`controller.analytics.hold.figures`).
A table publishes them at every settlement and shoe end, so it cannot re-read its journal each time: it keeps
running sums instead and folds in each settled round as it comes, the same round dicts
(:class:`controller.records.RoundBuilder`, from the public records just committed), the same sums, the same
rounding, so the live figures equal the report's on the same rounds to the cent (a test holds them together).

* :class:`Tally`: the running sums of the rounds settled since an open.
* :class:`LiveAnalytics`: reads the records since its last call, starts again at each ``table_opened``, keeps
  a short series of (round, actual win, theoretical win, one SD) points for the dashboard's chart, and makes
  the payload.
* :func:`theory_for`: the profile's basic-strategy edge and per-hand spread, a second or two of CPU, computed
  once per process and rules on a worker thread: never on the event loop, where it would hold up the cards.
  Until it is known the theoretical figures are ``null`` and the table republishes when it arrives.

The shuffle-quality scores and the spots flagged at shoe end come from their own monitors through two
provider hooks (:data:`ShuffleProvider`, :data:`FlagsProvider`; the table service's ``analytics_shuffle`` and
``analytics_flags``), each empty by default: the table service wires the shuffle-quality monitor in; the
advantage-play signals give ``[]`` until they are.
"""

from __future__ import annotations

import fcntl
import json
import logging
import math
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from controller import kept_figures
from controller.analytics.dealers import DealerFold, figures_json, round_sums
from controller.analytics.hold import MIN_ROUNDS, Spread, Tally, spread, theoretical_edge, win_variance, z_score
from controller.game.money import format_money
from controller.game.rules import Rules, rules_digest, rules_from_json, rules_to_json
from controller.kept_figures import NotChecked
from controller.records import PublicLog, RoundBuilder

log = logging.getLogger("controller.analytics.live")

__all__ = [
    "PUBLISH_ON",
    "SERIES_POINTS",
    "FlagsProvider",
    "LiveAnalytics",
    "ShuffleProvider",
    "Tally",
    "Theory",
    "abandon_theory_work",
    "no_flags",
    "no_shuffle_scores",
    "theory_for",
]

#: the public records after which the table republishes ``analytics``: settlements, shoe ends (the shuffle
#: asked for, and done), the table opened or closed (the figures start again, or stop counting time), new rules
PUBLISH_ON = frozenset({"round_settled", "shuffle_requested", "shuffle_done", "table_opened", "table_closed",
                        "rules_changed"})
#: at most this many points in the chart's series (older ones thinned out evenly as the shift grows)
SERIES_POINTS = 120
#: records read per step when looking backwards for the last ``table_opened``
_WINDOW = 2048

#: the shuffle-quality figures of the last shoes: ``{"threshold": float | None, "shoes": [{...}, ...]}``
ShuffleProvider = Callable[[], Mapping[str, Any]]
#: the spots flagged at the last shoe ends (advantage-play signals): ``[{"spot": n, ...}, ...]``
FlagsProvider = Callable[[], Sequence[Mapping[str, Any]]]


def no_shuffle_scores() -> Mapping[str, Any]:
    """No shuffle-quality monitor wired in: no threshold, no shoe scored."""
    return {"threshold": None, "shoes": []}


def no_flags() -> Sequence[Mapping[str, Any]]:
    """No advantage-play signals wired in: no spot flagged."""
    return []


# ---- the profile's theory, off the event loop ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Theory:
    """The rules' basic-strategy house edge and the spread of one hand's net per unit of initial wager."""

    edge: float
    spread: Spread


#: how long a table has been up before a child works out a theory it does not have yet: the seconds after a
#: start (a restart after a crash above all) are the journal's replay and the devices' catching up
THEORY_DELAY_S = 5.0

_theories: dict[str, Future[Theory]] = {}
_theories_lock = threading.Lock()
_executor: ThreadPoolExecutor | None = None
#: set when the process ends (:func:`abandon_theory_work`): the work of the executor it was made with stops
_stopping = threading.Event()


#: what the kept theory's seal is for: the key its files are sealed under (:func:`controller.kept_figures.subkey`)
SEAL_PURPOSE = "analytics theory"
#: the sources the theory is worked out by (under the ``controller`` package): a change to one makes it stale
METHOD_SOURCES = ("analytics/hold.py", "analytics/spreads.json", "bench/spread.py", "strategy/edge.py",
                  "strategy/ev.py", "game/dealer.py")
#: the fields of a kept theory (besides its seal)
FIELDS = ("rules", "method", "edge", "sigma", "sigma_source", "covariance")


def _fields(rules: Rules, method: str, theory: Theory) -> dict[str, Any]:
    return {"rules": kept_figures.rules_key(rules), "method": method, "edge": float(theory.edge),
            "sigma": float(theory.spread.sigma), "sigma_source": theory.spread.source,
            "covariance": float(theory.spread.covariance)}


def _theory(fields: Mapping[str, Any]) -> Theory:
    """The theory in ``fields`` (ValueError when one is of the wrong type: floats exactly as kept)."""
    edge, sigma, source, covariance = (fields[k] for k in ("edge", "sigma", "sigma_source", "covariance"))
    if not (type(edge) is type(sigma) is type(covariance) is float and isinstance(source, str)):
        raise ValueError("a figure of the wrong type")
    return Theory(edge, Spread(sigma, source, covariance))


def _kept(path: Path, key: bytes, rules: Rules, method: str) -> Theory | None:
    """The theory kept at ``path`` when it checks (:mod:`controller.kept_figures`: sealed under ``key``, for these
    exact rules and sources); else None, with a warning when something was kept there."""
    try:
        kept = kept_figures.read_sealed(path, key, FIELDS)
        if kept is None:
            return None
        if kept["rules"] != kept_figures.rules_key(rules) or kept["method"] != method:
            raise NotChecked(f"{path}: kept for other rules or by other sources")
        return _theory(kept)
    except (NotChecked, ValueError) as exc:
        log.warning("the kept theoretical figures do not check: worked out again",
                    extra={"path": str(path), "error": str(exc)})
        return None


def _warm_strategy(rules: Rules, stopping: threading.Event) -> None:
    """The advantage-play signals' basic strategy, worked out here on the worker thread (not at a shoe end)."""
    from controller.analytics.live_signals import warm

    if stopping.wait(THEORY_DELAY_S):  # not in the seconds after a start, nor once the process is ending
        return
    try:
        warm(rules)
    except Exception:  # the signals work it out themselves at the first shoe end
        log.exception("the basic strategy could not be worked out ahead")


class TheoryAbandoned(Exception):
    """The process ended (:func:`abandon_theory_work`) before the theory was worked out."""


def _run_child(path: Path | None, rules: Rules, key: bytes | None, stopping: threading.Event, *,
               take_kept: bool = True) -> tuple[str, str]:
    """The child that works the theory out (and keeps it at ``path``, sealed under ``key``; ``take_kept``: it may
    take what another child kept there meanwhile); its stdout (the figures) and stderr. Killed, and
    :class:`TheoryAbandoned`, once ``stopping`` is set."""
    child = subprocess.Popen([sys.executable, "-m", "controller.analytics.live", *([str(path)] if path else [])],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    payload: str | None = json.dumps({"rules": rules_to_json(rules), "key": key.hex() if key else None,
                                      "take_kept": take_kept})
    while True:
        try:
            out, err = child.communicate(payload, timeout=0.2)
            return out, err
        except subprocess.TimeoutExpired:
            payload = None  # sent: communicate() goes on with what it has
            if stopping.is_set():
                child.kill()
                child.communicate()
                raise TheoryAbandoned(str(path or rules.name)) from None


def _compute(rules: Rules, cache_dir: Path | None, stopping: threading.Event, key: bytes | None = None) -> Theory:
    """On the worker thread. With a state directory the work is done by a child process at low priority: the
    table's event loop never shares its interpreter with two seconds of arithmetic (the card latency stays what
    it was). With the journal's sealing ``key`` too the child keeps the figures there, sealed, and a table killed
    meanwhile finds them on its restart, when they check; without one nothing is kept on disk (the process
    keeps them in memory: :func:`theory_for`)."""
    if cache_dir is None:
        return Theory(theoretical_edge(rules), spread(rules))
    path = cache_dir / f"theory-{rules_digest(rules)}.json"
    method = kept_figures.method_key(METHOD_SOURCES)
    if method is None:
        key = None  # the sources unreadable: nothing to name them by, nothing kept
    distrusted = False
    if key is not None and method is not None:
        known = _kept(path, key, rules, method)
        if known is not None:
            return known
        distrusted = os.path.lexists(path)  # something kept there that does not check: the child replaces it
    if stopping.wait(THEORY_DELAY_S):  # not while the table starts (nor at all in a crash loop): its cards first
        raise TheoryAbandoned(str(path))
    out, error = _run_child(path if key is not None else None, rules, key, stopping, take_kept=not distrusted)
    try:
        return _theory(json.loads(out.strip().splitlines()[-1]))  # its last line: the figures
    except (ValueError, KeyError, TypeError, IndexError):
        log.warning("the theoretical figures could not be worked out by a child: worked out in the table's process",
                    extra={"path": str(path), "error": error.strip()[-300:]})
        return Theory(theoretical_edge(rules), spread(rules))


def theory_for(rules: Rules, cache_dir: Path | None = None, key: bytes | None = None) -> Future[Theory]:
    """The theory of ``rules``, computed once per process and set of rules on one worker thread.

    The same functions ``tablectl report`` uses (:mod:`controller.analytics.hold`), so both judge a round alike.
    With ``cache_dir`` (the table's ``<state_dir>/.theory``) they are worked out by a child process, and with
    ``key`` (:func:`controller.kept_figures.subkey` of the journal's key for :data:`SEAL_PURPOSE`) kept there by
    the rules' digest, sealed, so a table restarted after a crash has them at once instead of spending its first
    seconds of CPU on them (a bench run and the exact edge: about two seconds beside the event loop); a kept file
    that does not check is worked out again and replaced."""
    global _executor
    digest = rules_digest(rules)
    with _theories_lock:
        future = _theories.get(digest)
        if future is None or future.cancelled():
            if _executor is None:
                _executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="analytics-theory")
            future = _theories[digest] = _executor.submit(_compute, rules, cache_dir, _stopping, key)
            _executor.submit(_warm_strategy, rules, _stopping)  # after it, on the same thread
        return future


def abandon_theory_work() -> None:
    """At the end of a process that ran tables (``tablectl run``, ``demo``): theory work not begun is dropped and
    work under way stops at its next wait (its child killed), so the interpreter's exit, which joins the worker
    thread, does not wait for it. Each table's stop has already waited up to ``THEORY_WAIT_S`` for its figures.
    Work asked for afterwards starts afresh on a new worker."""
    global _executor, _stopping
    with _theories_lock:
        if _executor is None:
            return
        _stopping.set()
        _executor.shutdown(wait=False, cancel_futures=True)
        _executor, _stopping = None, threading.Event()
        for digest in [d for d, f in _theories.items() if not f.done()]:
            del _theories[digest]


# ---- the running sums ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Point:
    rounds: int
    house_net: int
    initial: int
    squares: int
    pairs: int
    ts: float


def _r6(x: float | None) -> float | None:
    return None if x is None else round(x, 6)


def _iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(slots=True)
class _Series:
    """Evenly thinned points: those whose round count is a multiple of ``stride``, which doubles when full."""

    limit: int
    stride: int = 1
    points: list[_Point] = field(default_factory=list)
    latest: _Point | None = None

    def add(self, point: _Point) -> None:
        self.latest = point
        if point.rounds % self.stride:
            return
        self.points.append(point)
        while len(self.points) > self.limit:
            self.stride *= 2
            self.points = [p for p in self.points if p.rounds % self.stride == 0]

    def all(self) -> list[_Point]:
        if self.latest is not None and (not self.points or self.points[-1] is not self.latest):
            return [*self.points, self.latest]
        return list(self.points)


# ---- the live figures -------------------------------------------------------------------------------------


class LiveAnalytics:
    """A table's figures since it was last opened, brought up to its journal at each publish point."""

    def __init__(self, *, series_points: int = SERIES_POINTS,
                 also: Callable[[Mapping[str, Any]], None] | None = None,
                 also_reset: Callable[[], None] | None = None) -> None:
        self.series_points = max(3, series_points)
        #: another reader of the same records in the same order (the advantage-play signals), and its reset
        self.also, self.also_reset = also, also_reset
        #: the last ``seq`` read (None: not loaded from the journal yet)
        self.upto: int | None = None
        self._reset(None)

    def _reset(self, opened: float | None) -> None:
        self.tally = Tally()
        self.opened = opened
        self.closed: float | None = None
        self.last_ts: float | None = opened
        self._series = _Series(self.series_points - 2)  # besides the origin and the latest round
        self._builder = RoundBuilder()
        self._cache: dict[_Point, dict[str, Any]] = {}
        self._cache_theory: Theory | None = None
        #: each dealer's sums since the open (its time on duty counted from it, as the table's open time)
        self.dealers = DealerFold()
        if opened is not None:
            self.dealers.start_clock(opened)

    @property
    def loaded(self) -> bool:
        return self.upto is not None

    def take(self, body: Mapping[str, Any]) -> bool:
        """Take one public record (``seq`` order); True when it is one the table republishes after."""
        kind = body.get("type")
        if self.also is not None:
            try:
                self.also(body)
            except Exception:  # the signals' failure never stops (nor repeats) the figures' sums
                log.exception("the advantage-play signals failed on a record", extra={"seq": body.get("seq")})
        ts = body.get("ts")
        ts = float(ts) if isinstance(ts, int | float) and not isinstance(ts, bool) else None
        if kind == "table_opened":
            self._reset(ts)
            return True
        if ts is not None and self.closed is None:
            self.last_ts = ts
        self.dealers.take(body)
        if kind == "table_closed":
            self.closed = ts
            if ts is not None:
                self.dealers.stop_clock(ts)
        elif ts is not None and self.closed is None:
            self.dealers.clock_to(ts)
        done = self._builder.add(body)
        if done is not None:
            t = self.tally
            handle, net = t.handle, t.house_net
            t.add(done)
            self.dealers.add_round(self.dealers.round_dealer(), round_sums(done, t.handle - handle, t.house_net - net))
            self._series.add(_Point(t.rounds, t.house_net, t.initial, t.squares, t.pairs, float(done["ended"])))
        return kind in PUBLISH_ON

    def _take_rows(self, rows: Iterable[Any]) -> bool:
        """Fold the rows in; ``upto`` follows each row taken, so a row that fails is never folded in twice."""
        due = False
        for row in rows:
            body = json.loads(row.body)
            if isinstance(body, dict):
                due = self.take(body) or due
            if self.upto is not None:
                self.upto = int(row.seq)
        return due

    def load(self, log: PublicLog) -> None:
        """Seed from the journal: the records from the last ``table_opened`` on (read once, at start)."""
        self._reset(None)
        if self.also_reset is not None:
            self.also_reset()
        last = log.last_seq
        self._take_rows(log.records(_last_open(log) or 1, last))
        self.upto = last

    def advance(self, log: PublicLog) -> bool:
        """Read the records committed since the last call; True when one of them is a publish point."""
        if self.upto is None:
            self.load(log)
            return True
        last = log.last_seq
        if last <= self.upto:
            return False
        due = self._take_rows(log.records(self.upto + 1, last))
        self.upto = last
        return due

    def payload(self, theory: Theory | None, *, table_id: str, profile: str, pit: str | None = None,
                shuffle: Mapping[str, Any] | None = None,
                flagged_spots: Sequence[Mapping[str, Any]] | None = None) -> dict[str, Any]:
        """The ``analytics`` message (money as decimal strings; ``theory`` None: its figures ``null``; ``pit``: the
        table's setting, so a floor groups the figures by pit)."""
        t = self.tally
        edge = theory.edge if theory is not None else None
        sigma = theory.spread.sigma if theory is not None else None
        theoretical = round(t.initial * edge) if edge is not None else None
        variance = win_variance(theory.spread, t.squares, t.pairs) if theory is not None else None
        sd = math.sqrt(variance) if variance else None  # None: no theory yet, or no wager yet (as the report's)
        z = z_score(t.house_net, theoretical, variance, t.rounds) if theoretical is not None and variance else None
        end = self.closed if self.closed is not None else self.last_ts
        open_s = max(0.0, end - self.opened) if self.opened is not None and end is not None else 0.0
        hours = open_s / 3600.0

        def per_hour(count: int) -> float | None:
            return _r6(count / hours) if hours > 0 else None

        def money(cents: int | None) -> str | None:
            return None if cents is None else format_money(cents)

        return {
            "table_id": table_id, "pit": pit, "seq": self.upto, "profile": profile,
            "opened": self.opened, "opened_at": _iso(self.opened), "closed_at": _iso(self.closed),
            "rounds": t.rounds, "hands": t.hands, "decisions": t.decisions,
            "handle": format_money(t.handle), "house_net": format_money(t.house_net),
            "initial_wagers": format_money(t.initial),
            "theoretical_edge": _r6(edge), "theoretical_win": money(theoretical),
            "hold": _r6(t.house_net / t.handle) if t.handle else None,
            "theoretical_hold": _r6(theoretical / t.handle) if theoretical is not None and t.handle else None,
            "win_z": _r6(z), "win_sd": money(round(sd) if sd is not None else None),
            "sigma": _r6(sigma), "covariance": _r6(theory.spread.covariance) if theory is not None else None,
            "sigma_source": theory.spread.source if theory is not None else None, "min_rounds": MIN_ROUNDS,
            "open_s": _r6(open_s), "play_s": _r6(t.play), "idle_s": _r6(max(0.0, open_s - t.play)),
            "rounds_per_hour": per_hour(t.rounds), "hands_per_hour": per_hour(t.hands),
            "decisions_per_hour": per_hour(t.decisions),
            "mean_round_s": _r6(t.play / t.rounds) if t.rounds else None,
            "series": self._series_json(theory),
            "shuffle": dict(shuffle) if shuffle is not None else dict(no_shuffle_scores()),
            "flagged_spots": [dict(f) for f in flagged_spots] if flagged_spots is not None else [],
            "dealers": self._dealers_json(theory),
        }

    def _dealers_json(self, theory: Theory | None) -> dict[str, dict[str, Any]]:
        """Each dealer's figures since the open (rounds with no dealer on duty are no one's: not listed)."""
        out: dict[str, dict[str, Any]] = {}
        for dealer in sorted(d for d in self.dealers.sums if d is not None):
            sums = self.dealers.sums[dealer]
            out[dealer] = figures_json(
                sums, theoretical=round(sums.initial * theory.edge) if theory is not None else None,
                variance=win_variance(theory.spread, sums.squares, sums.pairs) if theory is not None else None)
        return out

    def _series_json(self, theory: Theory | None) -> list[dict[str, Any]]:
        """The chart's points as JSON, each made once per theory (a settlement adds one, and they are kept)."""
        if theory is not self._cache_theory:
            self._cache_theory, self._cache = theory, {}
        edge = theory.edge if theory is not None else None
        origin = _Point(0, 0, 0, 0, 0, self.opened if self.opened is not None else 0.0)
        cache, old = {}, self._cache
        for p in [origin, *self._series.all()]:
            made = old.get(p)
            if made is None:
                made = {"round": p.rounds, "ts": round(p.ts, 3), "house_net": format_money(p.house_net),
                        "theoretical_win": format_money(round(p.initial * edge)) if edge is not None else None,
                        "sd": format_money(round(math.sqrt(win_variance(theory.spread, p.squares, p.pairs))))
                        if theory is not None else None}
            cache[p] = made
        self._cache = cache  # the points thinned out are forgotten
        return list(cache.values())


def _last_open(log: PublicLog) -> int:
    """The ``seq`` of the last ``table_opened`` record, reading backwards a window at a time; else the first
    record the journal still holds (0: none, or the first after an archived part, ``docs/journal.md``)."""
    base = getattr(getattr(log, "base", None), "seq", 0)  # a journal continuing an archive starts after it
    floor = base if isinstance(base, int) else 0
    hi = log.last_seq
    while hi > floor:
        lo = max(floor + 1, hi - _WINDOW + 1)
        found = 0
        for row in log.records(lo, hi):
            if '"table_opened"' in row.body and json.loads(row.body).get("type") == "table_opened":
                found = int(row.seq)
        if found:
            return found
        hi = lo - 1
    return floor + 1 if floor else 0


def _main(argv: list[str]) -> int:
    """``python -m controller.analytics.live [PATH]``: the theory of the rules on stdin (``{"rules": rules JSON,
    "key": hex or null, "take_kept": bool}``) printed as JSON; with PATH and a key, taken from PATH when kept
    there, it checks and ``take_kept`` (another child of a start before may have kept it), else kept there,
    sealed."""
    os.nice(10)
    asked = json.loads(sys.stdin.read())
    rules, key = rules_from_json(asked["rules"]), asked["key"]
    method = kept_figures.method_key(METHOD_SOURCES)
    if not argv or key is None or method is None:
        print(json.dumps(_fields(rules, "", Theory(theoretical_edge(rules), spread(rules)))))
        return 0
    path, seal_key = Path(argv[0]), bytes.fromhex(key)
    # One worker at a time per set of rules: a table killed and restarted many times over (the soak, a crash
    # loop) leaves its child working on; the next start's child waits for it here and reads what it kept,
    # instead of a pile of children working the same figures out at once.
    try:
        lock = kept_figures.lock_file(path)
    except (OSError, NotChecked) as exc:  # no folder of the table's own to keep it in: worked out, not kept
        log.warning("the theoretical figures cannot be kept", extra={"path": str(path), "error": str(exc)})
        print(json.dumps(_fields(rules, method, Theory(theoretical_edge(rules), spread(rules)))))
        return 0
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        theory = _kept(path, seal_key, rules, method) if asked.get("take_kept", True) else None
        if theory is None:
            theory = Theory(theoretical_edge(rules), spread(rules))
            try:
                kept_figures.write_sealed(path, seal_key, _fields(rules, method, theory))
            except (OSError, NotChecked) as exc:
                log.warning("the theoretical figures could not be kept", extra={"path": str(path),
                                                                                "error": str(exc)})
    finally:
        os.close(lock)
    print(json.dumps(_fields(rules, method, theory)))
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
