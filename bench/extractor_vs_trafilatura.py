"""Extractor pages per second on one core, against bare trafilatura on the same pages (the bound).

Contender: the extractor's whole path, ``extract_pages`` with the service's default
settings on batches of ``TRAWL_EXTRACTOR_BATCH_SIZE`` fetch results, as the handler calls
it: inflate the body, decode it (declared or detected charset), parse it once, extract
every link (anchors, context windows, ``<link rel>``, frames), normalise and class them,
apply the spider-trap rules, run trafilatura's ``bare_extraction`` on the same tree,
build the two messages.
Baseline: trafilatura alone, asked for the same thing the extractor asks it for
(``bare_extraction(html, fast=True, with_metadata=True, include_comments=False)`` with the
same htmldate parameters) on the already decoded HTML string: no inflating, decoding,
links, normalisation or messages. The extractor can only beat it by parsing once.
The target is a ratio of at least 0.85.

Workloads: ``simweb`` (default), every page a simulated web serves at its start
(``SimWebConfig(seed=3, hosts=20, pages=400)``); ``corpus``, the hand-made pages of
``tests/corpus`` (news, lists, frames, broken markup, wrong charsets, 6,000 links).
The process is pinned to one CPU (``--cpu``, default the last one); rates are pages per
second of CPU time; repetitions are interleaved (see ``bench/harness.py``). The notes check that the contender's text is
trafilatura's on every page.

    .venv/bin/python -m bench.extractor_vs_trafilatura [--workload simweb|corpus] [--page-by-page]
        [--repeat 7] [--json]
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from trafilatura import bare_extraction

from bench.harness import Comparison, base_parser, interleaved, report
from libs.common.urls import url_host
from libs.common.wire import messages as pb
from services.extractor.charset import decode_html
from services.extractor.content import date_params
from services.extractor.page_extractor import Extracted, ExtractionOptions, extract_pages
from services.extractor.settings import ExtractorSettings
from services.fetcher.publish.result_body import encode_body

FETCHED_AT_MS = 1_772_409_600_000  # 2026-03-02T00:00:00Z


@dataclass(frozen=True)
class Page:
    url: str
    result: pb.FetchResult
    html: str  # as the extractor decodes it: what the baseline is given


def fetch_result(url: str, body: bytes, content_type: str) -> pb.FetchResult:
    """The fetch result the fetcher would publish for a 200 answer with ``body``."""
    encoded, codec = encode_body(body)
    return pb.FetchResult(
        request_id=f"bench-{url}",
        url=url,
        final_url=url,
        host=url_host(url),
        status=pb.FETCH_STATUS_OK,
        http_status=200,
        headers=[pb.Header(name="Content-Type", value=content_type)],
        body=encoded,
        body_codec=codec,
        body_size=len(body),
        fetched_at_ms=FETCHED_AT_MS,
        content_type=content_type,
        depth=1,
    )


def _page(url: str, body: bytes, content_type: str) -> Page:
    return Page(url, fetch_result(url, body, content_type), decode_html(body, content_type)[0])


def simweb_pages() -> list[Page]:
    from libs.simweb import SimWebConfig, build_web

    web = build_web(SimWebConfig(seed=3, hosts=20, pages=400))
    pages = []
    for url in sorted(web.pages_at()):
        html = web.html(url)
        if html is not None:
            pages.append(_page(url, html.encode("utf-8"), "text/html; charset=utf-8"))
    return pages


def corpus_pages() -> list[Page]:
    from tests.corpus.loader import load_corpus

    return [Page(case.url, case.fetch_result(), decode_html(case.body, case.content_type)[0]) for case in load_corpus()]


def run_extractor(pages: list[Page], options: ExtractionOptions, batch_size: int) -> list[Extracted]:
    """The service's path: batches of fetch results, as the consumer hands them to the handler."""
    out: list[Extracted] = []
    for start in range(0, len(pages), batch_size):
        for item in extract_pages([page.result for page in pages[start : start + batch_size]], options):
            if not isinstance(item, Extracted):
                raise item
            out.append(item)
    return out


def run_trafilatura(pages: list[Page]) -> list[Any]:
    params = date_params(FETCHED_AT_MS)
    return [
        bare_extraction(
            page.html,
            url=page.url,
            fast=True,
            with_metadata=True,
            include_comments=False,
            date_extraction_params=params,
        )
        for page in pages
    ]


def _timed(work: Callable[[], object], pages: int) -> Callable[[], Awaitable[float]]:
    """Pages per second of this process's CPU time: on a shared machine, other processes'
    load does not count against either side (single-threaded, so it is one core's time)."""

    async def run() -> float:
        started = time.process_time()
        work()
        return pages / (time.process_time() - started)

    return run


def _text(document: Any) -> str:
    return (getattr(document, "text", None) or "").strip() if document is not None else ""


def _notes(pages: list[Page], extracted: list[Extracted], bare: list[Any]) -> list[str]:
    same_text = sum(e.document.text == _text(b) for e, b in zip(extracted, bare, strict=True))
    same_date = sum(
        bool(e.document.published_at_ms) == bool(getattr(b, "date", None)) for e, b in zip(extracted, bare, strict=True)
    )
    links = [link for e in extracted for link in e.links.links]
    trapped = sum(bool(link.trap_rule) for link in links)
    with_context = sum(bool(link.context) for link in links)
    return [
        f"same main text as bare trafilatura: {same_text}/{len(pages)} pages;"
        f" publish date found by both or neither: {same_date}/{len(pages)}",
        f"links per page: {len(links) / max(1, len(pages)):.1f} (distinct, normalised, classed);"
        f" with context: {with_context}; caught by trap rules: {trapped}",
        f"fallback extractions: {sum(bool(e.document.extraction_error) for e in extracted)}",
    ]


def pin_to_one_cpu(cpu: int | None) -> str:
    if not hasattr(os, "sched_setaffinity"):
        return "not pinned"
    allowed = sorted(os.sched_getaffinity(0))
    chosen = allowed[-1] if cpu is None else cpu
    os.sched_setaffinity(0, {chosen})
    return f"pinned to cpu {chosen}"


async def measure(workload: str, repeat: int, cpu: int | None, page_by_page: bool = False) -> Comparison:
    pinned = pin_to_one_cpu(cpu)
    pages = corpus_pages() if workload == "corpus" else simweb_pages()
    settings = ExtractorSettings()
    options = ExtractionOptions.from_settings(settings)
    if page_by_page:  # every page through all phases before the next: what the phases save
        options = dataclasses.replace(options, phase_bytes=1)
    # Warm-up (imports, trafilatura's and htmldate's first-call set-up), and the output check.
    extracted = run_extractor(pages, options, settings.batch_size)
    bare = run_trafilatura(pages)
    contender, baseline = await interleaved(
        _timed(lambda: run_extractor(pages, options, settings.batch_size), len(pages)),
        _timed(lambda: run_trafilatura(pages), len(pages)),
        repeat,
        ("extractor (charset, one parse, links, normalisation, traps, trafilatura)", "bare trafilatura"),
    )
    html_bytes = sum(len(p.html.encode("utf-8", "replace")) for p in pages)
    return Comparison(
        benchmark=f"extractor_vs_trafilatura ({workload})",
        unit="pages/s",
        contender=contender,
        baseline=baseline,
        workload={
            "pages": len(pages),
            "html_mib": round(html_bytes / 2**20, 2),
            "source": "SimWebConfig(seed=3, hosts=20, pages=400)" if workload == "simweb" else "tests/corpus",
            "cpu": pinned,
            "phases": "page by page" if page_by_page else f"batches of {settings.batch_size}",
        },
        notes=[*_notes(pages, extracted, bare), "target: ratio >= 0.85"],
    )


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.set_defaults(repeat=7)
    parser.add_argument("--workload", choices=("simweb", "corpus"), default="simweb")
    parser.add_argument("--cpu", type=int, default=None, help="CPU to pin to (default: the last allowed one).")
    parser.add_argument(
        "--page-by-page", action="store_true", help="Extract each page through every phase before the next one."
    )
    args = parser.parse_args()
    report(asyncio.run(measure(args.workload, args.repeat, args.cpu, args.page_by_page)), args.json)


if __name__ == "__main__":
    main()
