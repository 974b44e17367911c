"""``tablectl profiles [list|check FILE...]``: what ships, and whether a file loads."""

from __future__ import annotations

import argparse
from typing import Any

from controller.errors import UsageError
from controller.profiles import ProfileError, available_profiles, load_profile_model


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser("profiles", help="list or check house-rule profiles")
    p.add_argument("check", nargs="*", metavar="NAME|PATH", help="profiles to validate (default: list shipped)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if not args.check:
        for name in available_profiles():
            print(f"{name:24} {load_profile_model(name).description}")
        return 0
    for target in args.check:
        try:
            model = load_profile_model(target)
        except ProfileError as e:
            raise UsageError(str(e)) from None
        print(f"{target}: ok ({model.name})")
    return 0
