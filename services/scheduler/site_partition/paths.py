"""The path of a URL, the unit a large site is split by (seed 004).

The path of a URL is its host plus its first path segment when that segment is a directory
(followed by a slash), else its host plus "/": ``http://today.hit.edu.cn/articles/1/2.html``
has the path ``today.hit.edu.cn/articles``; ``http://www.hit.edu.cn/index.html`` and
``http://www.hit.edu.cn`` have ``www.hit.edu.cn/``.
"""

from __future__ import annotations


def first_segment(url: str) -> str:
    """The first path segment of ``url`` if it is a directory, else ""."""
    rest = url.partition("://")[2] if "://" in url else url
    path = rest.partition("/")[2]
    for stop in "?#":
        path = path.partition(stop)[0]
    segment, slash, _ = path.partition("/")
    return segment if slash else ""


def url_authority(url: str) -> str:
    rest = url.partition("://")[2] if "://" in url else url
    end = len(rest)
    for stop in "/?#":
        found = rest.find(stop)
        if found != -1:
            end = min(end, found)
    return rest[:end].lower()


def path_key(host: str, segment: str) -> str:
    return f"{host}/{segment}"


def url_path(url: str) -> str:
    """``host/segment`` (or ``host/``) of ``url``."""
    return path_key(url_authority(url), first_segment(url))
