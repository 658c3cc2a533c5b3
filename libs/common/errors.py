"""The few exceptions every service shares."""

from __future__ import annotations


class RetryableError(Exception):
    """A failure that says nothing about the message (a dependency is down): retry, never dead-letter."""


class PoisonMessage(ValueError):
    """The message itself is wrong (missing fields, impossible values): dead-letter it."""
