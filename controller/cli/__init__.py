"""``tablectl``: one console script, one module per subcommand.

Each subcommand module in :data:`SUBCOMMANDS` exposes ``register(subparsers)``,
which adds its parser and sets ``func`` to a callable returning the exit code.
Modules are imported lazily only for the command that runs, so ``tablectl
scenario`` never pays for asyncio, MQTT or USB imports.

Exit codes (DESIGN.md): 0 success, 2 bad input (one line on stderr naming what
and why), 1 runtime failure.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from controller.errors import Unavailable, UsageError

#: subcommand -> (module, one-line help)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "scenario": ("controller.cli.scenario", "play one round from a stacked shoe and print the settlement"),
    "bench": ("controller.cli.bench", "play many rounds with basic strategy and report the house edge"),
    "edge": ("controller.cli.edge", "print the theoretical house edge of a profile"),
    "strategy": ("controller.cli.strategy", "print the basic strategy chart of a profile"),
    "run": ("controller.cli.run", "run the table service on a table PC"),
    "journal": ("controller.cli.journal", "verify or archive a table's journal"),
    "demo": ("controller.cli.demo", "a whole simulated pit on one machine"),
    "dashboard": ("controller.cli.dashboard", "serve the pit dashboard on 127.0.0.1"),
    "simulate": ("controller.cli.simulate", "a simulated device on a pseudo-terminal"),
    "monitor": ("controller.cli.monitor", "print the typed events of a device through its real driver"),
    "profiles": ("controller.cli.profiles", "list or check house-rule profiles"),
    "soak": ("controller.cli.soak", "a seeded chaos soak of a simulated pit (faults, outages, kill -9)"),
    "broker-config": ("controller.cli.broker_config", "write a Mosquitto configuration for a pit (users, ACL, TLS)"),
    "cluster": ("controller.cli.cluster", "run the floor's NATS cluster (broker-config --engine nats) here"),
    "floor-auth": ("controller.cli.floor_auth", "the floor's auth callout beside a NATS node (password, client id)"),
    "recorder": ("controller.cli.recorder", "the central record: every table's events into one database"),
    "recall": ("controller.cli.recall", "recall the rounds of a journal (cards, wagers, decisions, payouts)"),
    "report": ("controller.cli.report", "a shift's hold against theoretical, and pace, from a journal"),
    "ratings": ("controller.cli.ratings", "player ratings from a table's journal (time, average bet, theo)"),
    "conformance": ("controller.cli.conformance", "a lab's evidence: each clause, its bounds, its scenarios played"),
    "selfcheck": ("controller.cli.selfcheck", "check the installed program against its RECORD hashes"),
}


#: the installed distribution whose version ``tablectl --version`` prints
DISTRIBUTION = "blackjack-table-controller"


def check_broker_url(url: str | None) -> None:
    """``--broker URL`` parses, or :class:`UsageError` naming it (its password hidden)."""
    if url is None:
        return
    from controller.mqtt.addresses import parse_broker_url

    try:
        parse_broker_url(url)
    except ValueError as e:
        raise UsageError(f"--broker: {e}") from None


def version() -> str:
    """The installed distribution's version; from a source tree's ``pyproject.toml`` when not installed."""
    from importlib import metadata

    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        pass
    import tomllib
    from pathlib import Path

    try:
        project = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text("utf-8"))
        return f"{project['project']['version']} (source tree, not installed)"
    except (OSError, ValueError, KeyError, TypeError):
        return "unknown (not installed)"


class _VersionAction(argparse.Action):
    """``--version``: like argparse's own, but reads the package metadata only when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        print(f"tablectl {version()}")
        parser.exit(0)


def one_line_errors(parser: argparse.ArgumentParser, command: str) -> None:
    """Bad options of ``command`` end in one line on stderr and exit 2 (argparse prints its usage first)."""

    def error(message: str) -> NoReturn:
        print(f"tablectl {command}: {message}", file=sys.stderr)
        sys.exit(2)

    parser.error = error  # type: ignore[method-assign]


def build_parser(argv: Sequence[str]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tablectl", description="Blackjack table controller")
    parser.add_argument("--version", action=_VersionAction, help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    wanted = next((a for a in argv if not a.startswith("-")), None)
    for name, (module, help_text) in SUBCOMMANDS.items():
        if name == wanted:
            try:
                importlib.import_module(module).register(sub)
            except ModuleNotFoundError as e:
                if e.name != module:
                    raise
                sub.add_parser(name, help=f"{help_text} (not built yet)")
        else:
            sub.add_parser(name, help=help_text, add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(args_list)
    args = parser.parse_args(args_list)
    func = getattr(args, "func", None)
    if func is None:
        print(f"tablectl: {args.command}: not available in this build", file=sys.stderr)
        return 1
    try:
        code = func(args)
    except UsageError as e:
        print(f"tablectl {args.command}: {e}", file=sys.stderr)
        return 2
    except Unavailable as e:
        print(f"tablectl {args.command}: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return int(code or 0)


if __name__ == "__main__":
    sys.exit(main())
