"""Benchmarks that print figures (not pass/fail tests)."""
