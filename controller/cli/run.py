"""``tablectl run --config FILE``: the table service on a table PC (DESIGN.md, "Command line").

``--new-journal`` creates the table's journal (refused where one exists; its first record, ``journal_started``,
names it, with who and why when ``--operator``/``--reason`` are given); ``--adopt-journal --operator NAME
--reason TEXT`` takes a journal no witness vouches for (no anchor, no broker state of it), journaled with who
and why (``docs/journal.md``). Without either, a missing journal or one nobody vouches for is refused.
A broker other than loopback without TLS is refused before anything starts unless ``--allow-plaintext`` or
the config's ``mqtt.allow_plaintext`` says so; then it is warned on stderr at every start.
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import sys
from pathlib import Path
from typing import Any

from controller.analytics.live import abandon_theory_work
from controller.errors import UsageError


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser("run", help="run the table service on a table PC")
    p.add_argument("--config", type=Path, required=True, metavar="FILE",
                   help="table config (TOML; TABLECTL_* environment variables override it)")
    p.add_argument("--new-journal", action="store_true",
                   help="start a new journal (refused if one exists; without it a missing journal is refused)")
    p.add_argument("--adopt-journal", action="store_true",
                   help="take a journal no witness vouches for (with --operator and --reason; journaled)")
    p.add_argument("--operator", metavar="NAME", help="who adopts (or starts) the journal (a pit user name)")
    p.add_argument("--reason", metavar="TEXT", help="why the journal is adopted (or started)")
    p.add_argument("--allow-plaintext", action="store_true",
                   help="allow a broker other than loopback without TLS (the table's password, commands and "
                        "ratings in clear; warned at every start; or mqtt.allow_plaintext in the config)")
    p.add_argument("--log-level", choices=("DEBUG", "INFO", "WARNING", "ERROR"), type=str.upper,
                   help="overrides the config's log_level")
    p.set_defaults(func=run)


def adoption(args: argparse.Namespace) -> Any:
    """The :class:`controller.journal.admission.Adoption` the arguments ask for, or None; :class:`UsageError` if
    they ask for it wrongly."""
    from controller.journal import JournalError
    from controller.journal.admission import Adoption

    if not args.adopt_journal:
        if args.operator is None and args.reason is None:
            return None
        if not args.new_journal:
            raise UsageError("--operator and --reason go with --adopt-journal or --new-journal")
        if args.operator is None or args.reason is None:  # who started the journal and why: journal_started
            raise UsageError("--new-journal takes --operator NAME and --reason TEXT together (both journaled)")
        try:
            return Adoption(args.operator, args.reason)
        except JournalError as e:
            raise UsageError(str(e)) from None
    if args.new_journal:
        raise UsageError("--adopt-journal takes an existing journal; --new-journal creates one: give one of them")
    if args.operator is None or args.reason is None:
        raise UsageError("--adopt-journal needs --operator NAME and --reason TEXT (both journaled)")
    try:
        return Adoption(args.operator, args.reason)
    except JournalError as e:
        raise UsageError(str(e)) from None


def plaintext_brokers(settings: Any, *, allowed: bool) -> list[str]:
    """The warning for each broker of ``settings`` off loopback without TLS (``allowed``); raises
    :class:`UsageError` for the first one when not allowed."""
    from controller.mqtt.addresses import parse_broker_url, redact_url
    from controller.mqtt.plaintext import PlaintextRefused, check_plaintext

    mqtt = settings.mqtt
    tls = mqtt.tls or mqtt.tls_cert is not None  # a CA or a client certificate given: TLS on every broker
    warnings = []
    for url in mqtt.broker_urls:
        try:
            warning = check_plaintext(f"broker {redact_url(url)}", parse_broker_url(url).host, tls=tls,
                                      allowed=allowed, how="--allow-plaintext or mqtt.allow_plaintext = true")
        except PlaintextRefused as exc:
            raise UsageError(f"{settings.table_id}: {exc}") from None
        if warning is not None:
            warnings.append(warning)
    return warnings


def run(args: argparse.Namespace) -> int:
    from controller.journal import JournalError
    from controller.selfcheck.gate import check_at_start
    from controller.service.logs import configure_logging
    from controller.service.runner import run_table
    from controller.service.settings import ConfigError, load_settings
    from drivers.errors import PortAccessDenied, PortBusy, PortNotFound, PortNotSerial

    check_at_start()  # the certified program, before any device opens (DESIGN "Program authentication")
    adopt = adoption(args)
    try:
        settings = load_settings(args.config)
    except ConfigError as e:
        raise UsageError(str(e)) from None
    for warning in plaintext_brokers(settings, allowed=args.allow_plaintext or settings.mqtt.allow_plaintext):
        print(f"tablectl run: {settings.table_id}: {warning}", file=sys.stderr, flush=True)
    configure_logging(args.log_level or settings.log_level, fmt=settings.log_format)
    try:
        return asyncio.run(run_table(settings, new_journal=args.new_journal, adopt=adopt))
    except (PortNotFound, PortBusy, PortAccessDenied, PortNotSerial, JournalError) as e:
        raise UsageError(f"{args.config}: {e}") from None
    except sqlite3.DatabaseError as e:  # damage SQLite finds after the start's checks: still one line
        raise UsageError(f"{args.config}: journal {settings.journal_path}: {e}") from None
    finally:
        abandon_theory_work()  # the interpreter's exit joins the theory worker: leave it nothing to finish
