"""``tablectl run --config FILE``: the table service on a table PC (DESIGN.md, "Command line")."""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
from pathlib import Path
from typing import Any

from controller.cli import UsageError


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser("run", help="run the table service on a table PC")
    p.add_argument("--config", type=Path, required=True, metavar="FILE",
                   help="table config (TOML; TABLECTL_* environment variables override it)")
    p.add_argument("--new-journal", action="store_true",
                   help="start a new journal (refused if one exists; without it a missing journal is refused)")
    p.add_argument("--log-level", choices=("DEBUG", "INFO", "WARNING", "ERROR"), type=str.upper,
                   help="overrides the config's log_level")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from controller.service.journal import JournalError
    from controller.service.logs import configure_logging
    from controller.service.runner import run_table
    from controller.service.settings import ConfigError, load_settings
    from drivers.errors import PortAccessDenied, PortBusy, PortNotFound

    try:
        settings = load_settings(args.config)
    except ConfigError as e:
        raise UsageError(str(e)) from None
    configure_logging(args.log_level or settings.log_level, fmt=settings.log_format)
    try:
        return asyncio.run(run_table(settings, new_journal=args.new_journal))
    except (PortNotFound, PortBusy, PortAccessDenied, JournalError) as e:
        raise UsageError(f"{args.config}: {e}") from None
    except sqlite3.DatabaseError as e:  # damage SQLite finds after the start's checks: still one line
        raise UsageError(f"{args.config}: journal {settings.journal_path}: {e}") from None
