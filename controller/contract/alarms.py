"""Alarm codes and their kinds (DESIGN.md, "Operators and roles"): which alarms there are and who clears them.

The engine raises alarms under these codes; the roles (who may acknowledge which kind), the ``alarms``
topic's ``kind`` and the dashboard (through the generated JSON) read the kind from :func:`alarm_kind` here,
never from the code's text themselves.
"""

from __future__ import annotations

from typing import Final, Literal

#: Who clears an alarm: ``journal`` and ``integrity`` surveillance (by name, with a reason); ``device`` the
#: technician or the pit; ``procedure`` the pit (or the dealer's button).
AlarmKind = Literal["procedure", "device", "integrity", "journal"]
ALARM_KINDS: Final[tuple[AlarmKind, ...]] = ("procedure", "device", "integrity", "journal")

#: Code prefixes of the alarms that halt for integrity: card count (a foreign or duplicate card), shuffler
#: count and composition, the peek reader against the shoe's read, the journal.
INTEGRITY_PREFIXES: Final = ("integrity_", "journal", "peek_mismatch")
#: The journal's own alarms (a failed write, a chain that does not verify, a witness that disagrees).
JOURNAL_PREFIX: Final = "journal"
#: An irregularity the shell reports: ``irregularity:<source>`` (a halting one is an integrity alarm).
IRREGULARITY_PREFIX: Final = "irregularity:"
#: A device that stopped answering: ``device_lost:<device>``.
DEVICE_LOST_PREFIX: Final = "device_lost:"
#: The deck-age warning: the decks in play must be changed within the profile's warning minutes.
DECK_CHANGE_DUE: Final = "deck_change_due"
#: The deck-age alarm: the decks in play are older than the profile allows.
DECK_CHANGE_OVERDUE: Final = "deck_change_overdue"
#: The alarm of a wall clock that went back or jumped forward against the table's monotonic time
#: (controller/service/clock.py): play goes on on the monotonic count; surveillance checks the PC's time source.
CLOCK_ALARM: Final = "clock_jump"
#: A shoe that fails the shuffle-quality monitor (DESIGN, "Table analytics").
SHUFFLE_QUALITY_ALARM: Final = "shuffle_quality"
#: The player-card readers' alarm (a lost reader, an unreadable card: controller/service/device_inputs.py), an
#: irregularity from this source.
CARD_READER_SOURCE: Final = "card_reader"
CARD_READER_ALARM: Final = IRREGULARITY_PREFIX + CARD_READER_SOURCE
#: The console's badge reader's alarm (a badge that could not be read whole: swipe again; docs/protocols.md), an
#: irregularity from this source that never halts.
BADGE_READER_SOURCE: Final = "badge_reader"
BADGE_READER_ALARM: Final = IRREGULARITY_PREFIX + BADGE_READER_SOURCE
#: The irregularities of a device, not of the dealer's procedure: the technician's or the pit's to clear.
DEVICE_CODES: Final = frozenset({CARD_READER_ALARM, BADGE_READER_ALARM})
#: Alarms the shell raises through an irregularity under the code a contract gives them.
NAMED_ALARMS: Final = frozenset({SHUFFLE_QUALITY_ALARM, CLOCK_ALARM})
#: Alarms that do not halt play but are surveillance's to clear, not the dealer's button (DESIGN, "Table
#: analytics": a shoe that fails the shuffle-quality monitor "does not halt play; surveillance decides").
SURVEILLANCE: Final = frozenset({SHUFFLE_QUALITY_ALARM, CLOCK_ALARM})


def device_lost(device: str) -> str:
    """The code of the alarm raised when ``device`` stops answering."""
    return DEVICE_LOST_PREFIX + device


def lost_device(code: str) -> str | None:
    """The device a ``device_lost`` alarm names, or None for any other code."""
    return code[len(DEVICE_LOST_PREFIX):] if code.startswith(DEVICE_LOST_PREFIX) else None


def irregularity(source: str) -> str:
    """The code of an irregularity from ``source`` that no contract names otherwise."""
    return IRREGULARITY_PREFIX + source


def needs_supervisor(code: str, halts: bool) -> bool:
    """Whether an alarm is cleared only by an ``ack_alarm`` naming its operator and giving a reason
    (DESIGN, "Operators and roles"): the integrity alarms, and any irregularity that halts play
    (a card that left the shoe unread, a hole card the peek reader never saw). A dealer's console
    button is not a supervisor."""
    return ((halts and (code.startswith(INTEGRITY_PREFIXES) or code.startswith(IRREGULARITY_PREFIX)))
            or code in SURVEILLANCE)


def alarm_kind(code: str, halts: bool) -> AlarmKind:
    """The kind of an alarm, from its code (who may acknowledge it: the roles).

    ``journal*``: journal; the alarms cleared only with a named operator and a reason (card count, a foreign
    or duplicate card, shuffler count and composition, the peek reader against the shoe, a card that left the
    shoe unread, ``shuffle_quality``, ``clock_jump``): integrity; a lost device, a player-card reader's and the
    badge reader's alarm (they never halt): device; the rest (dead cards, a dealer drawing on a stand total, decks
    due, a refused device input, insufficient cards): procedure.
    """
    if code.startswith(JOURNAL_PREFIX):
        return "journal"
    if needs_supervisor(code, halts):
        return "integrity"
    if code.startswith(DEVICE_LOST_PREFIX) or code in DEVICE_CODES:
        return "device"
    return "procedure"


#: Alarms no dealer causes, though of a kind a dealer's play can raise: the decks' age (the pit's schedule), the
#: shuffling machine's quality, the PC's clock, the program's own check (``irregularity:program``).
NOT_THE_DEALERS: Final = frozenset({DECK_CHANGE_DUE, DECK_CHANGE_OVERDUE, SHUFFLE_QUALITY_ALARM, CLOCK_ALARM,
                                    IRREGULARITY_PREFIX + "program"})


def procedure_error(code: str, halts: bool) -> bool:
    """Whether an alarm counts as a procedure error of the dealer on duty when it was raised (DESIGN, "The dealer
    on duty": a dealer's errors by code): the procedure and integrity alarms of the dealing (a dead card, a card
    out of turn or unread, a peek mismatch, a foreign card, a console pressed out of turn), not a device lost,
    the journal's, nor :data:`NOT_THE_DEALERS`."""
    return alarm_kind(code, halts) in ("procedure", "integrity") and code not in NOT_THE_DEALERS
