"""`capreg lint`: check catalog files offline, errors and warnings, without a server."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from indexer.formats import FORMATS
from indexer.formats.lint import lint_catalog
from registry.ingest.catalog_dir import request_name


def cmd_lint(args: argparse.Namespace) -> int:
    errors = warnings = 0
    for file in args.files:
        path = Path(file)
        try:
            content = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            print(f"{path}: error: cannot read the file: {exc}")
            errors += 1
            continue
        name = args.name or request_name(path, content, args.format)
        for finding in lint_catalog(content, name=name, fmt=args.format):
            print(f"{path}: {finding}")
            errors += finding.severity == "error"
            warnings += finding.severity == "warning"
    print(f"{len(args.files)} files: {errors} errors, {warnings} warnings", file=sys.stderr)
    return 1 if errors or (args.strict and warnings) else 0


def add_parser(commands: Any) -> None:
    lint = commands.add_parser("lint", help="check catalog files offline: errors and warnings")
    lint.add_argument("files", nargs="+")
    lint.add_argument("--name", default="", help="catalog name (default: from the file)")
    lint.add_argument("--format", default="auto", choices=["auto", *FORMATS])
    lint.add_argument("--strict", action="store_true", help="exit non-zero on warnings too")
    lint.set_defaults(handler=cmd_lint)
