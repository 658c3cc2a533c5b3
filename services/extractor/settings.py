"""Settings of the extractor service (the URL policy is :class:`libs.common.urls.UrlSettings`)."""

from __future__ import annotations

from dataclasses import dataclass

from libs.common.settings import setting
from services.extractor.content import MAX_ELEMENTS
from services.extractor.links import CONTEXT_CHARS
from services.extractor.traps import TRAP_RULES, TrapRules

_TRAPS = TrapRules()


@dataclass(frozen=True)
class ExtractorSettings:
    group_id: str = setting("TRAWL_EXTRACTOR_GROUP", "trawl-extractor", "Consumer group of the extractors.")
    robots_token: str = setting(
        "TRAWL_EXTRACTOR_ROBOTS_TOKEN",
        "trawl",
        "User-agent token for agent-specific X-Robots-Tag values and <meta name=TOKEN> robots tags.",
    )
    max_html_bytes: int = setting(
        "TRAWL_EXTRACTOR_MAX_HTML_BYTES", 5 * 1024 * 1024, "Largest decoded body parsed (bigger ones are cut)."
    )
    max_links: int = setting("TRAWL_EXTRACTOR_MAX_LINKS", 5000, "Most links kept per page.")
    batch_size: int = setting("TRAWL_EXTRACTOR_BATCH_SIZE", 100, "Fetch results extracted per consumed batch.")
    processes: int = setting(
        "TRAWL_EXTRACTOR_PROCESSES",
        1,
        "Worker processes a batch's pages are extracted in, one core each (1: in the service's own process)."
        " More use more of one machine's cores; each worker holds its own parser memory. To scale past one"
        " machine, run more extractor replicas (up to the fetch results' partitions).",
    )
    phase_bytes: int = setting(
        "TRAWL_EXTRACTOR_PHASE_BYTES",
        8 * 1024 * 1024,
        "Most HTML (bytes) parsed ahead of link and text extraction within a batch: bounds the trees held in memory.",
    )
    trim_above_bytes: int = setting(
        "TRAWL_EXTRACTOR_TRIM_ABOVE_BYTES",
        192 * 1024 * 1024,
        "Resident size above which the memory a phase's trees freed is given back to the system after the phase"
        " (0: after every phase). Ordinary pages stay below it; big or dense ones would otherwise leave it held.",
    )
    link_context_chars: int = setting(
        "TRAWL_EXTRACTOR_LINK_CONTEXT_CHARS",
        CONTEXT_CHARS,
        "Characters of text kept on each side of a link's anchor as its context (0: no context).",
    )
    fast_content: bool = setting(
        "TRAWL_EXTRACTOR_FAST_CONTENT",
        True,
        "Skip trafilatura's second-opinion extractors (readability, jusText): faster, slightly less recall.",
    )
    max_content_elements: int = setting(
        "TRAWL_EXTRACTOR_MAX_CONTENT_ELEMENTS",
        MAX_ELEMENTS,
        "Pages with more elements skip trafilatura: their text is the visible body text "
        "(fallback:too_many_elements). Bounds what a page dense in elements costs (5 MB of links: 550 MiB).",
    )
    trap_rules: tuple[str, ...] = setting(
        "TRAWL_EXTRACTOR_TRAP_RULES",
        TRAP_RULES,
        "Spider-trap rules applied to every link, comma-separated (empty: none); see services/extractor/traps.py.",
    )
    trap_max_url_length: int = setting(
        "TRAWL_EXTRACTOR_TRAP_MAX_URL_LENGTH", _TRAPS.max_url_length, "Longer normalised URLs are traps (url_length)."
    )
    trap_max_path_depth: int = setting(
        "TRAWL_EXTRACTOR_TRAP_MAX_PATH_DEPTH", _TRAPS.max_path_depth, "More path segments make a trap (path_depth)."
    )
    trap_max_segment_repeats: int = setting(
        "TRAWL_EXTRACTOR_TRAP_MAX_SEGMENT_REPEATS",
        _TRAPS.max_segment_repeats,
        "Times one path segment may occur in a URL before it is a trap (repeated_segments).",
    )
    trap_calendar_future_years: int = setting(
        "TRAWL_EXTRACTOR_TRAP_CALENDAR_FUTURE_YEARS",
        _TRAPS.calendar_future_years,
        "A year-and-month in a URL more than this many years after the fetch is a calendar trap.",
    )
    trap_calendar_past_years: int = setting(
        "TRAWL_EXTRACTOR_TRAP_CALENDAR_PAST_YEARS",
        _TRAPS.calendar_past_years,
        "A year-and-month in a URL more than this many years before the fetch is a calendar trap.",
    )
    trap_max_link_depth: int = setting(
        "TRAWL_EXTRACTOR_TRAP_MAX_LINK_DEPTH",
        _TRAPS.max_link_depth,
        "Links more than this many hops from a seed are traps (link_depth; BeeBot's max level); 0: no limit.",
    )

    def trap_limits(self) -> TrapRules:
        return TrapRules(
            max_url_length=self.trap_max_url_length,
            max_path_depth=self.trap_max_path_depth,
            max_segment_repeats=self.trap_max_segment_repeats,
            calendar_future_years=self.trap_calendar_future_years,
            calendar_past_years=self.trap_calendar_past_years,
            max_link_depth=self.trap_max_link_depth,
            enabled=self.trap_rules,
        )
