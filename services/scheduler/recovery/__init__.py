"""Requests lost on the way to the fetchers, found and queued again."""
