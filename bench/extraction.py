"""Pages per second the extractor turns into a document and its links, against trafilatura's default call.

Contender: the extractor's whole path for one fetch result, ``extract_page`` (inflate the
body, detect the charset, normalise and class every link, extract text and metadata with
trafilatura's ``bare_extraction`` and an extensive publish-date search, build the two
messages).
Baseline: trafilatura's documented default call,
``trafilatura.extract(html, output_format="json", with_metadata=True)``, plus the links
as lxml lists them, ``lxml.html.fromstring(html).iterlinks()``, on the already decoded
HTML: less work than the contender does (no inflating, decoding, normalising or classing).

Pages come from a simulated web (``SimWebConfig(seed=3, hosts=20, pages=400)``), as the
fetcher would publish them (body compressed with its ``encode_body``). Single process,
single thread: the figure is per core.

    .venv/bin/python -m bench.extraction [--limit N] [--repeat 9] [--json]
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import lxml.html
import trafilatura

from bench.harness import Comparison, base_parser, interleaved, report
from libs.common.urls import url_host
from libs.common.wire import messages as pb
from libs.simweb import SimWebConfig, build_web
from services.extractor.page_extractor import extract_page
from services.extractor.settings import ExtractorSettings
from services.fetcher.publish.result_body import encode_body

FETCHED_AT_MS = 1_772_409_600_000
CONTENT_TYPE = "text/html; charset=utf-8"


@dataclass(frozen=True)
class Workload:
    """The same pages twice: as fetch results for the extractor, as HTML text for the baseline."""

    results: list[pb.FetchResult]
    html: list[str]

    @property
    def html_bytes(self) -> int:
        return sum(len(r.body) for r in self.results)


def fetch_result(url: str, html: str) -> pb.FetchResult:
    """The fetch result the fetcher would publish for a 200 answer with ``html``."""
    raw = html.encode("utf-8")
    body, codec = encode_body(raw)
    return pb.FetchResult(
        request_id=f"bench-{url}",
        url=url,
        final_url=url,
        host=url_host(url),
        status=pb.FETCH_STATUS_OK,
        http_status=200,
        headers=[pb.Header(name="Content-Type", value=CONTENT_TYPE)],
        body=body,
        body_codec=codec,
        body_size=len(raw),
        fetched_at_ms=FETCHED_AT_MS,
        content_type=CONTENT_TYPE,
        depth=1,
    )


def build_workload(seed: int = 3, hosts: int = 20, pages: int = 400, limit: int | None = None) -> Workload:
    """Every page the simulated web serves at its start time (hub pages included), in URL order."""
    web = build_web(SimWebConfig(seed=seed, hosts=hosts, pages=pages))
    urls = sorted(web.pages_at())[:limit]
    results, texts = [], []
    for url in urls:
        html = web.html(url)
        if html is None:
            continue
        results.append(fetch_result(url, html))
        texts.append(html)
    return Workload(results, texts)


def extract_all(workload: Workload, settings: ExtractorSettings) -> tuple[int, int]:
    """The contender over every page; returns (pages that yielded main text, links found)."""
    with_text = links = 0
    for result in workload.results:
        out = extract_page(
            result,
            robots_token=settings.robots_token,
            max_html_bytes=settings.max_html_bytes,
            max_links=settings.max_links,
        )
        with_text += bool(out.document.text)
        links += len(out.links.links)
    return with_text, links


def baseline_all(workload: Workload) -> tuple[int, int]:
    """The baseline over every page; returns (pages that yielded main text, links found)."""
    with_text = links = 0
    for html in workload.html:
        document = trafilatura.extract(html, output_format="json", with_metadata=True)
        links += len(list(lxml.html.fromstring(html).iterlinks()))
        with_text += document is not None
    return with_text, links


Found = dict[str, tuple[int, int]]


def _timed(
    work: Callable[[], tuple[int, int]], pages: int, found: Found, key: str
) -> Callable[[], Awaitable[float]]:
    async def run() -> float:
        started = time.perf_counter()
        found[key] = work()
        return pages / (time.perf_counter() - started)

    return run


async def measure(limit: int | None, repeat: int) -> Comparison:
    workload = build_workload(limit=limit)
    settings = ExtractorSettings()
    pages = len(workload.results)
    found: Found = {}
    contender_run = _timed(lambda: extract_all(workload, settings), pages, found, "contender")
    baseline_run = _timed(lambda: baseline_all(workload), pages, found, "baseline")
    # Warm-up: imports done lazily, trafilatura's and htmldate's first-call set-up.
    warm = Workload(workload.results[:10], workload.html[:10])
    extract_all(warm, settings)
    baseline_all(warm)
    contender, baseline = await interleaved(
        contender_run, baseline_run, repeat, ("extract_page (full path)", "trafilatura.extract json + lxml links")
    )
    return Comparison(
        benchmark="extraction",
        unit="pages/s",
        contender=contender,
        baseline=baseline,
        workload={
            "web": "SimWebConfig(seed=3, hosts=20, pages=400)",
            "pages": pages,
            "html_mib": round(sum(len(h.encode()) for h in workload.html) / 2**20, 2),
            "compressed_mib": round(workload.html_bytes / 2**20, 2),
        },
        notes=[
            f"pages with main text: contender {found['contender'][0]}/{pages}, baseline {found['baseline'][0]}/{pages}",
            f"links returned: contender {found['contender'][1]} (distinct, normalised, classed),"
            f" baseline {found['baseline'][1]} (every href/src lxml lists, raw)",
        ],
    )


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.set_defaults(repeat=9)
    parser.add_argument("--limit", type=int, default=None, help="Only the first N pages (default: all).")
    args = parser.parse_args()
    report(asyncio.run(measure(args.limit, args.repeat)), args.json)


if __name__ == "__main__":
    main()
