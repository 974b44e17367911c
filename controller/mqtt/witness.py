"""The broker as a witness of a journal's end: the retained ``state`` of each table.

Why: a journal put back from an older copy *together with* its anchor (both restored from the same
backup, or the anchor removed) has a valid chain and matches its anchor. The broker still holds the
``<prefix>/<table>/state`` the table last published (retained), whose ``seq`` is that of the last
event the table applied and whose ``journal_id`` names the journal it came from: a journal that ends
before that ``seq`` was rolled back, and a journal of another id at any ``seq`` is not the one the pit
saw (DESIGN, "Journal integrity and game recall"; ``docs/journal.md``, "The broker's retained state").
DESIGN's roles let a table read its own subtree, so the table asks with its own credentials.

How: one short connection (about :data:`WITNESS_TIMEOUT_S` in all, never more), one SUBSCRIBE to
the table's own ``state`` topic and the central recorder's position of it, ``<prefix>/recorder/<table>``
(or ``<prefix>/+/state`` and ``<prefix>/recorder/+`` for many tables at once; the recorder's side is
:mod:`controller.mqtt.recorder_witness`), then a second subscription used only as a marker: Mosquitto
and amqtt send a subscription's retained messages before they answer the next SUBSCRIBE, so once the
marker's SUBACK is in, whatever retained state exists has arrived and "none" is known at once,
without waiting out a timeout.

Reading never decides: no answer (broker unreachable, subscription refused, an ACL that hides the
``state``, a malformed payload) is a silent witness with one log line saying why (no recorder position:
a debug line, a pit without a recorder is the usual case); :class:`RetainedStateWitness` and
:class:`controller.mqtt.recorder_witness.RecorderWitness` then testify (:mod:`controller.journal.witnesses`)
and the table's start is judged on every witness together (:func:`broker_witnesses`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import ssl
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paho.mqtt.reasoncodes import ReasonCode

from controller.contract.topics import topic_root
from controller.journal.positions import Held, compare
from controller.journal.witnesses import JournalEnd, Testimony, Witness
from controller.mqtt.addresses import parse_broker_url, redact_url, tls_context, witness_client_id
from controller.mqtt.client import MqttClient, MqttCodeError, MqttError
from controller.mqtt.recorder_witness import RecorderPosition, RecorderWitness, parse_position, recorder_topic

__all__ = ["WITNESS_TIMEOUT_S", "Retained", "RetainedState", "RetainedStateWitness", "broker_witnesses", "collect",
           "read_retained", "retained_state_seq", "retained_state_seqs", "retained_states"]

log = logging.getLogger("controller.mqtt.witness")
_paho_log = logging.getLogger("controller.mqtt.witness.paho")

#: the whole witness, connection included, takes at most about this long (seconds): a start's extra delay
WITNESS_TIMEOUT_S = 2.0
#: how many table ids a log line names before it says "and N more"
_NAMED = 5
_HEX = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True, slots=True)
class RetainedState:
    """What the broker retains of a table's ``state``: its ``seq`` and the journal it came from (None: a
    state published before states named their journal)."""

    seq: int
    journal_id: str | None = None
    #: the chain hash of the journal's record at ``seq`` the state named (None: none, an unkeyed journal's)
    head: str | None = None


def _seq_of(payload: Any) -> RetainedState | str:
    """The ``seq`` and journal of a ``state`` payload, or why there is none (a short reason for the log)."""
    if not isinstance(payload, bytes | bytearray):
        return "not bytes"
    try:
        data = json.loads(payload)
    except (ValueError, UnicodeDecodeError):
        return "not JSON"
    if not isinstance(data, dict):
        return "not a JSON object"
    seq = data.get("seq")
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 0:
        return f"no integer seq ({seq!r:.40})"
    journal_id = data.get("journal_id")
    head = data.get("head")
    return RetainedState(seq, journal_id if isinstance(journal_id, str) and journal_id else None,
                         head if isinstance(head, str) and _HEX.fullmatch(head) else None)


@dataclass(frozen=True, slots=True)
class Retained:
    """What one broker retains for a table's start: its ``state`` and the recorder's position of it (each, or why
    there is none: a short reason)."""

    state: RetainedState | str
    recorder: RecorderPosition | str
    #: False: the broker could not be asked (unreachable, no answer in time, the subscription refused): the
    #: table asks it again at its first connection, before it publishes anything (:mod:`controller.mqtt.late_witness`)
    answered: bool = True


def _names(ids: Collection[str]) -> str:
    shown = sorted(ids)
    more = len(shown) - _NAMED
    return ", ".join(shown[:_NAMED]) + (f" and {more} more" if more > 0 else "")


async def retained_states(broker_url: str, *, prefix: str, table_ids: Collection[str],
                          username: str | None = None, password: str | None = None,
                          tls_ca: str | Path | None = None, tls_cert: str | Path | None = None,
                          tls_key: str | Path | None = None,
                          timeout: float = WITNESS_TIMEOUT_S) -> dict[str, RetainedState | str]:
    """The retained ``state`` of each of ``table_ids``, or why there is none (see :func:`read_retained`)."""
    found = await read_retained(broker_url, prefix=prefix, table_ids=table_ids, username=username,
                                password=password, tls_ca=tls_ca, tls_cert=tls_cert, tls_key=tls_key, timeout=timeout)
    return {t: r.state for t, r in found.items()}


async def read_retained(broker_url: str, *, prefix: str, table_ids: Collection[str],
                        username: str | None = None, password: str | None = None,
                        tls_ca: str | Path | None = None, tls_cert: str | Path | None = None,
                        tls_key: str | Path | None = None,
                        timeout: float = WITNESS_TIMEOUT_S) -> dict[str, Retained]:
    """The retained ``state`` of each of ``table_ids`` on the broker and the recorder's position of it, each or
    why there is none (a short reason).

    One connection whatever the number of tables: one table subscribes to its own ``state`` topic and its
    recorder position, several to ``<prefix>/+/state`` and ``<prefix>/recorder/+``. Credentials and TLS as the
    publisher takes them (``username`` and ``password`` override the URL's). Returns within about ``timeout``
    seconds; never raises for a broker's sake, and logs one line for the tables without a ``seq``.
    """
    wanted = set(table_ids)
    found: dict[str, RetainedState | str] = {}
    if not wanted:
        return {}
    shown_url = redact_url(broker_url)
    who = next(iter(wanted)) if len(wanted) == 1 else f"{len(wanted)} tables"
    try:
        seqs, bad, positions = await asyncio.wait_for(
            _read(broker_url, prefix, wanted, username, password, tls_ca, tls_cert, tls_key, timeout),
            timeout + 0.5)  # a backstop: each step below has its own share of ``timeout``
    except (MqttError, OSError, ssl.SSLError, ValueError, TimeoutError) as exc:
        why = f"could not ask {shown_url} ({_reason(exc)})"
        log.info("broker witness: %s for the retained state of %s", why, who)
        return {t: Retained(why, why, answered=False) for t in wanted}
    except _Refused as exc:
        why = f"{shown_url} refused the subscription to {exc.topic} ({exc.code})"
        log.info("broker witness: %s", why)
        return {t: Retained(why, why, answered=False) for t in wanted}
    except Exception as exc:  # reading is never a gate: whatever went wrong, the witness is silent
        why = f"asking {shown_url} failed ({type(exc).__name__}: {_reason(exc)})"
        log.warning("broker witness: %s for the retained state of %s", why, who)
        return {t: Retained(why, why, answered=False) for t in wanted}
    found.update(seqs)
    if bad:
        log.warning("broker witness: %s holds a retained state without a usable seq for %s (%s)", shown_url,
                    _names(bad), "; ".join(f"{t}: {why}" for t, why in sorted(bad.items())[:_NAMED]))
        found.update({t: f"{shown_url} holds a retained state without a usable seq ({why})" for t, why in bad.items()})
    missing = wanted - seqs.keys() - bad.keys()
    if missing:
        log.info("broker witness: %s holds no retained state for %s (none published yet, or the broker does not "
                 "let the table read it)", shown_url, _names(missing))
        found.update(dict.fromkeys(missing, f"{shown_url} holds no retained state"))
    return {t: Retained(found[t], _position(positions, t, shown_url)) for t in wanted}


def _position(positions: dict[str, RecorderPosition | str], table: str, shown_url: str) -> RecorderPosition | str:
    """The recorder's position of ``table`` as read, or why there is none (logged: a bad one as a warning)."""
    found = positions.get(table)
    if found is None:
        log.debug("broker witness: %s holds no recorder position of %s", shown_url, table)
        return f"{shown_url} holds no recorder position of {table} (no recorder, or none that saw it)"
    if isinstance(found, str):
        log.warning("broker witness: %s holds a recorder position of %s that is not one (%s)", shown_url, table,
                    found)
        return f"{shown_url} holds a recorder position of {table} that is not one ({found})"
    return found


async def retained_state_seqs(broker_url: str, *, prefix: str, table_ids: Collection[str],
                              username: str | None = None, password: str | None = None,
                              tls_ca: str | Path | None = None, tls_cert: str | Path | None = None,
                              tls_key: str | Path | None = None,
                              timeout: float = WITNESS_TIMEOUT_S) -> dict[str, int | None]:
    """The retained ``state.seq`` of each of ``table_ids`` (None where there is none; see :func:`retained_states`)."""
    states = await retained_states(broker_url, prefix=prefix, table_ids=table_ids, username=username,
                                   password=password, tls_ca=tls_ca, tls_cert=tls_cert, tls_key=tls_key,
                                   timeout=timeout)
    return {t: s.seq if isinstance(s, RetainedState) else None for t, s in states.items()}


async def retained_state_seq(broker_url: str, *, prefix: str, table_id: str, username: str | None = None,
                             password: str | None = None, tls_ca: str | Path | None = None,
                             tls_cert: str | Path | None = None, tls_key: str | Path | None = None,
                             timeout: float = WITNESS_TIMEOUT_S) -> int | None:
    """The retained ``<prefix>/<table_id>/state`` ``seq`` on the broker, or None (see :func:`retained_state_seqs`)."""
    seqs = await retained_state_seqs(broker_url, prefix=prefix, table_ids=(table_id,), username=username,
                                     password=password, tls_ca=tls_ca, tls_cert=tls_cert, tls_key=tls_key,
                                     timeout=timeout)
    return seqs[table_id]


class _Refused(Exception):
    """The broker answered a SUBSCRIBE with a failure code."""

    def __init__(self, topic: str, code: str) -> None:
        super().__init__(topic, code)
        self.topic, self.code = topic, code


def _failed(code: ReasonCode | int) -> bool:
    """A SUBACK code that refuses the subscription (0x80 and up; MQTT 3.1.1 has only 0x80)."""
    return bool(code.is_failure) if isinstance(code, ReasonCode) else code >= 0x80


def _reason(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "no answer in time"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    # the client words paho's and the socket's errors as "[Errno 111] ..." or "[code:135] ...": the words only
    return re.sub(r"^\[(Errno -?\d+|code:\d+)\] ", "", str(exc).strip()) or type(exc).__name__


def reader_client_id(prefix: str, wanted: Collection[str], user: str | None) -> str:
    """The witness reader's client id: the table's own (reserved for it on the floor) when the table itself reads
    its witnesses; otherwise the pit's, so a demo reading one table's state as ``dashboard`` is not refused for
    taking that table's reserved id."""
    own = next(iter(wanted)) if len(wanted) == 1 else None
    return witness_client_id(prefix, own if own is not None and user in (None, own) else "pit")


async def _read(broker_url: str, prefix: str, wanted: set[str], username: str | None, password: str | None,
                tls_ca: str | Path | None, tls_cert: str | Path | None, tls_key: str | Path | None,
                timeout: float) -> tuple[dict[str, RetainedState], dict[str, str], dict[str, RecorderPosition | str]]:
    """Connect, subscribe, take the retained states and recorder positions: (seq by table, why not by table,
    position or why it is not one by table)."""
    address = parse_broker_url(broker_url)
    deadline = time.monotonic() + timeout

    def left() -> float:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        return remaining

    user = username if username is not None else address.username
    # ``timeout`` bounds the CONNACK and SUBACK waits; ``connect_timeout`` paho's TCP connect (run in an executor
    # thread, 5 s by default), which would otherwise hold a start (and the loop's shutdown) on a silent host
    client = MqttClient(
        address.host, address.port,
        username=user,
        password=password if password is not None else address.password,
        identifier=reader_client_id(prefix, wanted, user),
        clean_session=True, transport=address.transport,
        websocket_path=address.path, keepalive=max(5, int(timeout) + 1), timeout=left(),
        connect_timeout=max(0.05, left()),
        tls_context=tls_context(address.tls, tls_ca, tls_cert, tls_key), logger=_paho_log,
    )
    async with client:
        return await collect(client, broker_url, prefix, wanted, left)


async def collect(client: MqttClient, broker_url: str, prefix: str, wanted: set[str], left: Callable[[], float]
                  ) -> tuple[dict[str, RetainedState], dict[str, str], dict[str, RecorderPosition | str]]:
    """On a connected ``client``: subscribe, take the retained states and recorder positions of ``wanted`` (see
    :func:`_read`); ``left()`` is the time left for each step (raising :class:`TimeoutError` when none)."""
    first = next(iter(wanted))
    one = len(wanted) == 1
    topic = f"{topic_root(prefix, first if one else '+')}/state"
    recorder = recorder_topic(prefix, first if one else "+")
    root = topic_root(prefix, "")  # "<prefix>/": a state topic is root + table id + "/state"
    recorder_root = recorder_topic(prefix, "")
    seqs: dict[str, RetainedState] = {}
    bad: dict[str, str] = {}
    positions: dict[str, RecorderPosition | str] = {}
    # one SUBSCRIBE for both: the recorder's position costs no round trip of its own
    granted: list[ReasonCode | int] = list(await client.subscribe([(topic, 0), (recorder, 0)], timeout=left()))
    if granted and _failed(granted[0]):
        raise _Refused(topic, str(granted[0]))
    if len(granted) < 2 or _failed(granted[1]):  # the state alone then: the recorder is silent
        refused = str(granted[1]) if len(granted) > 1 else "no answer"
        log.info("broker witness: %s refused the subscription to %s (%s)", redact_url(broker_url), recorder,
                 refused)
        positions.update(dict.fromkeys(wanted, f"{redact_url(broker_url)} refused the subscription to "
                                               f"{recorder} ({refused})"))
    # The marker: a topic of the table's own (DESIGN's ACL lets a table read its subtree), never published.
    with contextlib.suppress(MqttCodeError):  # a refused marker is an answer all the same
        await client.subscribe(f"{topic_root(prefix, first)}/cmd/witness-marker", qos=0, timeout=left())
    for _ in range(len(client.messages)):
        message = await asyncio.wait_for(anext(client.messages), left())
        name = message.topic
        if name.startswith(recorder_root) and message.retain:
            table = name[len(recorder_root):]
            if table in wanted and table not in positions:
                positions[table] = parse_position(message.payload, table)
            continue
        if not (name.startswith(root) and name.endswith("/state")):
            continue  # amqtt may send a new session other topics' retained messages
        table = name[len(root):-len("/state")]
        if table not in wanted or "/" in table or not message.retain:
            continue
        seq = _seq_of(message.payload)
        if isinstance(seq, RetainedState):
            seqs[table] = seq
            bad.pop(table, None)
        else:
            bad[table] = seq
    return seqs, bad, positions


class RetainedStateWitness:
    """The broker's retained ``state`` of a table as a witness (:class:`controller.journal.witnesses.Witness`):
    ``retained`` as :func:`retained_states` read it (a reason string: silent)."""

    def __init__(self, table_id: str, broker_url: str, retained: RetainedState | str, *, answered: bool = True) -> None:
        self.retained = retained
        self.broker_url = broker_url
        #: False: the broker could not be asked at start (asked again at the first connection)
        self.answered = answered
        self.name = f"the broker's retained state of {table_id} ({redact_url(broker_url)})"

    def testify(self, journal: JournalEnd) -> Testimony:
        state = self.retained
        if isinstance(state, str):
            return Testimony(self.name, "silent", None, state)
        found, ours = compare(journal, Held(state.seq, state.journal_id, state.seq, state.head))
        if found == "another_journal":
            return Testimony(self.name, "differs", state.seq,
                             f"it is of journal {state.journal_id} at seq {state.seq}, but this is journal "
                             f"{journal.journal_id} at seq {journal.last_seq} (another journal in the table's place)")
        if found == "ahead":
            return Testimony(self.name, "ahead", state.seq)
        if found == "no_journal":
            return Testimony(self.name, "silent", state.seq, f"its state (seq {state.seq}) names no journal")
        if found == "another_head" and ours is not None:
            return Testimony(self.name, "differs", state.seq,
                             f"its state at seq {state.seq} names head {(state.head or '')[:16]}..., but this "
                             f"journal's record at seq {state.seq} has head {ours.hex()[:16]}... (rolled back and "
                             "played on, or rewritten and chained again)")
        return Testimony(self.name, "vouches", state.seq)


def broker_witnesses(table_id: str, broker_url: str, retained: Retained) -> list[Witness]:
    """The witnesses one broker's answer makes for a table's start: its retained ``state`` and the recorder's
    position of the table (each silent where the broker holds none)."""
    return [RetainedStateWitness(table_id, broker_url, retained.state, answered=retained.answered),
            RecorderWitness(table_id, broker_url, retained.recorder)]
