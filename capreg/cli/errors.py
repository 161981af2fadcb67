"""What every subcommand shares: the one-line failure and the environment it reads."""

from __future__ import annotations

from indexer.errors import CapregError


class CommandError(CapregError):
    """A failure to report as one line and a non-zero exit."""
