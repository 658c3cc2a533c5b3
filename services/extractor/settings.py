"""Settings of the extractor service."""

from __future__ import annotations

from dataclasses import dataclass

from libs.common.settings import setting


@dataclass(frozen=True)
class ExtractorSettings:
    group_id: str = setting("TRAWL_EXTRACTOR_GROUP", "trawl-extractor", "Consumer group of the extractors.")
    robots_token: str = setting(
        "TRAWL_EXTRACTOR_ROBOTS_TOKEN", "trawl", "User-agent token for agent-specific X-Robots-Tag values."
    )
    max_html_bytes: int = setting(
        "TRAWL_EXTRACTOR_MAX_HTML_BYTES", 5 * 1024 * 1024, "Largest decoded body parsed (bigger ones are cut)."
    )
    max_links: int = setting("TRAWL_EXTRACTOR_MAX_LINKS", 5000, "Most links kept per page.")
    batch_size: int = setting("TRAWL_EXTRACTOR_BATCH_SIZE", 100, "Fetch results extracted per consumed batch.")
