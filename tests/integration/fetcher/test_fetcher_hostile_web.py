"""The fetcher service on the real broker against a hostile simulated web: bounded, and a clear outcome each.

Each test asks the fetcher (through its input topic) for URLs of hostile hosts
and judges the outcome it published and what the server's request log saw.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from itertools import pairwise
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator
from yarl import URL

from libs.common.wire import messages as pb
from libs.simweb import SimWebConfig, build_web
from tests.integration.fetcher.fetcher_rig import FetcherRig

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]
CAP = 1024 * 1024
NETWORK = pb.FETCH_STATUS_NETWORK_ERROR


@pytest.fixture(scope="module")
async def rig(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[FetcherRig]:
    web = build_web(SimWebConfig(seed=3, hosts=4, pages=20, hub_host_ratio=0.0))
    running = FetcherRig(kafka_bootstrap, web, tmp_path_factory.mktemp("fetcher"))
    await running.start()
    yield running
    await running.stop()


async def test_slow_bodies_end_at_the_minimum_rate_or_the_total_timeout(rig: FetcherRig) -> None:
    slow, steady = rig.url("slow-drip", "/slow"), rig.url("slow-drip", "/steady")
    outcomes = await rig.fetch([slow, steady])
    assert (outcomes[slow].status, outcomes[slow].error) == (NETWORK, "slow_body")
    assert (outcomes[steady].status, outcomes[steady].error) == (NETWORK, "timeout")
    assert outcomes[slow].retryable and outcomes[steady].retryable
    assert [r.path for r in await rig.settled_log("slow-drip", 3)] == ["/robots.txt", "/slow", "/steady"]


async def test_huge_bodies_and_compression_bombs_stop_at_the_cap(rig: FetcherRig) -> None:
    huge, bomb = rig.url("huge"), rig.url("bomb")
    outcomes = await rig.fetch([huge, bomb])
    for url in (huge, bomb):
        assert outcomes[url].status == pb.FETCH_STATUS_TOO_LARGE
        result = rig.result(url)
        assert result is not None and result.truncated and result.body_size == CAP


async def test_redirect_loops_and_long_chains_stop(rig: FetcherRig) -> None:
    loop, long_chain, short_chain = (rig.url("redirect-loop", "/a"), rig.url("redirect-chain", "/20"),
                                     rig.url("redirect-chain", "/4"))
    outcomes = await rig.fetch([loop, long_chain, short_chain])
    assert outcomes[loop].error == "redirect_loop" and not outcomes[loop].retryable
    assert outcomes[long_chain].error == "too_many_redirects"
    assert outcomes[short_chain].status == pb.FETCH_STATUS_OK
    assert outcomes[short_chain].final_url == rig.url("redirect-chain", "/0")
    assert len([r for r in rig.log("redirect-chain") if r.path != "/robots.txt"]) == 6 + 5


async def test_invalid_and_mixed_charsets_reach_the_extractor_byte_for_byte(rig: FetcherRig) -> None:
    urls = [rig.url("bad-charset", p) for p in ("/invalid", "/mixed", "/unknown")]
    outcomes = await rig.fetch(urls)
    assert {o.status for o in outcomes.values()} == {pb.FETCH_STATUS_OK}
    invalid = rig.result(urls[0])
    assert invalid is not None and b"\xff\xfe" in invalid.body and invalid.body_codec == "identity"
    mixed = rig.result(urls[1])
    assert mixed is not None and {h.value for h in mixed.headers if h.name == "Content-Type"} == {
        "text/html; charset=iso-8859-1"}


async def test_other_content_types_are_recorded_not_kept(rig: FetcherRig) -> None:
    urls = {p: rig.url("types", p) for p in ("/doc.pdf", "/image.png", "/data.json", "/untyped")}
    outcomes = await rig.fetch(urls.values())
    for path in ("/doc.pdf", "/image.png", "/data.json"):
        assert outcomes[urls[path]].status == pb.FETCH_STATUS_UNSUPPORTED_TYPE
        assert outcomes[urls[path]].error.startswith(("application/", "image/"))
        assert rig.result(urls[path]) is None
    assert outcomes[urls["/untyped"]].status == pb.FETCH_STATUS_OK  # no type: kept for the extractor to sniff


async def test_resets_and_malformed_answers_are_network_errors(rig: FetcherRig) -> None:
    mid, at_once = rig.url("reset", "/mid-body"), rig.url("reset", "/at-once")
    header, status_line = rig.url("malformed", "/header-line"), rig.url("malformed", "/status-line")
    outcomes = await rig.fetch([mid, at_once, header, status_line])
    assert outcomes[mid].error.startswith("payload_error")
    assert outcomes[at_once].error.startswith(("connect_error", "protocol_error", "payload_error"))
    assert outcomes[header].error.startswith("protocol_error")
    assert outcomes[status_line].error.startswith("protocol_error")
    assert all(o.status == NETWORK and o.retryable for o in outcomes.values())


async def test_tls_errors_and_dns_failures_make_robots_txt_unreachable(rig: FetcherRig) -> None:
    tls, nxdomain = rig.url("tls", "/", https=True), rig.url("no-such-host")
    outcomes = await rig.fetch([tls, nxdomain])
    assert outcomes[tls].status == pb.FETCH_STATUS_ROBOTS_DISALLOWED and outcomes[tls].retryable
    assert "connect_error:tls" in outcomes[tls].error
    assert outcomes[nxdomain].status == pb.FETCH_STATUS_ROBOTS_DISALLOWED and "dns_error" in outcomes[nxdomain].error
    assert rig.log("no-such-host") == []


async def test_retry_after_blocks_the_host_until_then(rig: FetcherRig) -> None:
    for part, status in (("busy", 503), ("rate-limited", 429)):
        first, second = rig.url(part, "/1"), rig.url(part, "/2")
        outcomes = await rig.fetch([first, second])
        assert outcomes[first].http_status == status and outcomes[first].retryable
        assert outcomes[first].host_next_allowed_at_ms >= outcomes[first].fetched_at_ms + 2000 - 50
        pages = [r for r in rig.log(part) if r.path != "/robots.txt"]
        assert len(pages) == 2 and pages[1].started_at - pages[0].finished_at >= 2.0


async def test_a_failing_host_backs_off_exponentially_then_is_parked(rig: FetcherRig) -> None:
    urls = [rig.url("failing", f"/{i}") for i in range(4)]
    outcomes = await rig.fetch(urls)
    assert [outcomes[u].http_status for u in urls[:3]] == [500, 500, 500]
    assert outcomes[urls[3]].http_status == 0 and "parked" in outcomes[urls[3]].error
    pages = [r for r in rig.log("failing") if r.path != "/robots.txt"]
    gaps = [b.started_at - a.finished_at for a, b in pairwise(pages)]
    assert len(pages) == 3 and gaps[0] >= 1.0 and gaps[1] >= 2.0  # backoff 1 s, then 2 s


async def test_robots_txt_rules_of_rfc_9309(rig: FetcherRig) -> None:
    early, late = rig.url("robots-huge", "/early/x"), rig.url("robots-huge", "/late/x")
    followed, too_many = rig.url("robots-redirect", "/private/x"), rig.url("robots-redirect-6", "/private/x")
    server_error = rig.url("robots-500", "/page")
    outcomes = await rig.fetch([early, late, followed, too_many, server_error])
    assert outcomes[early].status == pb.FETCH_STATUS_ROBOTS_DISALLOWED
    assert outcomes[late].status == pb.FETCH_STATUS_OK  # the rule past 500 KiB was cut off
    assert outcomes[followed].status == pb.FETCH_STATUS_ROBOTS_DISALLOWED  # 5 redirects are followed
    assert outcomes[too_many].status == pb.FETCH_STATUS_OK  # 6 are too many: unavailable, all allowed
    assert outcomes[server_error].status == pb.FETCH_STATUS_ROBOTS_DISALLOWED and outcomes[server_error].retryable
    assert [r.path for r in rig.log("robots-500")] == ["/robots.txt"]
    seen = rig.log("robots-huge") + rig.log("robots-redirect")
    assert all(not r.path.startswith(("/early/", "/private/")) for r in seen)


async def test_sitemaps_become_discoveries_and_x_robots_tag_is_passed_on(rig: FetcherRig) -> None:
    home, tagged = rig.url("robots-sitemap"), rig.url("x-robots", "/page")
    await rig.fetch([home, tagged])
    result = rig.result(tagged)
    assert result is not None and result.x_robots_tag == "noindex, nofollow"
    # /s/6 is listed as HTTP://ROBOTS-SITEMAP...:port/s/6?utm_source=sitemap: published in normal form.
    expected = {rig.url("robots-sitemap", f"/s/{i}") for i in range(1, 7)}
    for _ in range(100):
        found = {d.url for d in rig.collector.values("trawl.discovered-urls")
                 if d.source == pb.DISCOVERY_SOURCE_SITEMAP}
        if found >= expected:
            break
        await asyncio.sleep(0.1)
    assert found == expected
    assert "/sitemap.xml" in [r.path for r in rig.log("robots-sitemap")]


async def discoveries(
    rig: FetcherRig, source: pb.DiscoverySource.ValueType, count: int
) -> list[tuple[str, pb.DiscoveredUrl]]:
    """The first ``count`` discoveries of ``source`` (key and message), waiting up to 10 s for them."""
    for _ in range(100):
        found = [(r.key, r.value) for r in rig.collector.records
                 if r.topic.name == "trawl.discovered-urls" and r.value.source == source]
        if len(found) >= count:
            break
        await asyncio.sleep(0.1)
    return found


async def test_redirect_hops_and_targets_become_normalised_discoveries(rig: FetcherRig) -> None:
    moved = rig.url("redirect-chain", "/moved")  # -> HTTP://REDIRECT-CHAIN...:port/1?utm_source=feed -> /0
    outcomes = await rig.fetch([moved])
    assert outcomes[moved].status == pb.FETCH_STATUS_OK
    found = await discoveries(rig, pb.DISCOVERY_SOURCE_REDIRECT, 2)
    from_moved = {m.url: (key, m) for key, m in found if m.discovered_from == moved}
    host = URL(moved).host
    assert set(from_moved) == {rig.url("redirect-chain", "/1"), rig.url("redirect-chain", "/0")}
    assert all(key == host and m.host == host and m.depth == 0 for key, m in from_moved.values())
    result = rig.result(moved)  # the body travels as fetched: the producer compresses the batch
    assert result is not None and result.body_codec == "identity" and b"end of the chain" in result.body


async def test_the_ssrf_guard_refuses_internal_targets_even_after_a_redirect(rig: FetcherRig) -> None:
    bounce, literal = rig.url("ssrf"), f"http://127.0.0.1:{rig.port}/"
    outcomes = await rig.fetch([bounce, literal])
    assert outcomes[bounce].status == pb.FETCH_STATUS_INVALID_URL
    assert "blocked_address:169.254.169.254" in outcomes[bounce].error
    assert outcomes[literal].status in (pb.FETCH_STATUS_ROBOTS_DISALLOWED, pb.FETCH_STATUS_INVALID_URL)
    assert "blocked_address:127.0.0.1" in outcomes[literal].error
    assert not any(r.host == "127.0.0.1" for r in rig.server.request_log)


async def test_every_response_is_in_the_warc_files(rig: FetcherRig) -> None:
    """Runs last: stops the fetcher, so that the archive's last file is closed."""
    assert rig.service is not None
    await rig.service.stop()
    archived: set[tuple[str, str]] = set()
    for path in Path(rig.warc_dir).glob("*.warc.gz"):
        with path.open("rb") as stream:
            for record in ArchiveIterator(stream):
                if record.rec_type in ("response", "revisit"):
                    uri = URL(record.rec_headers.get_header("WARC-Target-URI"))
                    archived.add((uri.raw_host or "", uri.raw_path_qs))
    assert list(Path(rig.warc_dir).glob("*.open")) == []
    cut = {"reset.hostile.test", "malformed.hostile.test"}  # no response came, nothing to archive
    answered = {(r.host, r.path) for r in rig.server.request_log if r.host not in cut}
    assert answered and answered <= archived
