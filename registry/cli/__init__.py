"""The `capreg` command: the composition root at the edge. Options and the environment are
read here, once, into configuration values; every subcommand lives in its own module."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from registry.cli import commands, context, datasets, keys, lint, mcp_import, serve, train
from registry.cli import eval as eval_command
from registry.cli.errors import CommandError
from registry.logs import JsonFormatter, RequestIdFilter

__all__ = ["CommandError", "build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="capreg", description="Semantic capability registry for LLM agents."
    )
    subcommands = parser.add_subparsers(dest="command", required=True)
    serve.add_parser(subcommands)
    keys.add_parser(subcommands)
    commands.add_parsers(subcommands)
    mcp_import.add_parser(subcommands)
    lint.add_parser(subcommands)
    eval_command.add_parser(subcommands)
    context.add_parser(subcommands)
    datasets.add_parser(subcommands)
    train.add_parser(subcommands)
    from mcp_bridge.cli import add_parser as add_bridge_parser

    add_bridge_parser(subcommands)
    return parser


def configure_logging(level: str, log_format: str) -> None:
    """Logs to stderr, each record stamped with its request id; JSON lines on request."""
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(RequestIdFilter())
    if log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level, handlers=[handler])


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    # The server narrates at INFO; client commands speak only through their output.
    default_level = "INFO" if args.command == "serve" else "WARNING"
    configure_logging(
        os.environ.get("CAPREG_LOG_LEVEL", default_level), getattr(args, "log_format", "text")
    )
    try:
        code: int = args.handler(args)
    except CommandError as exc:
        print(f"capreg: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
