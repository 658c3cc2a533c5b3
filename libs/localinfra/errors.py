"""Errors raised while managing the local broker and database."""

from __future__ import annotations


class LocalInfraError(RuntimeError):
    """A local server could not be started, reached or stopped; the message says why."""
