"""What a table waits for next: the engine's answer to "whose move is it?".

One value instead of a dozen flags read from outside: the service asks it which device requests
are outstanding, the croupier and the simulated crew which card comes next and how it is dealt,
dashboards what the table is waiting for (the ``state`` snapshot's ``awaiting``).
"""

from __future__ import annotations

from dataclasses import dataclass

from controller.game.effects import Effect


@dataclass(frozen=True, slots=True)
class Awaiting:
    """``what``: ``discard_shuffle``, ``peek``, ``reveal``, ``card``, ``insurance_closed``, ``decision``,
    ``shuffle``, ``bets`` or None (a closed table).

    ``card``: where the next card out of the shoe goes (``burn``, ``deal``, ``hit``, ``dealer``), None
    when the procedure calls for none; ``card_required``: the procedure needs it without a player's
    say (a hit is the player's choice); ``face_down``: it is the dealer's hole card, dealt unread.
    ``requests``: the device requests outstanding (peek, reveal, shuffle, the dealing lock), as the
    effects that asked for them, so a device that was away can be asked again.
    """

    what: str | None
    card: str | None = None
    card_required: bool = False
    face_down: bool = False
    active: tuple[int, int] | None = None
    requests: tuple[Effect, ...] = ()

    def requested(self, kind: type) -> bool:
        """Whether a device request of this kind is outstanding (e.g. ``RequestPeek``, ``StartShuffle``)."""
        return any(isinstance(request, kind) for request in self.requests)
