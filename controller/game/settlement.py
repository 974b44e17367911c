"""Settlement, as pure functions: what each open wager wins or loses against the dealer's hand.

The engine applies the payouts in the order given (from the dealer's right, NY 4620.5(j)); the functions
read the hands and the rules and change nothing.
"""

from __future__ import annotations

from controller.game.hand import Hand, Spot
from controller.game.rules import Rules

#: One payout: the spot, the hand's index, the hand, the outcome and the amount (+ to the player).
Payout = tuple[Spot, int, Hand, str, int]


def settle(order: list[Spot], total: int, dealer_bj: bool, r: Rules) -> list[Payout]:
    """Every open wager's outcome, from the dealer's right (NY 4620.5(j)), against a dealer's ``total``."""
    out: list[Payout] = []
    dealer_bust = total > 21
    num, den = r.natural_pays
    original_only = dealer_bj and r.dealer_blackjack_takes == "original"
    for s in reversed(order):
        capped = False  # original-bets-only: the spot loses its original wager once
        for i, h in enumerate(s.hands):
            if h.payout is not None:
                continue
            if h.status == "surrendered":
                lost = h.wager if dealer_bj and r.surrender_lost_to_blackjack else h.wager - h.wager // 2
                out.append((s, i, h, "surrender", -lost))
            elif h.status == "blackjack":
                if dealer_bj:
                    if r.ties == "house_wins":
                        out.append((s, i, h, "lose", -h.wager))
                    else:
                        out.append((s, i, h, "push", 0))
                else:
                    out.append((s, i, h, "blackjack", h.wager * num // den))
            elif dealer_bj:
                if original_only:
                    out.append((s, i, h, "lose" if not capped else "push", 0 if capped else -s.wager))
                    capped = True
                else:
                    out.append((s, i, h, "lose", -h.wager))
            elif h.status == "bust":
                out.append((s, i, h, "lose", -h.wager))
            elif dealer_bust or h.total > total:
                out.append((s, i, h, "win", h.wager))
            elif h.total < total or r.ties != "push":
                # NY 4620.5(h) options two and three: the house wins ties other than naturals.
                out.append((s, i, h, "lose", -h.wager))
            else:
                out.append((s, i, h, "push", 0))
    return out


def bust_waits(r: Rules, dealer_blackjack: bool | None, up_value: int) -> bool:
    """Whether a busted hand's loss waits for the dealer's hand: where a dealer blackjack not yet ruled out
    would take the original wager only (``dealer_blackjack_takes = "original"``, house-rules-shoe-game-surrender
    BLACKJACK: "split and double down bets are returned to the Player"). Otherwise a busted hand loses at once:
    NY 4620.5(h)(3)(ii); house-h17 "The player loses immediately if their hand busts"."""
    blackjack_possible = dealer_blackjack is not False and up_value in (1, 10)
    return r.dealer_blackjack_takes == "original" and blackjack_possible


def insurance_payout(insurance: int, dealer_bj: bool) -> int:
    """Insurance pays 2 to 1 when the dealer has blackjack (NY 4620.5(m)), else it is lost."""
    return 2 * insurance if dealer_bj else -insurance
