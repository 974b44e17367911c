"""The engine's alarms: raised, cleared, acknowledged; the devices they follow; what halts play.

Codes and kinds are the contract's (:mod:`controller.contract.alarms`): this module keeps the table's
active alarms and applies the rules on them. A lost device halts new rounds and holds the round in play
until it is back (:func:`lost_devices`, one rule for both); an integrity alarm, or surveillance's, is cleared
only by an acknowledgement naming its operator and giving a reason (DESIGN, "Operators and roles").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from controller.contract.alarms import (
    DECK_CHANGE_OVERDUE,
    NAMED_ALARMS,
    device_lost,
    irregularity,
    lost_device,
    needs_supervisor,
)
from controller.game import events as ev
from controller.game.dealer_duty import missing
from controller.game.effects import AlarmCleared, AlarmRaised
from controller.game.errors import IllegalAction, MalformedEvent

if TYPE_CHECKING:
    from controller.game.table import Table

_LOST: Final = "lost"
_OK: Final = "ok"


@dataclass(slots=True)
class Alarm:
    """An active alarm; ``halts`` ones stop new rounds until acknowledged or cleared."""

    id: int
    code: str
    message: str
    halts: bool

    @property
    def integrity(self) -> bool:
        """An alarm that halts for integrity: cleared only by a named operator giving a reason."""
        return needs_supervisor(self.code, self.halts)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "code": self.code, "message": self.message, "halts": self.halts,
                "integrity": self.integrity}


def raise_alarm(t: Table, code: str, message: str, *, halts: bool) -> None:
    alarm = Alarm(t.next_alarm_id, code, message, halts)
    t.next_alarm_id += 1
    t.alarms[alarm.id] = alarm
    t._out.append(AlarmRaised(alarm.id, code, message, halts))
    if t.narrate:
        t._record("alarm", **alarm.to_json())


def clear_alarms(t: Table, *codes: str) -> None:
    """Clear the active alarms of these codes: what they were raised for is resolved."""
    for alarm in [a for a in t.alarms.values() if a.code in codes]:
        del t.alarms[alarm.id]
        t._out.append(AlarmCleared(alarm.id, alarm.code))
        if t.narrate:
            t._record("alarm_cleared", id=alarm.id, code=alarm.code, by="resolved")


def lost_devices(t: Table) -> list[str]:
    """The devices that stopped answering (each has its alarm until it is back)."""
    return [d for d, s in t.devices.items() if s == _LOST]


def halted(t: Table) -> str | None:
    """Why no new round may start (a device lost, a halting alarm, decks overdue, no dealer on duty where the table
    requires one), or None."""
    if not t.alarms:
        return missing(t)  # a lost device always has its alarm
    lost = lost_devices(t)
    if lost:
        return f"device lost: {', '.join(lost)}"
    for alarm in t.alarms.values():
        if alarm.halts:
            return alarm.message
    return missing(t)


def round_held(t: Table) -> str | None:
    """Why play inside a round is held (a device lost; the round resumes on reconnect), or None."""
    if not t.alarms:
        return None
    lost = lost_devices(t)
    return f"round held: {', '.join(lost)} lost" if lost else None


def on_device_fault(t: Table, e: ev.DeviceFault) -> None:
    if e.device not in t.devices:
        raise MalformedEvent(f"unknown device {e.device!r}")
    if t.devices[e.device] == _LOST:
        return
    t.devices[e.device] = _LOST
    raise_alarm(t, device_lost(e.device), f"{e.device} lost: {e.reason}", halts=True)


def on_device_restored(t: Table, e: ev.DeviceRestored) -> None:
    if e.device not in t.devices:
        raise MalformedEvent(f"unknown device {e.device!r}")
    if t.devices[e.device] == _OK:
        return
    t.devices[e.device] = _OK
    clear_alarms(t, device_lost(e.device))
    if t.narrate:
        t._record("device_restored", device=e.device)


def on_irregularity(t: Table, e: ev.Irregularity) -> None:
    if not isinstance(e.source, str) or not e.source or not isinstance(e.detail, str) or not e.detail:
        raise MalformedEvent("an irregularity names its source and what happened")
    if e.code is not None and e.code not in NAMED_ALARMS:
        raise MalformedEvent(f"an irregularity's alarm code is one of {', '.join(sorted(NAMED_ALARMS))}")
    raise_alarm(t, e.code or irregularity(e.source), e.detail, halts=bool(e.halts))


def on_alarm_ack(t: Table, e: ev.AlarmAcknowledged) -> None:
    alarm = t.alarms.get(e.alarm_id)
    if alarm is None:
        raise IllegalAction(f"no active alarm {e.alarm_id}", rule="alarms", action="ack_alarm")
    device = lost_device(alarm.code)
    if device is not None and t.devices[device] == _LOST:
        raise IllegalAction(f"alarm {e.alarm_id} clears when the device is back", rule="alarms",
                            action="ack_alarm")
    if alarm.code == DECK_CHANGE_OVERDUE:
        raise IllegalAction("an overdue deck set clears only when the decks are changed", rule="alarms",
                            action="ack_alarm")
    if alarm.integrity and not (e.operator and e.reason):
        why = "halts for integrity" if alarm.halts else "is surveillance's to judge"
        raise IllegalAction(f"alarm {e.alarm_id} ({alarm.code}) {why}: it is cleared only by an "
                            "acknowledgement that names the operator and gives a reason", rule="integrity",
                            action="ack_alarm")
    del t.alarms[e.alarm_id]
    t._out.append(AlarmCleared(alarm.id, alarm.code))
    if t.narrate:
        if e.operator is None:
            t._record("alarm_cleared", id=alarm.id, code=alarm.code, by="acknowledge")
        else:
            t._record("alarm_cleared", id=alarm.id, code=alarm.code, by="acknowledge",
                      operator=e.operator, **({"reason": e.reason} if e.reason else {}))
