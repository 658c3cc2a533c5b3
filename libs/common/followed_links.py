"""The links of a crawled page that cash flows over: written by the extractor, read by the importance service.

A ``PageLinks`` message carries every link of the page in ``links`` (class, anchor, context:
what the linkbase keeps), and the followed ones again as parallel lists,
``followed_fingerprints``, ``followed_urls``, ``followed_external`` and ``followed_counts``:
the distinct URLs of the links that are neither bad nor nofollow, in order of first
appearance, without the page itself, none when the page is nofollow, and how many times the
page links each (a link in the menu and again in the text counts twice). The importance
service reads only these: packed lists cost a fraction of turning every ``Link`` into a Python
object, which was most of its time per link (``docs/benchmarks.md``). A message without them
(sent before they existed) is read from ``links`` by the same rule; one without counts links
each URL once.
"""

from __future__ import annotations

from itertools import repeat

from libs.common.url_keys import normalized_fingerprint, normalized_fingerprints
from libs.common.wire import messages as pb

MAX_COUNTED_OCCURRENCES = 100
"""The most occurrences of one link on one page that anything downstream keeps or trusts (the link base's
count, a discovered URL's ``occurrences``): a page repeating a link thousands of times counts this."""


def _from_links(msg: pb.PageLinks) -> tuple[list[int], list[str], list[bool], list[int]]:
    if msg.nofollow:
        return [], [], [], []
    bad, external = pb.LINK_CLASS_BAD, pb.LINK_CLASS_EXTERNAL
    urls: list[str] = []
    externals: list[bool] = []
    occurrences: list[int] = []
    for link in msg.links:
        if link.url and not link.nofollow and link.link_class != bad:
            urls.append(link.url)
            externals.append(link.link_class == external)
            occurrences.append(max(1, link.occurrences))
    page_fp = normalized_fingerprint(msg.url)
    fps: list[int] = []
    kept_urls: list[str] = []
    kept_external: list[bool] = []
    counts: dict[int, int] = {}
    for fp, url, ext, times in zip(normalized_fingerprints(urls), urls, externals, occurrences, strict=True):
        if fp == page_fp:
            continue
        if fp not in counts:
            fps.append(fp)
            kept_urls.append(url)
            kept_external.append(ext)
            counts[fp] = 0
        counts[fp] += times
    return fps, kept_urls, kept_external, [counts[fp] for fp in fps]


def fill_followed(msg: pb.PageLinks) -> None:
    """Sets the followed lists of ``msg`` from its ``links`` and ``nofollow`` (``url`` normalised)."""
    fps, urls, externals, counts = _from_links(msg)
    del msg.followed_fingerprints[:], msg.followed_urls[:], msg.followed_external[:], msg.followed_counts[:]
    msg.followed_fingerprints.extend(fps)
    msg.followed_urls.extend(urls)
    msg.followed_external.extend(externals)
    if any(c > 1 for c in counts):  # none: every link once, as a message without counts reads
        msg.followed_counts.extend(counts)


def followed(msg: pb.PageLinks, page_fp: int, follow_external: bool,
             max_occurrences: int = 1) -> tuple[list[int], list[str]]:
    """Fingerprints and URLs of the links cash flows over from the page ``page_fp``.

    Read from the followed lists when the message has them, else from ``links``; links to
    other sites are left out unless ``follow_external``. Each URL comes once, or, with
    ``max_occurrences`` above 1, as many times as the page links it up to that many (its
    share of the page's cash grows with it). Raises ``ValueError`` when the lists have
    different lengths.
    """
    fps = msg.followed_fingerprints
    if fps or not msg.links:
        urls, externals, counted = msg.followed_urls, msg.followed_external, msg.followed_counts
        if not len(fps) == len(urls) == len(externals) or len(counted) not in (0, len(fps)):
            raise ValueError("page links with followed lists of different lengths")
        if follow_external and (max_occurrences <= 1 or not counted):
            keys, targets = fps[:], urls[:]  # slices: lists, made faster than by list()
            distinct_keys = set(keys)
            if len(distinct_keys) == len(keys) and page_fp not in distinct_keys:  # as the extractor writes them
                return keys, targets
        rows = zip(fps, urls, externals, counted or repeat(1, len(fps)), strict=True)
    else:
        rows = zip(*_from_links(msg), strict=True)
    distinct: dict[int, tuple[str, int]] = {}
    for fp, url, ext, times in rows:
        if (follow_external or not ext) and fp != page_fp:
            seen = distinct.get(fp)
            distinct[fp] = (url, times if seen is None else seen[1] + times)
    if max_occurrences <= 1:
        return list(distinct), [url for url, _ in distinct.values()]
    keys_out: list[int] = []
    urls_out: list[str] = []
    for fp, (url, times) in distinct.items():
        kept = min(times, max_occurrences)
        keys_out += [fp] * kept
        urls_out += [url] * kept
    return keys_out, urls_out
