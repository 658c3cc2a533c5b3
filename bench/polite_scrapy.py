"""The politeness benchmark's Scrapy crawl: ``bench.scrapy_spider``'s spider and settings, plus per-host delays.

Stock Scrapy does not read ``Crawl-delay`` from robots.txt; a user who wants it kept sets the
host's delay in ``DOWNLOAD_SLOTS``, which is what ``slots`` carries (empty: Scrapy as it is).
A module of its own, so that the crawl's process imports Scrapy and the spider, nothing more.

    http_proxy=http://127.0.0.1:PORT python -m bench.polite_scrapy JOB.json

with ``JOB.json`` holding ``{"hosts": [...], "delay": 0.5, "concurrency": 100, "slots": {host: {"delay": 2.0}}}``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from bench.scrapy_spider import make_spider_class, scrapy_settings


def scrapy_crawl(hosts: list[str], delay: float, concurrency: int, slots: dict[str, dict[str, float]]) -> None:
    """Crawls ``hosts`` from their home pages to the end, in this process."""
    from scrapy.crawler import CrawlerProcess

    process = CrawlerProcess({**scrapy_settings(delay, concurrency), "DOWNLOAD_SLOTS": slots})
    process.crawl(process.create_crawler(make_spider_class()), hosts=hosts)
    process.start()


def main() -> None:
    job = json.loads(Path(sys.argv[1]).read_text())
    scrapy_crawl(job["hosts"], job["delay"], job["concurrency"], job["slots"])


if __name__ == "__main__":
    main()
