"""Offline measurement through the registry: labeled queries run against it, catalogs sampled
from the labeled sets, and the context tokens an agent carries."""
