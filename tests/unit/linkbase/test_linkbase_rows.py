"""Pure row helpers of the link base."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from libs.common.followed_links import MAX_COUNTED_OCCURRENCES
from libs.common.urls import InvalidUrl, url_fingerprint
from libs.common.wire import messages as pb
from services.linkbase.rows import (
    LinkRow,
    OutcomeRow,
    UrlRef,
    combine_targets,
    host_group,
    host_id,
    merge_links,
    resolve,
    targets_of,
)

SOURCES = {n: resolve(f"http://a.test/source-{n}") for n in range(1, 3)}


def _link(source: int, url: str, *, followable: bool = True, anchor: str = "") -> LinkRow:
    return LinkRow(SOURCES[source], resolve(url), anchor, pb.LINK_CLASS_INTERNAL, not followable, followable)


def test_resolve_normalises_and_fingerprints() -> None:
    ref = resolve("HTTP://Example.COM:80/a/./b#frag")
    assert ref.url == "http://example.com/a/b"
    assert ref.fp == url_fingerprint("http://example.com/a/b")
    assert ref.host == "example.com"
    assert ref.host_id == host_id("example.com")


def test_host_id_is_a_stable_signed_64_bit_value() -> None:
    assert host_id("example.com") == host_id("example.com")
    assert host_id("example.com") != host_id("example.org")
    assert -(2**63) <= host_id("example.com") < 2**63


def test_home_page_is_the_root_path_without_query() -> None:
    assert resolve("http://a.test").is_home_page
    assert resolve("http://a.test/").is_home_page
    assert not resolve("http://a.test/?q=1").is_home_page
    assert not resolve("http://a.test/index.html").is_home_page


def test_target_depth_is_one_more_than_the_shallowest_source() -> None:
    links = [_link(1, "http://a.test/x"), _link(2, "http://a.test/x"), _link(2, "http://a.test/y")]
    targets = {t.ref.url: t for t in targets_of(links, {SOURCES[1].fp: 5, SOURCES[2].fp: 2})}
    assert targets["http://a.test/x"].depth == 3
    assert targets["http://a.test/x"].discovered_from == SOURCES[2]
    assert targets["http://a.test/y"].depth == 3


def test_target_is_followable_when_any_link_to_it_is() -> None:
    links = [_link(1, "http://a.test/x", followable=False), _link(2, "http://a.test/x")]
    (target,) = targets_of(links, {SOURCES[1].fp: 0, SOURCES[2].fp: 0})
    assert target.followable


def test_unknown_source_depth_leaves_target_depth_unknown() -> None:
    (target,) = targets_of([_link(1, "http://a.test/x")], {SOURCES[1].fp: None})
    assert target.depth is None


def test_targets_are_sorted_by_primary_key() -> None:
    links = [_link(1, f"http://h{i % 3}.test/{i}") for i in range(20)]
    keys = [t.ref.key for t in targets_of(links, {SOURCES[1].fp: 0})]
    assert keys == sorted(keys)


def test_a_target_keeps_how_many_times_the_page_it_was_discovered_from_links_it() -> None:
    links = [_link(1, "http://a.test/x")._replace(occurrences=3), _link(2, "http://a.test/x"),
             _link(2, "http://a.test/y")._replace(occurrences=2)]
    targets = {t.ref.url: t for t in targets_of(links, {SOURCES[1].fp: 5, SOURCES[2].fp: 2})}
    assert targets["http://a.test/x"].occurrences == 1  # discovered from source 2 (shallower), which links it once
    assert targets["http://a.test/y"].occurrences == 2


def test_two_links_of_one_page_to_one_url_add_their_occurrences() -> None:
    merged = merge_links(_link(1, "http://a.test/x")._replace(occurrences=2), _link(1, "http://a.test/x"))
    assert merged.occurrences == 3
    capped = merge_links(merged._replace(occurrences=MAX_COUNTED_OCCURRENCES), merged)
    assert capped.occurrences == MAX_COUNTED_OCCURRENCES


def test_merge_links_keeps_first_anchor_and_follows_if_either_does() -> None:
    first = _link(1, "http://a.test/x", followable=False, anchor="")
    second = _link(1, "http://a.test/x", followable=True, anchor="second")
    merged = merge_links(first, second)
    assert merged.anchor == "second"
    assert merged.followable and not merged.nofollow


def _outcome(url: str, status: int) -> OutcomeRow:
    ref: UrlRef = resolve(url)
    return OutcomeRow(ref, "r1", 1, status, 0, 1000, 5, "")


def test_only_home_page_outcomes_decide_host_availability() -> None:
    assert _outcome("http://a.test/", pb.FETCH_STATUS_NETWORK_ERROR).host_available is False
    assert _outcome("http://a.test/", pb.FETCH_STATUS_HTTP_ERROR).host_available is False
    assert _outcome("http://a.test/", pb.FETCH_STATUS_OK).host_available is True
    assert _outcome("http://a.test/", pb.FETCH_STATUS_ROBOTS_DISALLOWED).host_available is None
    assert _outcome("http://a.test/page", pb.FETCH_STATUS_NETWORK_ERROR).host_available is None


def test_success_means_a_body_was_delivered() -> None:
    assert _outcome("http://a.test/p", pb.FETCH_STATUS_OK).succeeded
    assert _outcome("http://a.test/p", pb.FETCH_STATUS_TOO_LARGE).succeeded
    assert not _outcome("http://a.test/p", pb.FETCH_STATUS_REDIRECT).succeeded


def test_resolve_agrees_with_the_shared_fingerprint_and_host() -> None:
    from libs.common.urls import url_host

    for raw in ("http://Example.com/a?b=1#f", "https://user:pw@h.test:8443/x/../y", "http://[::1]:8080/p",
                "http://192.168.0.1/", "http://xn--bcher-kva.test/?q", "HTTPS://a.test"):
        ref = resolve(raw)
        assert (ref.fp, ref.host) == (url_fingerprint(raw), url_host(raw)), raw


_FAST = r"https?://(?:[a-z0-9](?:[a-z0-9-]{0,8}[a-z0-9])?\.){1,3}[a-z]{2,6}(?:/[A-Za-z0-9._~!$&'()*+,=:@%;?#-]{0,12}){1,4}"


@settings(max_examples=500, deadline=None)
@given(st.from_regex(_FAST, fullmatch=True))
def test_a_url_visibly_normal_resolves_as_the_normaliser_reads_it(url: str) -> None:
    from libs.common.urls import normalize_url, url_host

    try:
        expected = normalize_url(url)
    except InvalidUrl:
        return
    ref = resolve.__wrapped__(url)  # the host the short path takes from the pattern is the normaliser's
    assert (ref.url, ref.host) == (expected, url_host(expected))


_HOSTS = [f"h{n}.test" for n in range(6)]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 11), st.integers(0, 11), st.booleans()), min_size=1, max_size=40),
    st.lists(st.one_of(st.none(), st.integers(0, 4)), min_size=12, max_size=12),
    st.integers(2, 4),
)
def test_targets_combined_from_host_groups_are_the_targets_of_all_links(
    edges: list[tuple[int, int, bool]], depths: list[int | None], groups: int
) -> None:
    pages = [resolve(f"http://{_HOSTS[n % len(_HOSTS)]}/p{n}") for n in range(12)]
    unique = {(s, t): LinkRow(pages[s], pages[t], "", pb.LINK_CLASS_INTERNAL, not f, f) for s, t, f in edges}
    links = sorted(unique.values(), key=lambda r: (r.source.host_id, r.source.fp, r.target.fp))
    page_depths = {page.fp: depths[n] for n, page in enumerate(pages)}
    parts = [[r for r in links if host_group(r.source.host_id, groups) == g] for g in range(groups)]
    combined = combine_targets(targets_of(part, page_depths) for part in parts)
    assert combined == targets_of(links, page_depths)


def test_host_groups_cover_every_host_id() -> None:
    assert {host_group(host_id(h), 2) for h in _HOSTS} == {0, 1}
    assert all(0 <= host_group(host_id(h), 3) < 3 for h in _HOSTS)
