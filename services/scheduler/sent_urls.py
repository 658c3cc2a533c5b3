"""The URLs of the fetch requests this scheduler sent, so that their outcomes need no normalising.

An outcome names the URL its request did, which the frontier holds normalised, with its host
and fingerprint: looking the URL up here saves normalising it again (some 13 µs each, 26 ms
for a batch of 2,000 outcomes). A URL not found (an outcome after a restart, a redelivered
one, another replica's request) is normalised as any other.
"""

from __future__ import annotations


class SentUrls:
    """URL -> (host, fingerprint) of requests sent and not yet answered, the oldest dropped past ``capacity``."""

    def __init__(self, capacity: int) -> None:
        self._capacity = max(1, capacity)
        self._urls: dict[str, tuple[str, int]] = {}

    def sent(self, url: str, host: str, url_fp: int) -> None:
        urls = self._urls
        urls.pop(url, None)  # re-sent: now the newest
        urls[url] = (host, url_fp)
        while len(urls) > self._capacity:
            del urls[next(iter(urls))]

    def answered(self, url: str) -> tuple[str, int] | None:
        """The host and fingerprint of a sent URL, forgotten from now on; None for a URL not sent from here."""
        return self._urls.pop(url, None)

    def __len__(self) -> int:
        return len(self._urls)
