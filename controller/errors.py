"""The error every layer may raise for bad input from a person: the command line prints it as one line on
stderr and exits 2 (DESIGN.md's exit codes). It lives below every package so that the code a command calls
(the dashboard's server, the reports, the program check) can refuse an input without importing the command
line."""

from __future__ import annotations


class UsageError(Exception):
    """Bad input: printed as one line on stderr, exit 2."""


class Unavailable(RuntimeError):
    """Something the command needs cannot be reached now (not bad input): printed as one line, exit 1."""
