"""The retained ``analytics`` topic of a running table: the figures brought up to the journal, handed over.

At each settlement and shoe end (and at start) the figures since the table was last opened (hold against
theoretical, pace, the shuffle scores, the flagged spots: :mod:`controller.analytics.live`) are brought up to
the journal and handed to the publisher, off the card's path: latest wins, never in the events' way. The rules'
theoretical figures are worked out on a worker thread (:func:`theory_for`, kept beside the journal, sealed under
a key derived from the journal's: :mod:`controller.kept_figures`): until they
are known the analytics go out without them, and again once they are.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from concurrent.futures import Future
from pathlib import Path

from controller import kept_figures
from controller.analytics.live import SEAL_PURPOSE, FlagsProvider, LiveAnalytics, ShuffleProvider, Theory, theory_for
from controller.analytics.live_signals import SignalWatch
from controller.game.rules import Rules
from controller.mqtt.publisher import AnalyticsPublisher
from controller.service.core import TableCore

log = logging.getLogger("controller.table")


class AnalyticsFeed:
    """Publishes one table's ``analytics``; ``shuffle`` and ``flags`` are read at each publication."""

    def __init__(self, core: TableCore, analytics: LiveAnalytics, signals: SignalWatch, *,
                 shuffle: ShuffleProvider, flags: FlagsProvider) -> None:
        self.core = core
        self.analytics = analytics
        self.signals = signals
        self.shuffle = shuffle
        self.flags = flags
        self._theory_awaited: Future[Theory] | None = None  # republish when it is known
        self._theory_rules: tuple[Rules, Future[Theory]] | None = None  # the rules in force and their theory
        self._theory_missing = False  # the last analytics went out without the theoretical figures
        #: where the theoretical figures are kept by the rules' digest: beside the journal (a restart has them)
        journal_path = core.journal.path
        self.theory_dir: Path | None = None if journal_path.name == ":memory:" else journal_path.parent / ".theory"
        #: what they are sealed under there (:mod:`controller.kept_figures`); a journal without a key (the public
        #: test key: anyone could seal) keeps nothing on disk: the process keeps them in memory
        self.theory_key: bytes | None = (kept_figures.subkey(core.journal.seal, SEAL_PURPOSE)
                                         if core.journal.keyed and self.theory_dir is not None else None)

    def warm(self) -> None:
        """Start working out the rules' theoretical figures (on its worker thread; kept once known)."""
        theory_for(self.core.table.rules, self.theory_dir, self.theory_key)

    def publish(self) -> None:
        """Bring the figures up to the journal (only the records since the last call) and hand them to the
        publisher. A failure is logged: the round is journaled and published whatever becomes of them."""
        core = self.core
        publisher = core.publisher
        if not isinstance(publisher, AnalyticsPublisher):
            return
        try:
            self.analytics.advance(core.journal)
            self.signals.align(core.table.shuffles)  # the shoes numbered as the table counts them
            theory = self._theory()
            self._theory_missing = theory is None
            publisher.publish_analytics(self.analytics.payload(
                theory, table_id=core.table_id, pit=core.pit, profile=core.table.rules.name,
                shuffle=self.shuffle(), flagged_spots=self.flags()))
        except Exception:
            log.exception("the analytics could not be published", extra={"table": core.table_id})

    def _theory(self) -> Theory | None:
        """The rules' edge and spread when known; else None, and the analytics go out again once they are."""
        rules = self.core.table.rules
        if self._theory_rules is None or self._theory_rules[0] is not rules:  # (theory_for hashes the rules)
            self._theory_rules = (rules, theory_for(rules, self.theory_dir, self.theory_key))
        future = self._theory_rules[1]
        if future.done():
            if future.cancelled() or future.exception() is not None:
                if future is not self._theory_awaited:
                    self._theory_awaited = future
                    log.error("the theoretical figures could not be computed: published as null",
                              extra={"table": self.core.table_id,
                                     "error": "cancelled" if future.cancelled() else repr(future.exception())})
                return None
            return future.result()
        if future is not self._theory_awaited:
            self._theory_awaited = future
            loop = asyncio.get_running_loop()

            def known(_: Future[Theory]) -> None:  # on the worker thread
                with contextlib.suppress(RuntimeError):  # the loop is gone: nothing left to publish to
                    loop.call_soon_threadsafe(self.publish)

            future.add_done_callback(known)
        return None

    async def complete(self, *, timeout: float) -> None:
        """At stop: the last analytics went out before the theory was known? Wait for it (bounded), publish."""
        if not self._theory_missing or not self.analytics.loaded:
            return
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(
                theory_for(self.core.table.rules, self.theory_dir, self.theory_key))), timeout)
        self.publish()
