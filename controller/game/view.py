"""What the shell may read of a table: the engine's closed surface, read-only (DESIGN.md, "Layers").

The table service, the device translation, the simulated crew and dealer, the counter and the live
analytics hold the engine as a :class:`TableView`: what the public sees (the phase, the layout, the
dealer's cards, the shoe's counters, the alarms and devices, the totals) and the engine's answers
(:meth:`~TableView.awaiting`, :meth:`~TableView.legal_actions`, :meth:`~TableView.snapshot`). Every
member is read-only (mypy refuses an assignment through it) and the containers are read-only types;
the procedure's own flags (the deal plan, the peek and reveal in progress, insurance bookkeeping, the
burn count, the clock) are not members: they are asked through :meth:`~TableView.awaiting`.

Only the code that owns an engine (the service's core, the scenario runner, the bench) holds the
:class:`~controller.game.table.Table` itself, to feed it with ``handle()``; tests/test_layers.py fails
on any read of the engine's private state outside ``controller/game/``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from controller.game import events as ev
from controller.game.awaiting import Awaiting
from controller.game.hand import Spot
from controller.game.legality import Refusal
from controller.game.rules import Rules


class AlarmView(Protocol):
    """An active alarm, as the shell reads it."""

    @property
    def id(self) -> int: ...
    @property
    def code(self) -> str: ...
    @property
    def message(self) -> str: ...
    @property
    def halts(self) -> bool: ...
    @property
    def integrity(self) -> bool: ...


class TableView(Protocol):
    """A table as everything outside the engine sees it."""

    # -- the table and its round
    @property
    def rules(self) -> Rules: ...
    @property
    def phase(self) -> str: ...
    @property
    def round(self) -> int:
        """The current (or last) round's number."""
    @property
    def round_open(self) -> bool:
        """A round number is assigned to the bets on the layout."""
    @property
    def close_asked(self) -> bool:
        """A close was asked during the round in play: the table closes when it settles."""
    @property
    def close_by(self) -> str | None:
        """Who asked that close."""
    @property
    def dealer_on_duty(self) -> str | None:
        """The dealer on duty (None: none signed in); a change during a round waits for its settlement."""
    @property
    def require_dealer(self) -> bool:
        """Betting opens only with a dealer on duty (the table's setting, journaled)."""
    @property
    def min_bet(self) -> int: ...
    @property
    def max_bet(self) -> int: ...
    @property
    def bets(self) -> Mapping[int, tuple[int, str | None]]:
        """The betting layout between rounds: spot -> (amount, player)."""
    @property
    def spots(self) -> Mapping[int, Spot]:
        """The spots in the round, by number."""
    @property
    def order(self) -> Sequence[Spot]:
        """The spots in the round, in dealing order."""
    @property
    def active(self) -> tuple[int, int] | None:
        """The (spot, hand index) whose decision is awaited."""
    @property
    def dealer(self) -> Sequence[str]:
        """The dealer's cards whose value is known (a hole card dealt face down joins them when turned)."""
    @property
    def dealer_blackjack(self) -> bool | None: ...
    @property
    def burned(self) -> Sequence[str]:
        """The burnt and dead cards of the current round (public)."""

    # -- the shoe
    @property
    def cards_dealt(self) -> int: ...
    @property
    def cards_before_round(self) -> int: ...
    @property
    def cut_card_reached(self) -> bool: ...
    @property
    def shuffles(self) -> int:
        """Full shuffles since the table first opened."""
    @property
    def shuffle_due(self) -> bool: ...
    @property
    def hole_position(self) -> int | None:
        """The shoe position of the dealer's face-down hole card (never its value), or None."""
    @property
    def deck_set(self) -> str: ...

    # -- devices, alarms, totals
    @property
    def devices(self) -> Mapping[str, str]: ...
    @property
    def alarms(self) -> Mapping[int, AlarmView]: ...
    @property
    def halted(self) -> str | None: ...
    def between_shoes(self) -> bool:
        """No shoe is being dealt (when the rules may change)."""
    @property
    def rounds_settled(self) -> int: ...
    @property
    def handle_cents(self) -> int: ...
    @property
    def house_net(self) -> int: ...

    # -- the engine's answers
    def awaiting(self) -> Awaiting: ...
    def legal_actions(self) -> list[ev.Decision]: ...
    def hit_refusal(self, spot: int) -> Refusal | None: ...
    def round_held(self) -> str | None: ...
    def dealer_total(self) -> tuple[int, bool]: ...
    def snapshot(self) -> dict[str, Any]: ...
    def alarm_list(self) -> list[dict[str, Any]]: ...
