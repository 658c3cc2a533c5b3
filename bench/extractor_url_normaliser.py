"""URLs per second through Trawl's normaliser, against w3lib's ``canonicalize_url`` (the maintained library).

Contender: ``libs.common.urls.normalize_url(href, base)`` with the default policy.
Baseline: ``w3lib.url.canonicalize_url(urljoin(base, href))``, w3lib's canonical form (it
cannot resolve a reference itself, so the standard library's ``urljoin`` does it first).
Workload: every ``<a href>`` of the corpus (``tests/corpus``) and of a simulated web
(``SimWebConfig(seed=3, hosts=20, pages=400)``), as written in the pages, with the page URL
as the base; references neither side accepts are skipped. Single process, one thread, CPU
time.

The notes count how many rows of the normaliser's rule table (``tests/unit/common/test_urls.py``,
the rows without a base) w3lib gets right: why the project keeps its own normaliser.

    .venv/bin/python -m bench.extractor_url_normaliser [--repeat 7] [--json]
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from urllib.parse import urljoin

import lxml.html
from w3lib.url import canonicalize_url

from bench.harness import Comparison, base_parser, interleaved, report
from libs.common.urls import InvalidUrl, normalize_url
from services.extractor.charset import decode_html

Pair = tuple[str, str]  # (href, base)


def workload() -> list[Pair]:
    from libs.simweb import SimWebConfig, build_web
    from tests.corpus.loader import load_corpus

    pages: list[tuple[str, str]] = [
        (case.url, decode_html(case.body, case.content_type)[0]) for case in load_corpus() if b"\x00" not in case.body
    ]
    web = build_web(SimWebConfig(seed=3, hosts=20, pages=400))
    pages += [(url, html) for url in sorted(web.pages_at()) if (html := web.html(url)) is not None]
    pairs: list[Pair] = []
    for url, html in pages:
        root = lxml.html.document_fromstring(html.encode("utf-8", "replace"))
        pairs += [(href, url) for href in (a.get("href") for a in root.iter("a")) if href is not None]
    return [pair for pair in pairs if _both_accept(pair)]


def _both_accept(pair: Pair) -> bool:
    try:
        normalize_url(pair[0], pair[1])
        canonicalize_url(urljoin(pair[1], pair[0]))
    except (InvalidUrl, ValueError):
        return False
    return True


def ours(pairs: list[Pair]) -> None:
    for href, base in pairs:
        normalize_url(href, base)


def w3lib(pairs: list[Pair]) -> None:
    for href, base in pairs:
        canonicalize_url(urljoin(base, href))


def rule_table_agreement() -> tuple[int, int]:
    """(rows w3lib gets right, rows) of the normaliser's rule table, rows without a base."""
    from tests.unit.common.test_urls import CASES

    rows = [(url, expected) for url, base, expected in CASES if base is None]
    right = 0
    for url, expected in rows:
        try:
            right += canonicalize_url(url) == expected
        except ValueError:
            pass
    return right, len(rows)


def _timed(work: Callable[[], None], count: int) -> Callable[[], Awaitable[float]]:
    async def run() -> float:
        started = time.process_time()
        work()
        return count / (time.process_time() - started)

    return run


async def measure(repeat: int) -> Comparison:
    pairs = workload()
    ours(pairs)  # warm-up: IDNA tables, the public suffix list is not involved
    w3lib(pairs)
    contender, baseline = await interleaved(
        _timed(lambda: ours(pairs), len(pairs)),
        _timed(lambda: w3lib(pairs), len(pairs)),
        repeat,
        ("normalize_url (resolve + normalise)", "urljoin + w3lib canonicalize_url"),
    )
    right, rows = rule_table_agreement()
    return Comparison(
        benchmark="extractor_url_normaliser",
        unit="URLs/s",
        contender=contender,
        baseline=baseline,
        workload={"hrefs": len(pairs), "source": "tests/corpus + SimWebConfig(seed=3, hosts=20, pages=400)"},
        notes=[f"w3lib's canonical form equals the normaliser's rule table on {right} of {rows} rows"],
    )


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.set_defaults(repeat=7)
    args = parser.parse_args()
    report(asyncio.run(measure(args.repeat)), args.json)


if __name__ == "__main__":
    main()
