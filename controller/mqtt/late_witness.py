"""The broker's witnesses asked late: at the table's first connection, when they could not answer at start.

Why: a table whose broker cannot be reached at start (a cable pulled, the broker restarting) starts on its
anchor alone, and a journal rolled back with its anchor (or cut back after a crash) then went online; when
the broker came back the table overwrote its retained ``state`` and never asked that witness again (issue
#33). DESIGN ("Journal integrity and game recall"): a witness that could not answer at start is asked at the
table's first connection to it, before the table publishes anything; one that is then ahead or differs halts
the table with an integrity alarm and nothing of the journal overwrites its position.

How: :func:`late_witness` makes a :class:`LateWitness` when the start's broker witness went unanswered
(:attr:`controller.mqtt.witness.Retained.answered`). It keeps the journal's position *at start* (the table
plays on while its broker is away: a journal rolled back to seq 100 that reached seq 130 meanwhile is still
behind a broker that held seq 120). The publisher calls :meth:`LateWitness.ask` on its first connection
before anything else: the same subscription as the start's (the retained ``state`` and the recorder's
position, then the marker; :func:`controller.mqtt.witness.collect`), judged as at start. Ahead or differs:
:class:`WitnessAlarm` (one line naming the witness and both positions), and the publisher stops without
publishing; no answer in time: the connection is dropped and the next one asks again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from controller.contract.topics import topic_root
from controller.journal import Journal, JournalError
from controller.journal.witnesses import NoWitness, Witness, judge, summary
from controller.mqtt.addresses import redact_url
from controller.mqtt.client import MqttClient, MqttError
from controller.mqtt.recorder_witness import RecorderWitness, recorder_topic
from controller.mqtt.witness import WITNESS_TIMEOUT_S, RetainedStateWitness, collect

__all__ = ["LateWitness", "WitnessAlarm", "late_witness"]

log = logging.getLogger("controller.mqtt.late_witness")


class WitnessAlarm(JournalError):
    """A witness silent at start answered at the first connection: it holds the journal behind it, or another
    journal. The table halts with an integrity alarm; nothing more is published."""


@dataclass(frozen=True, slots=True)
class AtStart:
    """The journal as it was when the table started (:class:`controller.journal.witnesses.JournalEnd`)."""

    path: Path
    journal_id: str
    last_seq: int
    last_input_id: int
    journal: Journal

    def record_hash(self, seq: int) -> bytes | None:
        return self.journal.record_hash(seq) if seq <= self.last_seq else None


class LateWitness:
    """The broker's retained ``state`` of one table and the recorder's position of it, asked at the publisher's
    first connection (see the module docstring)."""

    def __init__(self, journal: Journal, table_id: str, prefix: str, timeout: float = WITNESS_TIMEOUT_S) -> None:
        self.at_start = AtStart(journal.path, journal.journal_id, journal.last_seq, journal.last_input_id, journal)
        self.table_id = table_id
        self.prefix = prefix
        self.timeout = timeout
        #: True once a broker answered (then it is not asked again)
        self.answered = False

    async def ask(self, client: MqttClient, broker_url: str) -> None:
        """On the publisher's new connection, before it publishes: the witnesses' answer judged against the journal
        at start. :class:`WitnessAlarm` when one is ahead or differs; :class:`MqttError` when the broker does
        not answer in time (the publisher connects again and asks again)."""
        if self.answered:
            return
        deadline = time.monotonic() + self.timeout

        def left() -> float:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            return remaining

        table, shown = self.table_id, redact_url(broker_url)
        try:
            seqs, bad, positions = await collect(client, broker_url, self.prefix, {table}, left)
            await client.unsubscribe([f"{topic_root(self.prefix, table)}/state", recorder_topic(self.prefix, table),
                                      f"{topic_root(self.prefix, table)}/cmd/witness-marker"], timeout=left())
        except TimeoutError:
            raise MqttError(f"{shown} did not answer the journal's witness in time: asked again") from None
        except MqttError:
            raise
        except Exception as exc:  # a subscription refused: not an answer; asked again on the next connection
            raise MqttError(f"{shown} did not answer the journal's witness ({exc!r}): asked again") from None
        state = seqs.get(table) or bad.get(table) or f"{shown} holds no retained state"
        recorder = positions.get(table) or f"{shown} holds no recorder position of {table}"
        testimonies = [RetainedStateWitness(table, broker_url, state).testify(self.at_start),
                       RecorderWitness(table, broker_url, recorder).testify(self.at_start)]
        try:
            vouching = judge(self.at_start, testimonies, adopt_hint="")
        except NoWitness:
            vouching = []
        except JournalError as exc:
            raise WitnessAlarm(f"{exc} (asked at the first connection: the broker could not be reached at "
                               "start; nothing was published)") from None
        self.answered = True
        log.info("journal %s: asked at the first connection to %s (the broker could not be reached at start): "
                 "vouched for by %s", self.at_start.path, shown, summary(vouching))


def late_witness(journal: Journal, table_id: str, prefix: str, witnesses: Sequence[Witness]) -> LateWitness | None:
    """The witnesses to ask at the first connection: when the start's broker witness of ``table_id`` could not be
    asked (None: it answered, or none was asked: a new journal, a demo's own broker)."""
    if any(isinstance(w, RetainedStateWitness) and not w.answered for w in witnesses):
        return LateWitness(journal, table_id, prefix)
    return None
