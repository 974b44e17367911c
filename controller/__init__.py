"""Blackjack table controller: the pure game core, the table service and its command line."""
