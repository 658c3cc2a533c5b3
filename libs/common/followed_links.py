"""The links of a crawled page that cash flows over: written by the extractor, read by the importance service.

A ``PageLinks`` message carries every link of the page in ``links`` (class, anchor, context:
what the linkbase keeps), and the followed ones again as three parallel lists,
``followed_fingerprints``, ``followed_urls`` and ``followed_external``: the distinct URLs
of the links that are neither bad nor nofollow, in order of first appearance, without the
page itself, none when the page is nofollow. The importance service reads only these: three
packed lists cost a fraction of turning every ``Link`` into a Python object, which was
most of its time per link (``docs/benchmarks.md``). A message without them (sent before they
existed) is read from ``links`` by the same rule.
"""

from __future__ import annotations

from libs.common.url_keys import normalized_fingerprint, normalized_fingerprints
from libs.common.wire import messages as pb


def _from_links(msg: pb.PageLinks) -> tuple[list[int], list[str], list[bool]]:
    if msg.nofollow:
        return [], [], []
    bad, external = pb.LINK_CLASS_BAD, pb.LINK_CLASS_EXTERNAL
    urls: list[str] = []
    externals: list[bool] = []
    for link in msg.links:
        if link.url and not link.nofollow and link.link_class != bad:
            urls.append(link.url)
            externals.append(link.link_class == external)
    page_fp = normalized_fingerprint(msg.url)
    fps: list[int] = []
    kept_urls: list[str] = []
    kept_external: list[bool] = []
    seen = {page_fp}
    for fp, url, ext in zip(normalized_fingerprints(urls), urls, externals, strict=True):
        if fp not in seen:
            seen.add(fp)
            fps.append(fp)
            kept_urls.append(url)
            kept_external.append(ext)
    return fps, kept_urls, kept_external


def fill_followed(msg: pb.PageLinks) -> None:
    """Sets the followed lists of ``msg`` from its ``links`` and ``nofollow`` (``url`` normalised)."""
    fps, urls, externals = _from_links(msg)
    del msg.followed_fingerprints[:], msg.followed_urls[:], msg.followed_external[:]
    msg.followed_fingerprints.extend(fps)
    msg.followed_urls.extend(urls)
    msg.followed_external.extend(externals)


def followed(msg: pb.PageLinks, page_fp: int, follow_external: bool) -> tuple[list[int], list[str]]:
    """Fingerprints and URLs of the distinct links cash flows over from the page ``page_fp``.

    Read from the followed lists when the message has them, else from ``links``; links to
    other sites are left out unless ``follow_external``. Raises ``ValueError`` when the
    lists have different lengths.
    """
    fps = msg.followed_fingerprints
    if fps or not msg.links:
        urls, externals = msg.followed_urls, msg.followed_external
        if not len(fps) == len(urls) == len(externals):
            raise ValueError("page links with followed lists of different lengths")
        if follow_external:
            keys, targets = fps[:], urls[:]  # slices: lists, made faster than by list()
            distinct_keys = set(keys)
            if len(distinct_keys) == len(keys) and page_fp not in distinct_keys:  # as the extractor writes them
                return keys, targets
            distinct = dict(zip(keys, targets, strict=True))
        else:
            distinct = {fp: url for fp, url, ext in zip(fps, urls, externals, strict=True) if not ext}
    else:
        fp_list, url_list, ext_list = _from_links(msg)
        distinct = {fp: url for fp, url, ext in zip(fp_list, url_list, ext_list, strict=True)
                    if follow_external or not ext}
    distinct.pop(page_fp, None)
    return list(distinct), list(distinct.values())
