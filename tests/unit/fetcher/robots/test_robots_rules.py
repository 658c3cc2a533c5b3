"""RobotsRules: groups, agents, encodings, long lines and paths, read the way docs/robots.md says."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services.fetcher.robots.robots_patterns import Rule, RuleSet, url_path
from services.fetcher.robots.robots_rules import MAX_LINE_BYTES, RobotsRules, token_readings

SITE = "http://site.test"


def allowed(body: str | bytes, agent: str, path: str) -> bool:
    data = body.encode() if isinstance(body, str) else body
    return RobotsRules.parse(data, agent).allowed(SITE + path)


@pytest.mark.parametrize("between", ["Invalid-Unknown-Line: x", "Sitemap: http://site.test/s.xml", "Crawl-delay: 5"])
def test_a_line_other_than_a_rule_does_not_split_a_group(between: str) -> None:
    body = f"User-agent: FooBot\n{between}\nUser-agent: *\nDisallow: /\n"
    assert not allowed(body, "FooBot", "/page")
    assert not allowed(body, "BarBot", "/page")


def test_a_crawl_delay_between_agents_belongs_to_the_group() -> None:
    rules = RobotsRules.parse(b"User-agent: FooBot\nCrawl-delay: 5\nUser-agent: *\nDisallow: /private\n", "foobot")
    assert rules.crawl_delay == 5.0
    assert not rules.allowed(SITE + "/private/x")


@pytest.mark.parametrize(
    ("line", "agent"),
    [("FOO BAR", "foo"), ("foo/1.2", "foo"), ("One, Two, Three", "one"), ("One, Two, Three", "two"),
     ("One, Two, Three", "Three"), ("Mozilla/5.0 (compatible; Trawl/1.0)", "trawl")],
)
def test_a_user_agent_line_names_each_of_its_agents(line: str, agent: str) -> None:
    body = f"User-agent: *\nAllow: /\n\nUser-agent: {line}\nDisallow: /\n"
    assert not allowed(body, agent, "/page")
    assert allowed(body, "otherbot", "/page")


def test_a_token_that_is_not_one_word_must_be_allowed_as_it_is_and_by_each_product() -> None:
    body = "User-Agent: *\nDisallow: /\nUser-Agent: Foo Bar\nAllow: /x/\nDisallow: /\n"
    assert allowed(body, "Foo", "/x/y")
    assert not allowed(body, "Foo Bar", "/x/y")  # as it is, "foo bar" names no group: the * group disallows
    assert token_readings("FigTree Robot libwww-perl/5.04") == ("figtree robot libwww-perl/5.04", "figtree", "robot",
                                                                "libwww-perl")
    assert token_readings("trawl/2.1") == ("trawl",)


def test_groups_for_the_same_agent_are_merged_and_the_star_group_is_then_ignored() -> None:
    body = "User-agent: *\nDisallow: /x/\nUser-agent: FooBot\nDisallow: /y/\n\nUser-agent: foobot\nDisallow: /z/\n"
    assert allowed(body, "FooBot", "/x/page")
    assert not allowed(body, "FooBot", "/y/page")
    assert not allowed(body, "FooBot", "/z/page")
    assert not allowed(body, "BarBot", "/x/page")


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be"])
def test_a_utf16_file_with_a_byte_order_mark_is_read(codec: str) -> None:
    body = "\ufeffUser-agent: *\nDisallow: /private/\n".encode(codec)
    assert not allowed(body, "trawl", "/private/page")
    assert allowed(body, "trawl", "/public")


def test_a_utf8_byte_order_mark_or_a_part_of_one_is_skipped() -> None:
    for bom in (b"\xef\xbb\xbf", b"\xef\xbb", b"\xef"):
        assert not allowed(bom + b"User-agent: *\nDisallow: /a\n", "trawl", "/a")


def test_non_ascii_patterns_match_the_percent_encoded_url_only() -> None:
    body = "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/\u30c4\n"
    assert allowed(body, "FooBot", "/foo/bar/%E3%83%84")
    assert not allowed(body, "FooBot", "/foo/bar/\u30c4")  # not encoded by the caller: one reading disallows


def test_encoded_unreserved_characters() -> None:
    body = "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%62%61%7A\n"
    assert allowed(body, "FooBot", "/foo/bar/%62%61%7A")
    assert not allowed(body, "FooBot", "/foo/bar/baz")
    disallowing = "User-agent: *\nDisallow: /foo/bar/%62%61%7A\n"
    assert not allowed(disallowing, "trawl", "/foo/bar/baz")
    assert not allowed("User-agent: *\nDisallow: /a%3cd.html\n", "trawl", "/a%3Cd.html")
    assert not allowed("User-agent: *\nDisallow: /~joe/\n", "trawl", "/%7Ejoe/index.html")


def test_an_empty_query_is_not_dropped_before_matching() -> None:
    body = "User-agent: *\nAllow: /some/path?\nDisallow: /another/path?\n"
    assert allowed(body, "trawl", "/some/path?")
    assert not allowed(body, "trawl", "/another/path?")
    assert allowed(body, "trawl", "/another/path")


def test_dot_segments_are_read_as_the_client_sends_them() -> None:
    assert not allowed("User-agent: *\nDisallow: /private\n", "trawl", "/public/../private/x")


def test_a_line_is_cut_at_googles_limit() -> None:
    head = "/x/" + "a" * (MAX_LINE_BYTES - len("disallow: /x/"))
    body = f"user-agent: FooBot\ndisallow: {head}/qux\n"
    assert len(f"disallow: {head}") == MAX_LINE_BYTES
    assert allowed(body, "FooBot", "/fux")
    assert not allowed(body, "FooBot", head + "/fux")  # the cut rule is a prefix of it


def test_the_longest_match_wins_and_allow_wins_a_tie() -> None:
    body = "User-agent: *\nDisallow: /x/\nAllow: /x/p\nDisallow: /*.html\nAllow: /same\nDisallow: /same\n"
    assert allowed(body, "trawl", "/x/page")
    assert not allowed(body, "trawl", "/x/other")
    assert not allowed(body, "trawl", "/x/page.html")  # /*.html is longer than /x/p
    assert allowed(body, "trawl", "/same/thing")


def test_wildcards_and_the_end_anchor() -> None:
    body = "User-agent: *\nDisallow: /\nAllow: /*.php$\nAllow: /fish*.txt\n"
    assert allowed(body, "trawl", "/a/b.php")
    assert not allowed(body, "trawl", "/a/b.php?x=1")
    assert allowed(body, "trawl", "/fishheads/cat.txt")
    assert not allowed(body, "trawl", "/Fish.txt")


def test_robots_txt_itself_is_always_allowed() -> None:
    assert allowed("User-agent: *\nDisallow: /\n", "trawl", "/robots.txt")


def test_a_crawl_delay_over_the_limit_disallows_everything() -> None:
    body = b"User-agent: *\nCrawl-delay: 3600\nDisallow:\n"
    assert not RobotsRules.parse(body, "trawl", max_crawl_delay=300).allowed(SITE + "/")
    assert RobotsRules.parse(body, "trawl").allowed(SITE + "/")


def test_delays_and_sitemaps() -> None:
    body = (b"Sitemap: http://site.test/a.xml\nUser-agent: *\nCrawl-delay: 2\nRequest-rate: 1/10s\n"
            b"Crawl-delay: nan\nSitemap: http://site.test/b.xml\nsitemap: http://site.test/a.xml\n")
    rules = RobotsRules.parse(body, "trawl")
    assert rules.crawl_delay == 10.0
    assert rules.sitemaps == ("http://site.test/a.xml", "http://site.test/b.xml")


def test_misspelt_and_colonless_lines_are_read() -> None:
    body = "User-agent: bot1\nDesallow: /desallow/\n\nuseragent bot2\nDisallow: /no-colon/\n"
    assert not allowed(body, "bot1", "/desallow/")
    assert not allowed(body, "bot2", "/no-colon/")


def test_html_markup_around_the_lines_is_read_without_it() -> None:
    body = "<HTML><BODY>\nUser-agent: *<BR>\nDisallow: /<BR>\n</BODY></HTML>\n"
    assert not allowed(body, "bogusbot", "/index.html")


@pytest.mark.parametrize(
    ("url", "path"),
    [("http://www.example.com", "/"), ("http://www.example.com/a/b?c=http://d.e/", "/a/b?c=http://d.e/"),
     ("http://www.example.com/a/b?c=d&e=f#fragment", "/a/b?c=d&e=f"), ("http://example.com/a;b#c", "/a;b"),
     ("http://example.com?a", "/?a"), ("/a", "/a")],
)
def test_url_path(url: str, path: str) -> None:
    assert url_path(url)[0] == path


def test_many_wildcards_against_a_long_path_stay_fast() -> None:
    rules = RobotsRules.parse(b"User-agent: *\nDisallow: /*a*a*a*a*a*a*a*a*a*a*a*a*b\n", "trawl")
    started = time.perf_counter()
    assert rules.allowed(SITE + "/" + "a" * 5000)
    assert time.perf_counter() - started < 0.5


_PIECES = st.sampled_from(["/", "a", "b", "ab", "*", ".php", "?", "=", "%2A"])


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.booleans(), st.lists(_PIECES, min_size=1, max_size=5), st.booleans()), min_size=33,
             max_size=60),
    st.lists(st.lists(_PIECES.filter(lambda p: p != "*"), max_size=6), min_size=1, max_size=10),
)
def test_a_big_rule_set_looks_up_heads_and_decides_as_a_scan_would(
    specs: list[tuple[bool, list[str], bool]], paths: list[list[str]]
) -> None:
    rules = sorted(
        (Rule.of(allow, "/" + "".join(pieces) + ("$" if anchored else "")) for allow, pieces, anchored in specs),
        key=lambda r: (-r.priority, not r.allow),
    )
    indexed = RuleSet(tuple(rules))
    for pieces in paths:
        path = "/" + "".join(pieces)
        scanned = next((rule.allow for rule in rules if rule.matches(path)), True)
        assert indexed.allowed(path) == scanned, path
