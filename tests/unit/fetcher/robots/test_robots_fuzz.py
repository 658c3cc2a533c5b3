"""Fuzzing robots.txt handling: any bytes, status and truncation give a verdict, never an exception.

A robots.txt comes from anyone: binary junk, a file cut in the middle of a UTF-8
sequence, a megabyte of one line, rules mangled by an editor. Whatever arrives,
:class:`RobotsCache` must cache a policy whose questions (may this URL be
fetched, what delay, which sitemaps) are answered without raising. Bounded:
each test runs a fixed number of examples (a few seconds in all).
"""

from __future__ import annotations

import asyncio
import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.fetcher.clock import FakeClock
from services.fetcher.http.http_response import HttpResponse
from services.fetcher.robots.robots import RobotsCache, RobotsPolicy

ORIGIN = "http://site.test"
FUZZ = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
"""Bounded by the number of examples; no deadline per example, which a loaded machine would trip."""

_VALID = (
    b"User-agent: *\nDisallow: /private/\nAllow: /private/ok\nCrawl-delay: 2\n"
    b"Request-rate: 1/5\nSitemap: http://site.test/sitemap.xml\n\n"
    b"User-agent: trawl\nDisallow: /nope\nDisallow: /*.pdf$\nAllow: /nope/but-this\n"
)
_LINE_PIECES = st.sampled_from([
    b"User-agent:", b"user-AGENT :", b"Disallow:", b"Allow:", b"Crawl-delay:", b"Request-rate:", b"Sitemap:",
    b"*", b"trawl", b"/", b"/private", b"$", b"*.php$", b"%2F", b"%", b"\xff\xfe", b"\xc3", b"\x00", b"#",
    b" ", b"\t", b"\r", b"\n", b"\r\n", b"1/0", b"-1", b"nan", b"1e309", b"9" * 40, b"http://", b"::",
    "\u00e9".encode(), "\ufeff".encode(),
])
_PATHS = st.one_of(
    st.sampled_from(["/", "/private/", "/private/ok", "/nope/x", "/nope/but-this", "/a.pdf", "/%2F", "/?q=1",
                     "/\udcf0", "/\ud800x", "/%zz%", "/a#b", "/x/../private/", "/?a?b", "/p$", "/*", "/\u30c4 "]),
    st.text(max_size=60).map(lambda s: "/" + s),
)


def _policy(status: int, body: bytes, truncated: bool, error: str = "") -> RobotsPolicy:
    async def fetch(url: str) -> HttpResponse:
        return HttpResponse(url=url, final_url=url, status=status, body=body, truncated=truncated, error=error)

    cache = RobotsCache(fetch, user_agent_token="trawl", clock=FakeClock(), max_bytes=4096)
    return asyncio.run(cache.policy(ORIGIN))


def _ask_everything(policy: RobotsPolicy, paths: list[str]) -> None:
    for path in paths:
        assert policy.allowed(ORIGIN + path) in (True, False)
    delay = policy.crawl_delay
    assert delay is None or (math.isfinite(delay) and delay >= 0)
    assert all(isinstance(s, str) for s in policy.sitemaps)


@FUZZ
@given(st.binary(max_size=6000), st.booleans(), st.lists(_PATHS, max_size=5))
def test_any_bytes_give_a_policy(body: bytes, truncated: bool, paths: list[str]) -> None:
    policy = _policy(200, body, truncated)
    assert policy.kind == "rules"
    _ask_everything(policy, paths)


@FUZZ
@given(st.lists(st.lists(_LINE_PIECES, max_size=6).map(b" ".join), max_size=40), st.lists(_PATHS, max_size=5))
def test_garbage_lines_give_a_policy(lines: list[bytes], paths: list[str]) -> None:
    policy = _policy(200, b"\n".join(lines), False)
    _ask_everything(policy, paths)


@st.composite
def _mutated(draw: st.DrawFn) -> bytes:
    """The valid file with bytes replaced, inserted and deleted at random places."""
    data = bytearray(_VALID)
    for _ in range(draw(st.integers(1, 12))):
        at = draw(st.integers(0, len(data)))
        kind = draw(st.sampled_from(["replace", "insert", "delete"]))
        chunk = draw(st.binary(min_size=1, max_size=8))
        if kind == "insert":
            data[at:at] = chunk
        elif kind == "delete":
            del data[at : at + len(chunk)]
        else:
            data[at : at + len(chunk)] = chunk
    return bytes(data)


@FUZZ
@given(_mutated(), st.booleans(), st.lists(_PATHS, max_size=5))
def test_mutated_files_give_a_policy(body: bytes, truncated: bool, paths: list[str]) -> None:
    _ask_everything(_policy(200, body, truncated), paths)


@FUZZ
@given(st.integers(0, 999), st.sampled_from(["", "timeout", "redirect_loop", "too_many_redirects", "dns_error:x"]),
       st.binary(max_size=200))
def test_any_status_or_error_gives_one_of_the_three_verdicts(status: int, error: str, body: bytes) -> None:
    policy = _policy(status, body, False, error if status == 0 else "")
    assert policy.kind in ("rules", "allow_all", "disallow_all")
    assert (policy.kind == "rules") == (200 <= status < 300)
    _ask_everything(policy, ["/", "/private/x"])
