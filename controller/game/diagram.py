"""The round's state diagram, drawn from the engine's transitions (:data:`controller.game.transitions.TRANSITIONS`).

:func:`page` returns the text of ``docs/state-diagram.md``; tests/game/test_transitions.py fails while the file
differs from it, so the drawing cannot drift from the code. Pure (it returns text, it writes nothing). After a
change to the transitions, regenerate the page with::

    .venv/bin/python -c "from controller.game.diagram import page; print(page(), end='')" > docs/state-diagram.md
"""

from __future__ import annotations

from typing import Final

from controller.game.transitions import CLOSED, PHASES, TRANSITIONS

#: The phase a new table starts in (``Table.__init__``).
START: Final = CLOSED

REGENERATE: Final = (
    """.venv/bin/python -c "from controller.game.diagram import page; print(page(), end='')" > docs/state-diagram.md"""
)


def edges() -> dict[tuple[str, str], list[str]]:
    """Every transition as an edge: (phase, next phase) -> the event types that take it, sorted; the edges in
    the order of :data:`PHASES`, a phase's loop (events that leave it where it is) first."""
    found: dict[tuple[str, str], set[str]] = {}
    for (phase, etype), leads_to in TRANSITIONS.items():
        for nxt in leads_to:
            found.setdefault((phase, nxt), set()).add(etype)

    def order(edge: tuple[str, str]) -> tuple[int, int, int]:
        phase, nxt = edge
        return PHASES.index(phase), nxt != phase, PHASES.index(nxt)

    return {edge: sorted(found[edge]) for edge in sorted(found, key=order)}


def mermaid() -> str:
    """The Mermaid ``stateDiagram-v2`` source: every transition an edge labelled with its event types."""
    lines = ["stateDiagram-v2", f"    [*] --> {START}"]
    lines += [f"    {phase} --> {nxt}: {', '.join(events)}" for (phase, nxt), events in edges().items()]
    return "\n".join(lines) + "\n"


def page() -> str:
    """The whole of ``docs/state-diagram.md``."""
    return f"""# The round's state diagram

<!-- Generated from controller/game/transitions.py's TRANSITIONS by controller/game/diagram.py: do not edit. -->

The round engine (`controller/game/table.py`) moves a table through its phases one event at a time. Its
transitions are data, `TRANSITIONS` (`controller/game/transitions.py`): for each phase and event type, the
phases the table may be in once `Table.handle()` has taken the event. This page is drawn from that table: each
edge below is a transition, labelled with the event types that take it; a loop is an event that may leave the
phase as it is. One event may pass through several phases inside `handle()` (the last stand plays the dealer's
hand and settles the round: `players` to `settled`); the edge goes from where the table was to where it is left.

An event its phase lists no transition for is refused up front (`IllegalAction`, the table unchanged); an
event the phase lists may still be refused by the rules (a wager outside the limits, a decision out of
turn). A phase a handler sets is checked against the event's transitions before the phase changes: one not
listed raises `TransitionNotListed`, an engine bug (as does a handler that leaves the table where the event
must move it on). The `state` snapshot's `awaiting` says what a phase waits for (a card,
the peek, the reveal, a decision).

After changing `TRANSITIONS`, regenerate this page:

```sh
{REGENERATE}
```

`tests/game/test_transitions.py` fails while this page differs from what the code draws.

```mermaid
{mermaid()}```
"""
