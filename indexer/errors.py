"""The root of every error capreg raises on purpose: a caller catches one type."""


class CapregError(Exception):
    """Something a caller asked for cannot be done; the message says what and why."""
