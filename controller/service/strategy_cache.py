"""The dealer's outcomes of a table's rules, worked out once and kept beside its journal, sealed under its key.

Rated play prices every round with the rules' basic-strategy house edge and judges decisions by their EVs
(:mod:`controller.strategy.ev`); nine tenths of that arithmetic is the dealer's outcomes of the 550 starting
situations (:func:`controller.strategy.ev.dealer_table`), about 0.7 s of CPU that every start spent again before
the table went back in play. They are a function of the rules alone, so a table keeps them in its state
directory (``<state_dir>/.theory/dealer-<rules>.json``, mode 0600, beside the analytics' theory) and a start takes
them back instead, after checking them:

* the file names the exact rules (a SHA-256 of every field, not the short digest) and the sources the arithmetic
  comes from (:data:`METHOD_SOURCES`: a new version works them out again), and holds a seal (HMAC) of all of it
  under a key of its own derived from the journal's (:mod:`controller.kept_figures`, the one rule for every such
  file: the folder 0700, the file 0600, never through a link);
* one that does not check (edited, another table's key, other rules, older sources, unreadable, open to others)
  is not used: the outcomes are worked out again and kept anew. A journal without a key (tests, benches) keeps
  nothing.

The figures are the same either way (floats kept as their exact ``repr``): a start's EVs and edge, and every
situation's EV ready before the first card, as when it worked them out. When nothing is kept yet (a new state
directory, new rules, a new version), :func:`work_ahead` starts working them out before the journal's check, on a
thread of their own: the check's threads wait on SQLite, which leaves the interpreter free; nothing of it is used
before the check has passed, and a refused journal ends the process as before (the thread is a daemon).
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any, Protocol

from controller import kept_figures
from controller.game.rules import Rules
from controller.kept_figures import NotChecked
from controller.strategy.ev import DealerEntry, dealer_table, remember_dealer_outcomes

log = logging.getLogger("controller.table")

#: the sources the dealer's outcomes are worked out by (under the ``controller`` package): a change to one makes
#: the kept outcomes stale
METHOD_SOURCES = ("strategy/ev.py", "game/dealer.py")
#: what the seal is for: the key these files are sealed under (:func:`controller.kept_figures.subkey`)
SEAL_PURPOSE = "dealer outcomes"
#: the folder beside the journal where a table keeps what it works out from its rules
KEPT_DIR = kept_figures.KEPT_DIR
#: the fields of a kept file (besides its seal)
FIELDS = ("rules", "method", "outcomes")


class _Journal(Protocol):
    keyed: bool

    @property
    def path(self) -> Path: ...

    def seal(self, purpose: str, data: bytes) -> str: ...


def rules_key(rules: Rules) -> str:
    """SHA-256 (hex) of every field of ``rules``: the exact rules the outcomes are kept for."""
    return kept_figures.rules_key(rules)


def method_key() -> str | None:
    """SHA-256 (hex) of the :data:`METHOD_SOURCES`; None when one cannot be read (then nothing is kept)."""
    return kept_figures.method_key(METHOD_SOURCES)


#: the outcomes being worked out ahead (:func:`work_ahead`), by the rules' key: :func:`warm` waits for them
_ahead: dict[str, threading.Thread] = {}


def kept_path(journal_path: Path, rules: Rules) -> Path:
    """Where the table of the journal at ``journal_path`` keeps the dealer's outcomes of ``rules``."""
    return journal_path.parent / KEPT_DIR / f"dealer-{rules_key(rules)[:32]}.json"


def work_ahead(rules: Rules, journal_path: Path) -> None:
    """Before the journal at ``journal_path`` is checked: when its table keeps no outcomes of ``rules`` yet, start
    working them out on a daemon thread (taken by :func:`warm` once the check has passed)."""
    key = rules_key(rules)
    if key in _ahead or method_key() is None or kept_path(journal_path, rules).exists():
        return
    thread = _ahead[key] = threading.Thread(target=dealer_table, args=(rules,), name="dealer-outcomes", daemon=True)
    thread.start()


def _entries(raw: Any) -> list[DealerEntry]:
    """The entries of a kept file, each checked for its shape (ValueError otherwise)."""
    if not isinstance(raw, list):
        raise ValueError("no list of outcomes")
    entries: list[DealerEntry] = []
    for item in raw:
        shoe, up, h17, p_bj, dist = item
        if (not isinstance(shoe, list) or len(shoe) != 11 or not all(type(c) is int for c in shoe)
                or type(up) is not int or type(h17) is not bool or type(p_bj) is not float
                or not isinstance(dist, list) or len(dist) != 6 or not all(type(d) is float for d in dist)):
            raise ValueError("an outcome of the wrong shape")
        entries.append((tuple(shoe), up, h17, p_bj, tuple(dist)))
    return entries


def _read(path: Path, seal_key: bytes, rules: str, method: str) -> list[DealerEntry] | None:
    """The outcomes kept at ``path`` when they check (sealed under the key, for these rules and sources), else
    None (a warning logged when something was kept that does not check)."""
    try:
        kept = kept_figures.read_sealed(path, seal_key, FIELDS)
        if kept is None:
            return None
        if kept["rules"] != rules or kept["method"] != method:
            return None  # kept for other rules, or by other sources: stale
        return _entries(kept["outcomes"])
    except (NotChecked, ValueError, TypeError) as exc:
        log.warning("kept dealer outcomes do not check: worked out again", extra={"path": str(path),
                                                                                   "error": str(exc)})
        return None


def _keep(path: Path, seal_key: bytes, rules: str, method: str, entries: list[DealerEntry]) -> None:
    kept_figures.write_sealed(path, seal_key, {
        "rules": rules, "method": method, "outcomes": [[list(e[0]), *e[1:4], list(e[4])] for e in entries]})


def warm(rules: Rules, journal: _Journal) -> bool:
    """Make the dealer's outcomes of ``rules`` known before the table plays: taken from what its journal's table
    kept when that checks (True), else worked out and kept (False). Never raises for the file: the outcomes are
    then worked out (the table plays either way)."""
    key = rules_key(rules)
    ahead = _ahead.pop(key, None)
    if ahead is not None:
        ahead.join()  # its outcomes are in the strategy's caches: dealer_table() below takes them from there
    method = method_key()
    if not journal.keyed or journal.path.name == ":memory:" or method is None:
        return False
    path = kept_path(journal.path, rules)
    seal_key = kept_figures.subkey(journal.seal, SEAL_PURPOSE)
    entries = _read(path, seal_key, key, method)
    if entries is not None:
        remember_dealer_outcomes(entries)
        return True
    try:
        _keep(path, seal_key, key, method, dealer_table(rules))
    except (OSError, NotChecked) as exc:
        log.warning("the dealer outcomes could not be kept", extra={"path": str(path), "error": str(exc)})
    return False
