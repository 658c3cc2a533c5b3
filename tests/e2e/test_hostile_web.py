"""The hostile-web suite: every case ends with its recorded outcome, no crash and bounded memory.

The fetcher and the extractor run as service processes on the real broker
(:mod:`tests.e2e.hostile_rig`) with their default memory bounds. All cases are
requested at once (one host per behaviour, so politeness does not serialise
them); each row of :data:`CASES` then checks what was recorded for its URL: the
fetch outcome (status and error code, as the scheduler and linkbase receive it)
and, for pages the extractor reads, the document, the page's links (a trap rule,
a bad-link reason, a cap) or a dead letter. Afterwards both processes must still
be alive, and their peak resident set sizes under the limits documented in
``docs/operations.md`` (section "Memory bounds under hostile input").
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from libs.common.topics import DEAD_LETTERS, DOCUMENTS, FETCH_RESULTS, PAGE_LINKS
from libs.common.urls import InvalidUrl, normalize_url
from libs.common.wire import messages as pb
from tests.e2e.hostile_rig import HostileRig

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]
log = logging.getLogger(__name__)

MiB = 1024 * 1024
FETCHER_RSS_LIMIT = 256 * MiB
"""The fetcher's peak RSS under this suite (docs/operations.md: memory bounds under hostile input)."""
EXTRACTOR_RSS_LIMIT = 384 * MiB
"""The extractor's peak RSS under this suite (docs/operations.md: memory bounds under hostile input)."""
DIRECT_HOST = "direct.hostile.test"


@dataclass
class Seen:
    """What was recorded for one case's URL."""

    outcome: pb.FetchOutcome | None
    result: pb.FetchResult | None
    document: pb.Document | None
    links: pb.PageLinks | None
    dead_letter: pb.DeadLetter | None


Check = Callable[[Seen], None]


def _document(error: str | None = None) -> Check:
    """A document was made (``error``: with this extraction error; None: any)."""

    def check(seen: Seen) -> None:
        assert seen.document is not None, "no document"
        assert error is None or seen.document.extraction_error == error
        assert seen.document.charset or seen.document.extraction_error.startswith("not_html")

    return check


def _cut(seen: Seen) -> None:
    """The fetch result says its body was cut."""
    assert seen.result is not None and seen.result.truncated


def _no_document(seen: Seen) -> None:
    assert seen.document is None and seen.links is None


def _links(check_links: Callable[[list[pb.Link], pb.PageLinks], bool]) -> Check:
    def check(seen: Seen) -> None:
        assert seen.links is not None, "no page links"
        assert check_links(list(seen.links.links), seen.links), [(link.url[:80], link.bad_reason)
                                                                  for link in seen.links.links][:20]

    return check


def _trap(rule: str, fragment: str) -> Check:
    return _links(lambda links, _: any(
        link.trap_rule == rule and link.bad_reason == f"trap:{rule}" and fragment in link.url for link in links))


def _dead_letter(error: str) -> Check:
    def check(seen: Seen) -> None:
        assert seen.dead_letter is not None and error in seen.dead_letter.error
        assert seen.document is None

    return check


@dataclass(frozen=True)
class Case:
    """One hostile behaviour: where it is, and what must be recorded for it.

    ``status``/``error`` are the fetch outcome's status name and error prefix (None: no fetch,
    the fetch result is handed straight to the extractor); ``then`` checks the extractor's side.
    """

    name: str
    part: str
    path: str
    status: str | None
    error: str = ""
    then: tuple[Check, ...] = field(default=())
    http_status: int = 0


CASES = [
    # time
    Case("slow drip ends at the minimum rate", "slow-drip", "/slow", "NETWORK_ERROR", "slow_body"),
    Case("endless steady body ends at the total timeout", "slow-drip", "/steady", "NETWORK_ERROR", "timeout"),
    Case("headers then silence", "stall", "/after-headers", "NETWORK_ERROR", "slow_body"),
    Case("no answer at all", "stall", "/before-headers", "NETWORK_ERROR", "timeout"),
    # size
    Case("endless body is cut at the cap and still read", "huge", "/", "TOO_LARGE", "", (_cut, _document())),
    Case("random bytes past the cap, too big for a message", "types", "/noise.html", "TOO_LARGE", "",
         (_cut, _document("not_html:binary_body"))),
    Case("Content-Length of 10 GB, then a closed connection", "lying-length", "/", "NETWORK_ERROR", "payload_error"),
    Case("gzip bomb", "bomb", "/", "TOO_LARGE", "", (_document("not_html:binary_body"),)),
    Case("deflate bomb", "bomb", "/deflate", "TOO_LARGE", "", (_document("not_html:binary_body"),)),
    Case("gzip bomb inside gzip", "bomb", "/nested", "OK", "", (_document("not_html:binary_body"),)),
    Case("gzip bomb under two stacked codings", "bomb", "/stacked", "HTTP_ERROR", "undecodable_body"),
    Case("sitemap of 52 MiB of elements in 53 KB of gzip", "sitemap-bomb", "/", "OK"),
    Case("sitemap index of 20 such sitemaps", "sitemap-index-bomb", "/", "OK"),
    Case("1 MiB header line", "long-header", "/header", "NETWORK_ERROR", "protocol_error"),
    Case("redirect to a 1 MiB URL", "long-header", "/location", "NETWORK_ERROR", "protocol_error"),
    Case("a quarter-megabyte URL requested", "long-header", "/" + "q" * (256 * 1024), "HTTP_ERROR", http_status=400),
    # redirects
    Case("redirect loop", "redirect-loop", "/a", "HTTP_ERROR", "redirect_loop"),
    Case("redirect to itself", "redirect-odd", "/self", "HTTP_ERROR", "redirect_loop"),
    Case("redirect chain too long", "redirect-chain", "/20", "HTTP_ERROR", "too_many_redirects"),
    Case("redirect to ftp:", "redirect-odd", "/ftp", "HTTP_ERROR", "invalid_redirect"),
    Case("redirect to javascript:", "redirect-odd", "/js", "HTTP_ERROR", "invalid_redirect"),
    Case("302 without Location", "redirect-odd", "/no-location", "HTTP_ERROR", http_status=302),
    # broken connections and protocol
    Case("reset in the middle of the body", "reset", "/mid-body", "NETWORK_ERROR", "payload_error"),
    Case("status line that is no status line", "malformed", "/status-line", "NETWORK_ERROR", "protocol_error"),
    Case("endless 103 Early Hints", "early-hints", "/", "NETWORK_ERROR",
         "protocol_error:too_many_informational_responses"),
    Case("three 103 Early Hints, then the page", "early-hints", "/few", "OK", "", (_document(""),)),
    # types and charsets
    Case("PDF is recorded, not kept", "types", "/doc.pdf", "UNSUPPORTED_TYPE", "application/pdf", (_no_document,)),
    Case("image is recorded, not kept", "types", "/image.png", "UNSUPPORTED_TYPE", "image/png", (_no_document,)),
    Case("PNG bytes declared as HTML", "types", "/fake.html", "OK", "", (_document("not_html:binary_body"),)),
    Case("random bytes behind a UTF-16 byte order mark", "types", "/bom-noise.html", "OK", "",
         (_document("not_html:binary_body"),)),
    Case("plain text is fetched, not extracted", "types", "/plain.txt", "OK", "", (_no_document,)),
    Case("bytes invalid in the declared UTF-8", "bad-charset", "/invalid", "OK", "", (_document(""),)),
    Case("header and meta charsets disagree", "bad-charset", "/mixed", "OK", "", (_document(),)),
    Case("unknown charset", "bad-charset", "/unknown", "OK", "", (_document(),)),
    # robots.txt
    Case("binary robots.txt", "robots-binary", "/page", "OK", "", (_document(),)),
    Case("garbage robots.txt keeps its valid rule", "robots-garbage", "/secret/x", "ROBOTS_DISALLOWED"),
    Case("garbage robots.txt: a rule without its colon still counts", "robots-garbage", "/open", "ROBOTS_DISALLOWED"),
    Case("garbage robots.txt allows the rest", "robots-garbage", "/elsewhere", "OK"),
    Case("robots.txt redirect loop: unavailable, all allowed", "robots-loop", "/page", "OK"),
    Case("robots.txt past 500 KiB is cut", "robots-huge", "/late/x", "OK"),
    # malformed HTML and long attributes
    Case("100,000 nested elements", "malformed-html", "/deep", "OK", "",
         (_document("fallback:no_main_content:no_text"),)),
    Case("comment and script never closed", "malformed-html", "/unclosed", "OK", "",
         (_links(lambda links, _: any(link.url.endswith("/before") for link in links)),)),
    Case("NUL and control bytes in tags", "malformed-html", "/nul", "OK", "",
         (_document(""), _links(lambda links, _: {"/x", "/nul"} <= {link.url[link.url.rfind("/"):]
                                                                     for link in links}))),
    Case("tag soup", "malformed-html", "/soup", "OK", "",
         (_links(lambda links, _: {"/soup-1", "/soup-2", "/soup-3"} <= {link.url[link.url.rfind("/"):]
                                                                        for link in links}),)),
    Case("1 MiB title attribute", "long-attributes", "/attribute", "OK", "",
         (_links(lambda links, _: any(link.url.endswith("/short") and len(link.anchor) < 4096 for link in links)),)),
    Case("1 MiB href is a bad link", "long-attributes", "/href", "OK", "",
         (_links(lambda links, _: any(link.bad_reason == "too_long" for link in links)
                 and any(link.url.endswith("/ordinary") for link in links)
                 and all(len(link.url) <= 4096 for link in links)),)),
    # traps
    Case("calendar trap", "traps", "/", "OK", "", (_trap("calendar", "/calendar/2199/01/"),)),
    Case("session id trap", "traps", "/", "OK", "", (_trap("session_id", "sessid="),)),
    Case("repeated segments trap", "traps", "/", "OK", "", (_trap("repeated_segments", "/a/b/a/b/"),)),
    Case("path depth trap", "traps", "/", "OK", "", (_trap("path_depth", "/s19/"),)),
    Case("URL length trap", "traps", "/", "OK", "", (_trap("url_length", "/search?q=www"),)),
    # IDN homographs
    Case("homograph of the site's domain is another site", "idn", "/", "OK", "",
         (_links(lambda links, _: any(link.url.startswith("http://idn.xn--hstile-wqf.test/")
                                      and link.link_class == pb.LINK_CLASS_EXTERNAL for link in links)),)),
    Case("homograph of another domain is kept in punycode", "idn", "/", "OK", "",
         (_links(lambda links, _: any(link.url == "http://xn--pypal-4ve.example/login" for link in links)),)),
    Case("a name IDNA forbids is a bad link", "idn", "/", "OK", "",
         (_links(lambda links, _: any(link.bad_reason == "bad_idn" for link in links)),)),
    # floods
    Case("one link 50,000 times is one link, and too many elements for trafilatura", "flood", "/same-link", "OK", "",
         (_links(lambda links, _: [link.url[-8:] for link in links] == ["/the-one"]),
          _document("fallback:too_many_elements"))),
    Case("20,000 distinct links are capped", "flood", "/many-links", "OK", "",
         (_links(lambda links, page: len(links) == 5000 and page.links_truncated),)),
    Case("the same page at many addresses has one fingerprint", "flood", "/copy/1", "OK", "", (_document(),)),
    Case("2 MiB pages of 100,000 links, several in a batch", "flood", "/dense/1", "OK", "",
         (_links(lambda links, page: len(links) == 5000 and page.links_truncated),
          _document("fallback:too_many_elements"))),
    # fetch results handed straight to the extractor
    Case("zlib bomb as a fetch result", "direct", "/bomb", None, "", (_document("not_html:binary_body"),)),
    Case("corrupt zlib body", "direct", "/corrupt", None, "", (_dead_letter("corrupt zlib body"),)),
    Case("unknown body codec", "direct", "/codec", None, "", (_dead_letter("unknown body codec"),)),
]
COPIES = [f"/copy/{i}" for i in range(1, 6)]
DENSE = [f"/dense/{i}" for i in range(2, 5)]  # with /dense/1 of the table: more than one per batch


def _direct_results() -> list[pb.FetchResult]:
    bomb = zlib.compressobj(9)
    bomb_body = b"".join(bomb.compress(bytes(MiB)) for _ in range(256)) + bomb.flush()

    def result(path: str, body: bytes, codec: str) -> pb.FetchResult:
        return pb.FetchResult(request_id=path, url=f"http://{DIRECT_HOST}{path}", host=DIRECT_HOST,
                              status=pb.FETCH_STATUS_OK, http_status=200, body=body, body_codec=codec,
                              body_size=256 * MiB, content_type="text/html", fetched_at_ms=1_750_000_000_000)

    return [result("/bomb", bomb_body, "zlib"), result("/corrupt", b"\x78\x9c not zlib at all", "zlib"),
            result("/codec", b"<p>x</p>", "brotli-of-the-future")]


class Suite:
    """The rig after every case ran: what was recorded for each URL, and the services' peak memory."""

    def __init__(self, rig: HostileRig) -> None:
        self.rig = rig
        self.peaks: dict[str, int] = {}

    def url(self, case: Case) -> str:
        return f"http://{DIRECT_HOST}{case.path}" if case.status is None else self.rig.url(case.part, case.path)

    def seen(self, url: str) -> Seen:
        outputs = self.rig.outputs
        assert outputs is not None
        try:
            key = normalize_url(url)
        except InvalidUrl:
            key = url
        results = [r for r in outputs.values(FETCH_RESULTS) if r.url == url]
        letters = [d for d in outputs.values(DEAD_LETTERS) if _letter_url(d) == url]
        return Seen(
            outcome=self.rig.outcomes().get(url),
            result=results[-1] if results else None,
            document=next((d for d in outputs.values(DOCUMENTS) if d.url == key), None),
            links=next((p for p in outputs.values(PAGE_LINKS) if p.url == key), None),
            dead_letter=letters[-1] if letters else None,
        )


def _letter_url(letter: pb.DeadLetter) -> str:
    result = pb.FetchResult()
    try:
        result.ParseFromString(letter.value)
    except Exception:  # a dead letter of another topic
        return ""
    return result.url


def _extracted(outputs: Any, count: int) -> bool:
    """Every page's links and document are out, or the page was dead-lettered (the extractor sends a batch's
    links before its documents)."""
    done = min(len(outputs.values(PAGE_LINKS)), len(outputs.values(DOCUMENTS)))
    return done + len(outputs.values(DEAD_LETTERS)) >= count


@pytest.fixture(scope="module")
def suite(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Suite]:
    rig = HostileRig(kafka_bootstrap, tmp_path_factory.mktemp("hostile"))
    rig.start()
    running = Suite(rig)
    try:
        fetched = list(dict.fromkeys([running.url(c) for c in CASES if c.status is not None]
                                     + [rig.url("flood", p) for p in COPIES + DENSE]))
        rig.request(fetched)
        rig.send_results(_direct_results())
        rig.wait(lambda: len(rig.outcomes()) == len(fetched), 150,
                 lambda: f"fetch outcomes of {sorted(set(fetched) - set(rig.outcomes()))}")
        outputs = rig.outputs
        assert outputs is not None
        html = [r for r in outputs.values(FETCH_RESULTS)
                if r.content_type in ("text/html", "") and r.status in (pb.FETCH_STATUS_OK, pb.FETCH_STATUS_TOO_LARGE)]

        def missing() -> str:
            done = {p.url for p in outputs.values(PAGE_LINKS)}
            return f"extractor outputs of {sorted(r.url[:80] for r in html if normalize_url(r.url) not in done)}"

        rig.wait(lambda: _extracted(outputs, len(html)), 120, missing)
        running.peaks = rig.peak_rss()
        for name, peak in running.peaks.items():
            log.warning("peak RSS of the %s: %.1f MiB", name, peak / MiB)
        yield running
    finally:
        rig.stop()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_each_case_has_its_recorded_outcome(suite: Suite, case: Case) -> None:
    seen = suite.seen(suite.url(case))
    if case.status is not None:
        assert seen.outcome is not None
        assert pb.FetchStatus.Name(seen.outcome.status) == f"FETCH_STATUS_{case.status}", seen.outcome
        assert seen.outcome.error.startswith(case.error), seen.outcome.error
        assert case.http_status in (0, seen.outcome.http_status)
    for check in case.then:
        check(seen)


def test_copies_share_one_content_fingerprint(suite: Suite) -> None:
    prints = {suite.seen(suite.rig.url("flood", path)).document.content_fingerprint  # type: ignore[union-attr]
              for path in COPIES}
    assert len(prints) == 1 and "" not in prints


def test_no_request_left_the_hostile_hosts(suite: Suite) -> None:
    hosts = {record.host for record in suite.rig.request_log()}
    assert hosts and all(host.endswith(".hostile.test") for host in hosts)
    assert "files.hostile.test" not in hosts  # the ftp: redirect target was never asked for
    secret = [r for r in suite.rig.request_log() if r.path.startswith("/secret/")]
    assert secret == []


def test_both_services_stay_alive_within_their_memory_limits(suite: Suite) -> None:
    assert set(suite.peaks) == {"fetcher", "extractor"}
    assert all(process.alive() for process in suite.rig.processes.values())
    assert suite.peaks["fetcher"] < FETCHER_RSS_LIMIT
    assert suite.peaks["extractor"] < EXTRACTOR_RSS_LIMIT


def test_the_case_table_has_at_least_thirty_behaviours() -> None:
    assert len({c.name for c in CASES}) == len(CASES) >= 30


def test_both_services_drain_and_exit_cleanly_afterwards(suite: Suite) -> None:
    """Runs last: stops the services."""
    assert suite.rig.stop_services() == {"fetcher": 0, "extractor": 0}
