"""URL normalisation: a table of concrete cases and RFC 3986 equivalence properties."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from libs.common.url_keys import normalized_fingerprint
from libs.common.urls import (
    DEFAULT_POLICY,
    InvalidUrl,
    UrlPolicy,
    normalize_url,
    registered_domain,
    url_fingerprint,
    url_host,
    url_key,
)

CASES: list[tuple[str, str | None, str]] = [
    # case of scheme and host, default port, fragment, empty path
    ("HTTP://Example.COM:80", None, "http://example.com/"),
    ("https://EXAMPLE.com:443/A/B#Frag", None, "https://example.com/A/B"),
    ("https://example.com:8443/", None, "https://example.com:8443/"),
    ("http://example.com:0080/", None, "http://example.com/"),
    ("http://example.com:00000000000000000000080/", None, "http://example.com/"),
    ("http://example.com:/x", None, "http://example.com/x"),
    # dot segments, trailing slash and path case kept
    ("http://h.com/a/./b/../c/", None, "http://h.com/a/c/"),
    ("http://h.com/a/b/..", None, "http://h.com/a/"),
    ("http://h.com/../../x", None, "http://h.com/x"),
    ("http://h.com/%2e%2E/x", None, "http://h.com/x"),
    ("http://h.com/Path/To/", None, "http://h.com/Path/To/"),
    # percent-encoding
    ("http://h.com/%7euser/%41%62c", None, "http://h.com/~user/Abc"),
    ("http://h.com/a%2fb%3a", None, "http://h.com/a%2Fb%3A"),
    ('http://h.com/a b/"x"<>', None, "http://h.com/a%20b/%22x%22%3C%3E"),
    ("http://h.com/caf\u00e9?q=\u00fc", None, "http://h.com/caf%C3%A9?q=%C3%BC"),
    ("http://h.com/100%", None, "http://h.com/100%25"),
    ("http://h.com/a?x=1%26y%3D2&z=%7e", None, "http://h.com/a?x=1%26y%3D2&z=~"),
    ("http://h.com/[x]!$&'()*+,;=:@", None, "http://h.com/[x]!$&'()*+,;=:@"),
    ("http://h.com/?a[]=1&q='x'&r=%27", None, "http://h.com/?a[]=1&q=%27x%27&r=%27"),
    ("http://ex%41mple.com/", None, "http://example.com/"),
    # whitespace and control characters, backslashes
    ("  \thttp://h.com/a\nb \x00", None, "http://h.com/ab"),
    ("http:\\\\h.com\\a\\b?c\\d", None, "http://h.com/a/b?c%5Cd"),
    # internationalised hosts
    ("http://B\u00fccher.example/", None, "http://xn--bcher-kva.example/"),
    ("http://fa\u00df.de/", None, "http://xn--fa-hia.de/"),
    ("http://\uff21\uff22\uff23\u3002com/", None, "http://abc.com/"),
    ("http://xn--bcher-kva.example/", None, "http://xn--bcher-kva.example/"),
    ("http://www.example.com./", None, "http://www.example.com/"),
    ("https://%e2%98%83.net/", None, "https://xn--n3h.net/"),
    ("http://\u2603.net/", None, "http://xn--n3h.net/"),
    # IP literals
    ("http://[2001:DB8:0:0::1]:80/", None, "http://[2001:db8::1]/"),
    ("http://127.0.0.1:8080", None, "http://127.0.0.1:8080/"),
    ("http://0x7f.1/", None, "http://127.0.0.1/"),
    ("http://3232235521/", None, "http://192.168.0.1/"),
    # query: tracking parameters, empty pieces, order kept
    ("http://h.com/?utm_source=a&b=2&UTM_Medium=c&a=1", None, "http://h.com/?b=2&a=1"),
    ("http://h.com/?fbclid=x&gclid=y&msclkid=z&q=1", None, "http://h.com/?q=1"),
    ("http://h.com/?PHPSESSID=1&sid=2&jsessionid=3&sessionid=4", None, "http://h.com/"),
    ("http://h.com/p;jsessionid=ABC?x=1&&y=2&", None, "http://h.com/p?x=1&y=2"),
    ("http://h.com/a/..;jsessionid=1/b;v=2;sid=3", None, "http://h.com/b;v=2"),
    ("http://h.com/?", None, "http://h.com/"),
    ("http://h.com/?utm_x", None, "http://h.com/"),
    ("http://h.com/?%75tm_source=1&k=v", None, "http://h.com/?k=v"),
    ("http://h.com/?sidebar=1", None, "http://h.com/?sidebar=1"),
    # userinfo kept; an empty password or userinfo dropped, "@" and ":" inside escaped
    ("http://User:P%61ss@H.com/", None, "http://User:Pass@h.com/"),
    ("http://a:@h.com/", None, "http://a@h.com/"),
    ("http://:@h.com/", None, "http://h.com/"),
    ("http://::@c@h.com:2", None, "http://:%3A%40c@h.com:2/"),
    ("https://@u@v@h.com/", None, "https://%40u%40v@h.com/"),
    # slashes read as browsers do
    ("http:example.com/x", None, "http://example.com/x"),
    ("https:/example.com/", "http://a/b", "https://example.com/"),
    ("http:/example.com/", "http://a/b", "http://a/example.com/"),
    ("http:///path", None, "http://path/"),
    ("///test", "http://a/b", "http://test/"),
    ("/\\/\\//h.com/../p", "http://a/b", "http://h.com/p"),
    # resolution against a base (RFC 3986 section 5.4 examples)
    ("g", "http://a/b/c/d;p?q", "http://a/b/c/g"),
    ("./g", "http://a/b/c/d;p?q", "http://a/b/c/g"),
    ("g/", "http://a/b/c/d;p?q", "http://a/b/c/g/"),
    ("/g", "http://a/b/c/d;p?q", "http://a/g"),
    ("//g", "http://a/b/c/d;p?q", "http://g/"),
    ("?y", "http://a/b/c/d;p?q", "http://a/b/c/d;p?y"),
    ("#s", "http://a/b/c/d;p?q", "http://a/b/c/d;p?q"),
    ("", "http://a/b/c/d;p?q", "http://a/b/c/d;p?q"),
    ("../..", "http://a/b/c/d;p?q", "http://a/"),
    ("../../../g", "http://a/b/c/d;p?q", "http://a/g"),
    ("g;x=1/../y", "http://a/b/c/d;p?q", "http://a/b/c/y"),
    ("HTTPS://other.org/x", "http://a/b", "https://other.org/x"),
    ("..\\x", "http://a/b/c/", "http://a/b/x"),
]


@pytest.mark.parametrize(("url", "base", "expected"), CASES)
def test_concrete_cases(url: str, base: str | None, expected: str) -> None:
    assert normalize_url(url, base) == expected
    assert normalize_url(expected) == expected


INVALID: list[tuple[str, str | None, str]] = [
    ("", None, "empty"),
    ("   \t\n", None, "empty"),
    ("javascript:alert(1)", None, "unsupported_scheme:javascript"),
    ("JavaScript:void(0)", "http://a/", "unsupported_scheme:javascript"),
    ("mailto:someone@example.com", None, "unsupported_scheme:mailto"),
    ("tel:+123", "http://a/", "unsupported_scheme:tel"),
    ("data:text/html,hi", None, "unsupported_scheme:data"),
    ("ftp://h.com/file", None, "unsupported_scheme:ftp"),
    ("relative/path", None, "no_scheme"),
    ("//h.com/x", None, "no_scheme"),
    ("http://", None, "no_host"),
    ("http:///", None, "no_host"),
    ("http://?q", "http://a/", "no_host"),
    ("//", "http://a/", "no_host"),
    ("http://h.com:99999/", None, "bad_port"),
    ("http://h.com:0/", None, "bad_port"),
    ("http://h.com:8o/", None, "bad_port"),
    ("http://[::1/", None, "malformed"),
    ("http://[nothex]/", None, "malformed"),
    ("http://exa mple.com/", None, "bad_host"),
    ("http://a..b.com/", None, "bad_host"),
    ("http://a<b>.com/", None, "bad_host"),
    ("http://256.1.1.1/", None, "bad_host"),
    ("http://example.123/", None, "bad_host"),
    ("http://1.2.3.08/", None, "bad_host"),
    ("http://foo.09/", None, "bad_host"),
    ("http://0999999999999999999/", None, "bad_host"),
    ("http://h.com:00000000000000/", None, "bad_port"),
    ("http://\u200d.com/", None, "bad_idn"),
    ("http://xn--a-zz.com/", None, "bad_idn"),
    ("http://h.com/" + "a" * 3000, None, "too_long"),
    ("http://h.com/" + "a" * 20000, None, "too_long"),
]


@pytest.mark.parametrize(("url", "base", "reason"), INVALID)
def test_invalid_urls_have_reasons(url: str, base: str | None, reason: str) -> None:
    with pytest.raises(InvalidUrl) as info:
        normalize_url(url, base)
    assert info.value.reason == reason
    assert isinstance(info.value, ValueError)


def test_policy_sort_query_and_custom_params() -> None:
    policy = UrlPolicy(strip_params=("ref", "trk_*"), sort_query=True, max_length=64)
    url = "http://h.com/?z=1&a=2&ref=x&trk_id=3&utm_source=kept&a=1"
    assert normalize_url(url, policy=policy) == "http://h.com/?a=2&a=1&utm_source=kept&z=1"
    with pytest.raises(InvalidUrl) as info:
        normalize_url("http://h.com/" + "x" * 60, policy=policy)
    assert info.value.reason == "too_long"
    assert normalize_url("http://h.com/" + "x" * 40, policy=policy).endswith("x" * 40)


def test_host_fingerprint_and_key() -> None:
    assert url_host("HTTP://WWW.Example.com:8080/x") == "www.example.com"
    assert url_host("http://[::1]:8080/") == "::1"
    assert url_host("http://B\u00fccher.example/") == "xn--bcher-kva.example"
    fp = url_fingerprint("http://Example.com:80/a/../b#x")
    assert fp == url_fingerprint("http://example.com/b")
    assert fp == normalized_fingerprint(normalize_url("http://Example.com:80/a/../b#x"))
    assert -(2**63) <= fp < 2**63
    key = url_key("http://example.com/b")
    assert len(key) == 16
    assert key == key.lower()
    assert int(key, 16) == fp & 0xFFFFFFFFFFFFFFFF
    assert url_key("http://example.com/c") != key


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("www.example.com", "example.com"),
        ("a.b.example.co.uk", "example.co.uk"),
        ("WWW.Example.COM.", "example.com"),
        ("alice.github.io", "alice.github.io"),
        ("a.b.site.test", "site.test"),
        ("site.test", "site.test"),
        ("localhost", "localhost"),
        ("10.0.0.1", "10.0.0.1"),
        ("::1", "::1"),
        ("[::1]", "[::1]"),
        ("co.uk", "co.uk"),
        ("shop.example.xn--p1ai", "example.xn--p1ai"),
    ],
)
def test_registered_domain(host: str, expected: str) -> None:
    assert registered_domain(host) == expected


# --- properties -------------------------------------------------------------

_LABEL = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=10)
_TLD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=6)
_HOST = st.builds(lambda labels, tld: ".".join([*labels, tld]), st.lists(_LABEL, max_size=3), _TLD)
_SEGMENT = st.lists(
    st.one_of(
        st.text(alphabet="abcXYZ09-_~!$'()*+,:@\u00e9\u4e2d", min_size=1, max_size=3),
        st.sampled_from(["%2F", "%3F", "%23", "%25", "%3A", "%E9"]),
    ),
    max_size=4,
).map("".join)
_PATH = st.lists(_SEGMENT, min_size=0, max_size=5).map(lambda segs: "/" + "/".join(segs))
_QUERY_PIECE = st.tuples(
    st.text(alphabet="abcdefgh_", min_size=1, max_size=6), st.text(alphabet="xyz019-~.", max_size=6)
).map(lambda kv: f"{kv[0]}={kv[1]}")
_QUERY = st.lists(_QUERY_PIECE, max_size=4).map("&".join)


@st.composite
def canonical_parts(draw: st.DrawFn) -> tuple[str, str, str, str]:
    """A URL made of plain characters, as (scheme, host, path, query)."""
    return draw(st.sampled_from(["http", "https"])), draw(_HOST), draw(_PATH), draw(_QUERY)


def _random_case(draw: st.DrawFn, text: str) -> str:
    flips = draw(st.lists(st.booleans(), min_size=len(text), max_size=len(text)))
    return "".join(c.upper() if flip else c for c, flip in zip(text, flips, strict=True))


def _escape_some(draw: st.DrawFn, text: str) -> str:
    """Percent-encode some unreserved or non-ASCII characters and re-case existing escapes' hex."""
    out = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "%":  # an escape of the plain form: same meaning in either hex case
            escape = text[i : i + 3]
            out.append(escape.lower() if draw(st.booleans()) else escape)
            i += 3
            continue
        if (not ch.isascii() or ch.isalnum() or ch in "-._~") and draw(st.booleans()):
            escape = "".join(f"%{b:02X}" for b in ch.encode("utf-8"))
            out.append(escape.lower() if draw(st.booleans()) else escape)
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def _add_dot_segments(draw: st.DrawFn, path: str) -> str:
    segments = path.split("/")[1:]
    out: list[str] = []
    for seg in segments:
        choice = draw(st.sampled_from(["", "dot", "up"]))
        if choice == "dot":
            out.append(".")
        elif choice == "up":
            out.extend(["zz", ".."])
        out.append(seg)
    return "/" + "/".join(out)


@st.composite
def equivalent_pair(draw: st.DrawFn) -> tuple[str, str]:
    """Two RFC 3986-equivalent spellings of one URL."""
    scheme, host, path, query = draw(canonical_parts())
    plain = f"{scheme}://{host}{path}" + (f"?{query}" if query else "")
    variant_scheme = _random_case(draw, scheme)
    variant_host = _escape_some(draw, _random_case(draw, host))
    port = draw(st.sampled_from(["", ":80" if scheme == "http" else ":443"]))
    variant_path = _add_dot_segments(draw, _escape_some(draw, path))
    variant_query = _escape_some(draw, query)
    fragment = draw(st.sampled_from(["", "#", "#frag"]))
    variant = f"{variant_scheme}://{variant_host}{port}{variant_path}"
    if variant_query:
        variant += f"?{variant_query}"
    return plain, variant + fragment


@settings(max_examples=300, deadline=None)
@given(equivalent_pair())
def test_rfc3986_equivalents_normalise_the_same(pair: tuple[str, str]) -> None:
    plain, variant = pair
    assert normalize_url(variant) == normalize_url(plain)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200), st.one_of(st.none(), st.just("http://base.example/dir/page?q=1"), st.text()))
def test_only_invalid_url_is_raised_and_result_is_idempotent(url: str, base: str | None) -> None:
    try:
        once = normalize_url(url, base)
    except InvalidUrl as exc:
        assert exc.reason
        return
    assert once.isascii()
    assert normalize_url(once) == once
    assert normalize_url(once, "http://elsewhere.example/") == once


_PATH_TOKENS = st.sampled_from(
    [
        ".",
        "..",
        "a",
        "B",
        "/",
        "//",
        ";sid=1",
        ";jsessionid=A",
        ";v=2",
        "%2e",
        "%2E%2e",
        "%41",
        "%7e",
        "%zz",
        "%",
        "%2f",
        "%3F",
        "\u00e9",
        "\u4e2d",
        " ",
        "[",
        "]",
        "\\",
        "?",
        "#",
        "&",
        "=",
        "utm_source=x",
        "q=1",
        "+",
        "\t",
        "\x01",
    ]
)
_AUTHORITIES = st.one_of(
    _HOST,
    st.sampled_from(
        [
            "B\u00fccher.example",
            "[::1]",
            "[::1",
            "[v1.x]",
            "[fe80::1%25eth0]",
            "h.com:8080",
            "h.com:80",
            "h.com:99999",
            "u:p@h.com",
            "a@b@h.com",
            "ex ample.com",
            "\u2100.com",
            "0x7f.1",
            "1.2.3.256",
            "h.com.",
            "%41.com",
            "xn--a.com",
            "\u200d.com",
            "",
        ]
    ),
)
_URLISH = st.builds(
    lambda scheme, authority, tokens, tail: f"{scheme}://{authority}/{''.join(tokens)}{tail}",
    st.sampled_from(["http", "https", "HTTP", "hTTps"]),
    _AUTHORITIES,
    st.lists(_PATH_TOKENS, max_size=12),
    st.text(max_size=10),
)


@settings(max_examples=300, deadline=None)
@given(_URLISH, st.booleans())
def test_idempotent_on_url_like_text(url: str, sort_query: bool) -> None:
    policy = UrlPolicy(sort_query=sort_query) if sort_query else DEFAULT_POLICY
    try:
        once = normalize_url(url, policy=policy)
    except InvalidUrl:
        return
    assert normalize_url(once, policy=policy) == once
    if not sort_query:
        assert url_fingerprint(once) == url_fingerprint(url)


def test_default_policy_strips_click_ids_and_session_ids() -> None:
    url = "http://h.com/a?gbraid=1&wbraid=2&dclid=3&yclid=4&igshid=5&mc_cid=6&mc_eid=7&_ga=8&_gl=9&keep=1"
    assert normalize_url(url) == "http://h.com/a?keep=1"
    url = "http://h.com/shop;ASPSESSIONID=x?osCsid=abc&zenid=def&page=2"
    assert normalize_url(url) == "http://h.com/shop?page=2"


def test_url_settings_build_the_policy_from_the_environment() -> None:
    from libs.common.settings import load_settings
    from libs.common.urls import UrlSettings

    assert load_settings(UrlSettings, {}).policy() == DEFAULT_POLICY
    env = {"TRAWL_URL_STRIP_PARAMS": "ref, trk_*", "TRAWL_URL_SORT_QUERY": "true", "TRAWL_URL_MAX_LENGTH": "100"}
    policy = load_settings(UrlSettings, env).policy()
    assert policy == UrlPolicy(strip_params=("ref", "trk_*"), sort_query=True, max_length=100)
    assert normalize_url("http://h.com/?z=1&ref=2&trk_a=3&utm_source=4", policy=policy) == (
        "http://h.com/?utm_source=4&z=1"
    )
    with pytest.raises(ValueError, match="too small"):
        load_settings(UrlSettings, {"TRAWL_URL_MAX_LENGTH": "3"}).policy()


def _decoded_path_and_query(url: str) -> tuple[str, str]:
    from urllib.parse import unquote, urlsplit

    parts = urlsplit(url)
    return unquote(parts.path), unquote(parts.query)


@st.composite
def escaped_variant(draw: st.DrawFn) -> tuple[str, str]:
    """A plain URL without removable parameters, and a spelling of it with some escapes."""
    scheme, host, path, query = draw(canonical_parts())
    assume(not any(DEFAULT_POLICY.strips(piece.split("=")[0]) for piece in query.split("&") if piece))
    suffix = f"?{query}" if query else ""
    return f"{scheme}://{host}{path}{suffix}", f"{scheme}://{host}{_escape_some(draw, path)}{suffix}"


@settings(max_examples=300, deadline=None)
@given(escaped_variant())
def test_normalising_never_changes_the_resource(pair: tuple[str, str]) -> None:
    """What a URL names (its host, decoded path and query) survives normalisation of any equivalent spelling."""
    plain, variant = pair
    normalized = normalize_url(variant)
    assert _decoded_path_and_query(normalized) == _decoded_path_and_query(plain)
    assert url_host(normalized) == url_host(plain)


@settings(max_examples=200, deadline=None)
@given(equivalent_pair())
def test_rfc3986_equivalents_normalise_the_same_with_sorting(pair: tuple[str, str]) -> None:
    policy = UrlPolicy(sort_query=True)
    plain, variant = pair
    once = normalize_url(variant, policy=policy)
    assert once == normalize_url(plain, policy=policy)
    assert normalize_url(once, policy=policy) == once


def test_an_installed_policy_is_the_process_default() -> None:
    from libs.common.urls import DEFAULT_POLICY, UrlPolicy, install_policy, installed_policy, normalize_url

    url = "http://a.test/p?b=2&a=1"
    assert normalize_url(url) == url
    install_policy(UrlPolicy(sort_query=True))
    try:
        assert normalize_url(url) == "http://a.test/p?a=1&b=2"
        assert normalize_url(url, policy=DEFAULT_POLICY) == url  # an explicit policy wins
    finally:
        install_policy(DEFAULT_POLICY)
    assert installed_policy() is DEFAULT_POLICY
