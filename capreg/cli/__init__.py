"""The `capreg` command: the composition root at the edge. Options and the environment are
read here, once, into configuration values; every subcommand lives in its own module, imported
only when that subcommand runs, so `capreg search` does not load the evaluation, the training
or the bridge."""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Sequence

from capreg.cli.errors import CommandError
from registry.logs import JsonFormatter, RequestIdFilter

__all__ = ["SUBCOMMANDS", "CommandError", "build_parser", "main"]

# Each subcommand: the module that defines it (its `add_parser(subcommands)` adds it and any
# sibling subcommands the module defines), and the one-line help `capreg --help` shows.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "serve": ("capreg.cli.serve", "run the registry (gRPC, and HTTP with --http)"),
    "keys": ("capreg.cli.keys", "manage API keys and their scopes"),
    "register": ("capreg.cli.commands", "register or replace catalogs from files"),
    "search": ("capreg.cli.commands", "search tools by need"),
    "schema": ("capreg.cli.commands", "full schemas for tool ids"),
    "catalogs": ("capreg.cli.commands", "list catalogs"),
    "affordances": ("capreg.cli.commands", "the moves legal in a workflow state"),
    "delete": ("capreg.cli.commands", "delete a catalog"),
    "import-mcp": ("capreg.cli.mcp_import", "register a live MCP server's tools as a catalog"),
    "lint": ("capreg.cli.lint", "check catalog files offline: errors and warnings"),
    "eval": ("capreg.cli.eval", "measure search quality against labeled queries"),
    "context": ("capreg.cli.context", "tokens carried: every schema in every turn vs discovery"),
    "datasets": ("capreg.cli.datasets", "fetch or list the labeled evaluation sets"),
    "train": ("capreg.cli.train", "fit the learned ranking stage on the tuning splits"),
    "train-encoder": (
        "capreg.cli.train_encoder",
        "fine-tune the sentence encoder on the tuning splits",
    ),
    "bridge": (
        "mcp_bridge.cli",
        "serve the registry to MCP clients (stdio, or streamable HTTP with --http)",
    ),
}


def _chosen(argv: Sequence[str]) -> str | None:
    """The subcommand `argv` names (the first word that is not an option), if any."""
    return next((word for word in argv if not word.startswith("-")), None)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser for `argv`: the subcommand it names is defined in full (its module imported);
    every other one only by name and help. Without `argv`, every subcommand in full."""
    parser = argparse.ArgumentParser(
        prog="capreg", description="Semantic capability registry for LLM agents."
    )
    subcommands = parser.add_subparsers(dest="command", required=True)
    chosen = _chosen(argv) if argv is not None else None
    if argv is None:
        modules = list(dict.fromkeys(module for module, _ in SUBCOMMANDS.values()))
    else:
        modules = [SUBCOMMANDS[chosen][0]] if chosen in SUBCOMMANDS else []
    for module in modules:
        importlib.import_module(module).add_parser(subcommands)
    for name, (_, help_) in SUBCOMMANDS.items():
        if name not in subcommands.choices:
            subcommands.add_parser(name, help=help_)
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
    words = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(words).parse_args(words)
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
