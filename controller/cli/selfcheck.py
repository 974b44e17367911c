"""``tablectl selfcheck [--seed HEX] [--json] [--reference WHEEL]``: program authentication (DESIGN.md).

Exit 0 and one line (version, number of files, the build digest) when every program file matches its RECORD hash;
2 naming each file that differs or is missing and each module the distribution did not install (one line each on
stderr); 1 when the program cannot be verified (an editable install, a source tree: said on stderr, and why).
``--seed``: the HMAC of each program file keyed by the seed and the combined digest (``<hmac>  <path>`` lines,
then ``combined  <hex>``). ``--reference WHEEL``: the same computed from a wheel file, reading no installed file.
"""

from __future__ import annotations

import argparse
import json
import sys
import zipfile
from pathlib import Path
from typing import Any

from controller.errors import UsageError


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "selfcheck", help="check the installed program against its RECORD hashes (program authentication)",
        description="Each installed program file against the hash pip recorded for it (the wheel's RECORD), the "
                    "modules nobody installed, the dependencies against their own RECORD; prints the build digest "
                    "(docs/selfcheck.md). Exit 0 all match, 2 a file differs, is missing or was added, 1 unverified "
                    "(an editable install).")
    p.add_argument("--seed", metavar="HEX", help="a lab's seed: HMAC-SHA256 of each program file and the combined "
                                                 "digest")
    p.add_argument("--json", action="store_true", help="one JSON object")
    p.add_argument("--reference", metavar="WHEEL", type=Path,
                   help="compute the build digest (and with --seed the HMACs) from this wheel, not the install")
    p.set_defaults(func=run)


def _seed(args: argparse.Namespace) -> bytes | None:
    from controller.selfcheck.digest import parse_seed

    if args.seed is None:
        return None
    try:
        return parse_seed(args.seed)
    except ValueError as e:
        raise UsageError(str(e)) from None


def _print_seeded(files: dict[str, str], combined: str) -> None:
    for path in sorted(files):
        print(f"{files[path]}  {path}")
    print(f"{combined}  combined")


def _reference(args: argparse.Namespace, seed: bytes | None) -> int:
    from controller.selfcheck.digest import from_wheel

    try:
        wheel = from_wheel(args.reference, seed)
    except (OSError, zipfile.BadZipFile) as e:
        raise UsageError(f"--reference {args.reference}: not a readable wheel ({e})") from None
    if args.json:
        out: dict[str, Any] = {"reference": str(args.reference), "files": len(wheel.sha256), "build": wheel.build}
        if wheel.seeded is not None:
            out["seeded"] = {"files": wheel.seeded.files, "combined": wheel.seeded.combined}
        print(json.dumps(out, indent=1))
    elif wheel.seeded is not None:
        _print_seeded(wheel.seeded.files, wheel.seeded.combined)
    else:
        print(f"{args.reference.name}: {len(wheel.sha256)} program files, build {wheel.build}")
    return 0


def run(args: argparse.Namespace) -> int:
    from controller.selfcheck.digest import seeded
    from controller.selfcheck.program import DISTRIBUTION, check

    seed = _seed(args)
    if args.reference is not None:
        return _reference(args, seed)
    result = check()
    problems = result.problems()
    out: dict[str, Any] = {"distribution": DISTRIBUTION, "version": result.version, "ok": result.ok,
                           "unverified": result.unverified, "build": result.build,
                           "files": None if result.program is None else len(result.program.sha256),
                           "problems": problems,
                           "dependencies": [{"name": d.name, "version": d.version, "files": len(d.sha256),
                                             "ok": d.ok} for d in result.dependencies]}
    if seed is not None and result.ok and result.program is not None:
        from importlib import metadata

        dist = metadata.distribution(DISTRIBUTION)
        contents = [(path, Path(str(dist.locate_file(path))).read_bytes()) for path in sorted(result.program.sha256)]
        out["seeded"] = (lambda s: {"files": s.files, "combined": s.combined})(seeded(seed, contents))
    if args.json:
        print(json.dumps(out, indent=1))
    for line in problems:
        print(f"tablectl selfcheck: {line}", file=sys.stderr)
    if result.unverified is not None:
        print(f"tablectl selfcheck: unverified: {result.unverified}", file=sys.stderr)
        return 2 if problems else 1
    if problems:
        return 2
    if not args.json:
        if "seeded" in out:
            _print_seeded(out["seeded"]["files"], out["seeded"]["combined"])
        else:
            deps = f"; {len(result.dependencies)} dependencies match theirs" if result.dependencies else ""
            print(f"{DISTRIBUTION} {result.version}: {out['files']} program files match their RECORD hashes{deps}; "
                  f"build {result.build}")
    return 0
