"""The end-to-end benchmark's baseline: a Scrapy spider doing a crawl's work on the simulated web.

For every HTML page it fetches, the spider does what Trawl's pipeline does to it, in one
process: the main text, metadata and publish date from trafilatura with exactly the
extractor's call (``bare_extraction(html, url=..., fast=True, with_metadata=True,
include_comments=False, date_extraction_params=date_params(fetch time))``), the exact-
duplicate check on the same content fingerprint (a set of fingerprints), and link
following (Scrapy's ``LinkExtractor``; ``rel=nofollow`` links and pages with a robots
``nofollow`` meta tag are not followed, as Trawl does; Scrapy's own duplicate filter drops
URLs already seen). It follows links only to the hosts it was given, so that two spiders
can split a web's hosts between them.

Politeness, the same as Trawl's in the comparison: robots.txt obeyed (token ``trawl``),
one request at a time per host (``CONCURRENT_REQUESTS_PER_DOMAIN = 1``), ``DOWNLOAD_DELAY``
the fetcher's minimum delay without jitter, AutoThrottle off, ``CONCURRENT_REQUESTS`` the
scheduler's in-flight budget. The scheduler queue is Scrapy's recommendation for broad
crawls (``DownloaderAwarePriorityQueue``) and cookies are off, as Trawl has none: the
baseline is Scrapy set up as its documentation says for this kind of crawl.

    http_proxy=http://127.0.0.1:PORT python -m bench.scrapy_spider --hosts-file H --out R.json
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from trafilatura import bare_extraction

from services.extractor.content import content_fingerprint, date_params

USER_AGENT = "TrawlBot/0.1 (+https://trawl.invalid/bot)"


def scrapy_settings(min_delay: float, concurrency: int) -> dict[str, Any]:
    return {
        "ROBOTSTXT_OBEY": True,
        "ROBOTSTXT_USER_AGENT": "trawl",
        "USER_AGENT": USER_AGENT,
        "DOWNLOAD_DELAY": min_delay,
        "DOWNLOAD_DELAY_JITTER": 0,
        "CONCURRENT_REQUESTS": concurrency,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
        "AUTOTHROTTLE_ENABLED": False,
        "SCHEDULER_PRIORITY_QUEUE": "scrapy.pqueues.DownloaderAwarePriorityQueue",
        "COOKIES_ENABLED": False,
        "TELNETCONSOLE_ENABLED": False,
        "LOG_LEVEL": "WARNING",
    }


def make_spider_class() -> type[Any]:
    """The spider class (built on call, so that importing this module does not import Scrapy)."""
    import scrapy
    from scrapy.http import HtmlResponse
    from scrapy.linkextractors import LinkExtractor

    class SameWorkSpider(scrapy.Spider):
        name = "same-work"

        def __init__(self, hosts: list[str], **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.hosts = frozenset(hosts)
            self.links = LinkExtractor(allow_domains=sorted(self.hosts), tags=("a", "area"), attrs=("href",))
            self.fingerprints: set[str] = set()
            self.pages = self.with_text = self.duplicates = 0

        async def start(self) -> AsyncIterator[Any]:
            for host in sorted(self.hosts):
                yield scrapy.Request(f"http://{host}/")

        def parse(self, response: Any) -> Iterator[Any]:
            if not isinstance(response, HtmlResponse):
                return
            self.pages += 1
            document = bare_extraction(
                response.text,
                url=response.url,
                fast=True,
                with_metadata=True,
                include_comments=False,
                date_extraction_params=date_params(int(time.time() * 1000)),
            )
            text = (getattr(document, "text", None) or "") if document is not None else ""
            if text:
                self.with_text += 1
                fingerprint = content_fingerprint(text)
                if fingerprint in self.fingerprints:
                    self.duplicates += 1
                self.fingerprints.add(fingerprint)
            robots = " ".join(response.xpath("//meta[@name='robots']/@content").getall()).lower()
            if "nofollow" in robots:
                return
            for link in self.links.extract_links(response):
                if not link.nofollow and urlsplit(link.url).hostname in self.hosts:
                    yield response.follow(link.url, callback=self.parse)

    return SameWorkSpider


def crawl(hosts: list[str], min_delay: float, concurrency: int) -> dict[str, Any]:
    """Runs the spider to completion in this process; returns its counts."""
    from scrapy.crawler import CrawlerProcess

    spider_class = make_spider_class()
    process = CrawlerProcess(scrapy_settings(min_delay, concurrency))
    crawler = process.create_crawler(spider_class)
    process.crawl(crawler, hosts=hosts)
    started = time.monotonic()
    process.start()
    spider: Any = crawler.spider  # a SameWorkSpider, built by Scrapy
    return {
        "pages": spider.pages,
        "with_text": spider.with_text,
        "duplicates": spider.duplicates,
        "seconds": round(time.monotonic() - started, 2),
        "stats": {k: v for k, v in crawler.stats.get_stats().items() if isinstance(v, int | float)},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts-file", type=Path, required=True, help="The hosts to crawl, one a line.")
    parser.add_argument("--out", type=Path, required=True, help="Where to write the counts as JSON.")
    parser.add_argument("--min-delay", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=100)
    args = parser.parse_args()
    hosts = [h for h in args.hosts_file.read_text().split() if h]
    args.out.write_text(json.dumps(crawl(hosts, args.min_delay, args.concurrency)))


if __name__ == "__main__":
    main()
