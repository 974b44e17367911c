"""The croupier: the one reference loop that plays the dealer and the shoe around the engine.

A table waits for two kinds of input. Players decide (bets, decisions, hits, insurance); the
dealer and the devices answer the procedure: the cards it requires (burns, the deal, a split hand's
second card, a double's one card, the dealer's draws), the cut card where the shoe holds it, the
peek reader's answer, the shuffle, and the discards' reshuffle when the shoe runs out (NJ
19:47-2.15(f)). :class:`Croupier` gives the second kind, from a :class:`ShoeSource` that is a
stacked shoe (the scenario runner), a seeded one (the bench, the simulated dealer, the
benchmarks) or anything else that deals cards in order. Players' inputs stay the caller's.

Pure like the rest of :mod:`controller.game`: the shoe decides the cards, the croupier only what
the procedure asks for next, so every tool that plays the engine plays it the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, final

from mypy_extensions import mypyc_attr

from controller.game import events as ev
from controller.game.cards import is_natural
from controller.game.effects import Effect
from controller.game.errors import refusal_error
from controller.game.shoe import card_target
from controller.game.table import Table
from controller.game.transitions import BETTING, CLOSED, DEALER, INSURANCE, SETTLED, SHUFFLING

#: the decisions taken while insurance is open
INSURANCE_ACTIONS = frozenset({"insurance", "even_money", "no_insurance"})


class ShoeSource(Protocol):
    """Cards in the order they leave the shoe, and the shuffles that reorder them."""

    def draw(self, why: str) -> str:
        """The next card (``why`` names who wanted it, for a stacked shoe that runs out)."""
        ...

    def cut_card_next(self) -> bool:
        """Is the cut card the next thing out of the shoe?"""
        ...

    def empty(self) -> bool:
        """No card is left to complete the round."""
        ...

    def shuffle(self) -> ev.ShuffleDone:
        """Shuffle the whole shoe; the shuffler's report."""
        ...

    def shuffle_discards(self, count: int) -> None:
        """Shuffle the ``count`` discards into the rest of the shoe (the cards on the table stay out)."""
        ...


@mypyc_attr(allow_interpreted_subclasses=True)
class ListShoe:
    """A :class:`ShoeSource` dealt from a list: ``cards`` in order from ``pos``, the cut card before the card at
    index ``cut_at``. The shuffles are a subclass's (the bench's :class:`~controller.strategy.player.BenchShoe`).

    Compiled, the croupier asks one directly (any other shoe through the protocol: each question a method looked
    up by its name, and a call by the interpreter's rules, several times the work of the answer)."""

    def __init__(self, cards: list[str], cut_at: int) -> None:
        self.cards = cards
        self.pos = 0
        self.cut_at = cut_at

    @final
    def draw(self, why: str) -> str:
        return self.next_card()

    @final
    def next_card(self) -> str:
        """The next card: a list shoe needs no reason (``why``) for it, it never runs out unasked (the croupier
        asks :meth:`empty` first)."""
        card = self.cards[self.pos]
        self.pos += 1
        return card

    @final
    def cut_card_next(self) -> bool:
        return self.pos == self.cut_at

    @final
    def empty(self) -> bool:
        return self.pos >= len(self.cards)

    def shuffle(self) -> ev.ShuffleDone:
        raise NotImplementedError

    def shuffle_discards(self, count: int) -> None:
        raise NotImplementedError


class Croupier:
    """Answers what ``table`` waits for that no player decides, through ``feed`` (default: the
    table's own :meth:`Table.handle`; a caller that records effects passes its own)."""

    def __init__(self, table: Table, shoe: ShoeSource,
                 feed: Callable[[ev.Event], list[Effect]] | None = None) -> None:
        self.table = table
        self.shoe = shoe
        self._table_handle = table.handle
        self.feed: Callable[[ev.Event], list[Effect]] = feed if feed is not None else self._table_handle
        self._cards: dict[str, ev.CardDrawn] = {}  # events are immutable: one per card, built once
        self._peek = (ev.PeekResult(blackjack=False), ev.PeekResult(blackjack=True))
        self._cut = ev.CutCardReached()
        self._empty = ev.ShoeEmpty()
        self._started = ev.ShuffleStarted()
        self._insurance_closed = ev.InsuranceClosed()

    def next_event(self) -> ev.Event | None:
        """The dealer's or a device's next input, or None when a player is to act (or the table is
        closed). A card returned has left the shoe: feed the event."""
        t = self.table
        phase = t.phase
        if phase == CLOSED:
            return None
        discards = t.awaiting_discards
        if discards is not None:
            self.shoe.shuffle_discards(discards)
            return ev.ShuffleDone(count=discards)
        if t.shuffle_due and phase in (SETTLED, BETTING, SHUFFLING):
            return self._started if phase != SHUFFLING else self.shoe.shuffle()
        if t.awaiting_peek:  # the peek reader reads the hole card the croupier dealt, and says only yes or no
            return self._peek[is_natural(t.dealer)]
        if card_target(t, True) is not None:  # Table.card_required, without the property's call
            return self._card()
        return None

    def play(self) -> None:
        """Feed the dealer's and the devices' inputs until a player is to act or the round settles."""
        t = self.table
        feed = self.feed
        direct = feed is self._table_handle
        while t.phase != SETTLED:
            event = self.next_event()
            if event is None:
                return
            if direct:
                t.handle(event)  # as _feed
            else:
                feed(event)

    def between_rounds(self) -> None:
        """What comes before the next round's bets: the shuffle when one is due, and its burn."""
        event = self.next_event()
        while event is not None:
            self._feed(event)
            event = self.next_event()

    def hit(self, spot: int) -> None:
        """A card for ``spot``'s hand at the player's say; refused (nothing drawn) where the rules say no."""
        refusal = self.table.hit_refusal(spot)
        if refusal is not None:
            raise refusal_error(refusal, self.table.rules, spot, "hit")
        direct = self.feed is self._table_handle
        while True:
            event = self._card()
            if direct:
                self.table.handle(event)  # as _feed
            else:
                self.feed(event)
            if event is not self._cut and event is not self._empty:  # a card (_card's other answers)
                return
            self.play()  # the cut card came out, or the shoe ran dry and its discards were shuffled

    def close_insurance(self) -> None:
        """The dealer closes insurance (the console's button), then answers what follows (the peek)."""
        if self.table.phase == INSURANCE:
            self._feed(self._insurance_closed)
            self.play()

    def before_decision(self, action: str) -> None:
        """Insurance closes at the first other action (DESIGN, scenario runner): a player who hits,
        stands, doubles, splits or surrenders while it is open tells the dealer the offer is over."""
        if action not in INSURANCE_ACTIONS:
            self.close_insurance()

    def _feed(self, event: ev.Event) -> None:
        if self.feed is self._table_handle:
            self.table.handle(event)  # the table's own: compiled, a direct call instead of one through a bound method
        else:
            self.feed(event)

    def _card(self) -> ev.Event:
        t = self.table
        shoe = self.shoe
        if isinstance(shoe, ListShoe):  # the same questions, answered from its fields (its answers are final)
            pos = shoe.pos
            if pos == shoe.cut_at and not t.cut_card_reached:
                return self._cut
            try:
                card = shoe.cards[pos]
            except IndexError:  # empty (pos is never negative)
                return self._empty
            shoe.pos = pos + 1
        else:
            if not t.cut_card_reached and shoe.cut_card_next():
                return self._cut
            if shoe.empty():
                return self._empty
            card = shoe.draw(self._why())
        try:
            return self._cards[card]
        except KeyError:
            event = self._cards[card] = ev.CardDrawn(card)
            return event

    def _why(self) -> str:
        t = self.table
        if t.phase == DEALER:
            return "the dealer's hand"
        if t.active is not None:
            return f"spot {t.active[0]}"
        return "the deal"
