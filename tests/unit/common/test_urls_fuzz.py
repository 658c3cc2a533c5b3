"""Fuzzing the URL normaliser with mutated real URLs, hostile characters and every policy.

``test_urls.py`` checks the rules and equivalences on generated URL parts; here
valid URLs are mangled byte by byte (controls, escapes, brackets, IDN and
bidirectional characters, ports, dot segments, megabyte-long pieces) and the
normaliser must either refuse with :class:`InvalidUrl` or return a URL that is
ASCII, within the policy's length, free of fragments and whitespace, a fixed
point (normalising it again, against any base, changes nothing), with the same
fingerprint as its input. Bounded: a fixed number of examples per test.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from libs.common.url_keys import normalized_host
from libs.common.urls import (
    DEFAULT_POLICY,
    InvalidUrl,
    UrlPolicy,
    normalize_url,
    url_fingerprint,
    url_host,
)

FUZZ = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
"""Bounded by the number of examples; no deadline per example, which a loaded machine would trip."""

SEEDS = [
    "http://www.example.com/",
    "https://user:pa%20ss@Example.COM:8443/a/./b/../c;jsessionid=1?q=1&utm_source=x#frag",
    "http://[2001:db8::1]:8080/path?x",
    "http://b\u00fccher.example/stra\u00dfe?ort=M\u00fcnchen",
    "https://xn--bcher-kva.example/%7Euser/%2e%2E/index.html",
    "http://0x7f.1/", "http://192.168.0.1:80/", "HTTP://a.B.c./d//e/?&&a=&b",
    "//protocol.relative/path", "/absolute/path?x=1", "relative/path", "?only=query", "#only-fragment",
    "https://\u0430pple.com/login",  # Cyrillic a: a homograph of apple.com
]
HOSTILE = [
    "\x00", "\x01", "\x7f", "\t", "\n", "\r", " ", "\u00a0", "\u200b", "\u200d", "\u202e", "\ufeff", "\ufffd",
    "\ud800", "%", "%0", "%00", "%2e", "%2F", "%E2%80%AE", "%zz", "#", "?", "@", ":", "::", "[", "]", "\\", "/",
    "//", "/../", "/./", ";", "=", "&", "\u0130", "\u2100", "\u3002", "\uff0e", "xn--", "xn--zz", "0x", "08",
    ":0", ":65536", ":-1", ":99999999999999999999", "\U0001f600", "\u0430", "\u03bf",
]
BASES = st.one_of(st.none(), st.sampled_from([
    "http://base.example/dir/page?q=1", "https://[::1]/a/b", "http://xn--bcher-kva.example/", "not a url",
    "http://base.example/" + "d/" * 300,
]))
POLICIES = st.sampled_from([
    DEFAULT_POLICY, UrlPolicy(sort_query=True), UrlPolicy(max_length=64), UrlPolicy(strip_params=("*",)),
    UrlPolicy(strip_params=()),
])


@st.composite
def mutated_url(draw: st.DrawFn) -> str:
    """A seed URL with hostile pieces, random text and long runs put in, replaced or cut out."""
    text = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(1, 8))):
        at = draw(st.integers(0, len(text)))
        piece = draw(st.one_of(
            st.sampled_from(HOSTILE), st.text(max_size=6), st.sampled_from(["a", "%41", "/x"]).map(lambda s: s * 3000)
        ))
        kind = draw(st.sampled_from(["insert", "replace", "cut"]))
        if kind == "insert":
            text = text[:at] + piece + text[at:]
        elif kind == "replace":
            text = text[:at] + piece + text[at + len(piece):]
        else:
            text = text[:at] + text[at + draw(st.integers(1, 10)):]
    return text


def _check(raw: str, base: str | None, policy: UrlPolicy) -> None:
    try:
        once = normalize_url(raw, base, policy)
    except InvalidUrl as exc:
        assert exc.reason
        return
    assert once.isascii() and once.startswith(("http://", "https://"))
    assert len(once) <= policy.max_length
    assert "#" not in once and not any(c.isspace() or ord(c) < 0x20 or ord(c) == 0x7F for c in once)
    assert normalize_url(once, policy=policy) == once
    assert normalize_url(once, "http://elsewhere.example/x/y", policy) == once
    assert url_host(once) == normalized_host(once)
    if policy == DEFAULT_POLICY and base is None:
        assert url_fingerprint(raw) == url_fingerprint(once)


@FUZZ
@given(mutated_url(), BASES, POLICIES)
def test_mutated_urls_normalise_to_a_fixed_point_or_are_refused(raw: str, base: str | None, policy: UrlPolicy) -> None:
    _check(raw, base, policy)


@FUZZ
@given(st.binary(max_size=300), BASES)
def test_any_bytes_read_as_latin_1_or_utf_8(data: bytes, base: str | None) -> None:
    """What a page's attribute may hold after a wrong charset guess."""
    _check(data.decode("latin-1"), base, DEFAULT_POLICY)
    _check(data.decode("utf-8", "surrogateescape"), base, DEFAULT_POLICY)


@FUZZ
@given(st.text(st.characters(codec="utf-8", exclude_characters="./?#@:\\[]%", exclude_categories=["Cc", "Zs"]),
               min_size=1, max_size=20),
       st.sampled_from(["example", "co.uk", "test"]))
def test_a_unicode_host_and_its_idna_form_are_one_url(label: str, suffix: str) -> None:
    try:
        unicode_form = normalize_url(f"http://{label}.{suffix}/p")
    except InvalidUrl:
        return
    assert normalize_url(f"http://{url_host(unicode_form)}/p") == unicode_form
    assert url_host(unicode_form).isascii()
