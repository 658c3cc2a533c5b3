"""Settings of the fetcher service."""

from __future__ import annotations

from dataclasses import dataclass

from libs.common.settings import setting


@dataclass(frozen=True)
class FetcherSettings:
    group_id: str = setting("TRAWL_FETCHER_GROUP", "trawl-fetcher", "Consumer group of the fetchers.")
    user_agent: str = setting(
        "TRAWL_FETCHER_USER_AGENT", "TrawlBot/0.1 (+https://trawl.invalid/bot)", "User-Agent header sent."
    )
    robots_token: str = setting("TRAWL_FETCHER_ROBOTS_TOKEN", "trawl", "User-agent token matched in robots.txt.")
    concurrency: int = setting("TRAWL_FETCHER_CONCURRENCY", 64, "Fetches in progress at once (over all hosts).")
    connect_timeout: float = setting("TRAWL_FETCHER_CONNECT_TIMEOUT", 5.0, "Seconds to open a connection.")
    total_timeout: float = setting(
        "TRAWL_FETCHER_TOTAL_TIMEOUT", 30.0, "Seconds for a whole fetch, redirects and body included."
    )
    max_body_bytes: int = setting(
        "TRAWL_FETCHER_MAX_BODY_BYTES", 2 * 1024 * 1024, "Decoded body bytes kept; the rest is cut (truncated)."
    )
    max_redirects: int = setting("TRAWL_FETCHER_MAX_REDIRECTS", 5, "Redirects followed per fetch.")
    proxy: str = setting("TRAWL_FETCHER_PROXY", "", "HTTP proxy URL every request goes through (empty: none).")
    host_map: str = setting(
        "TRAWL_FETCHER_HOST_MAP", "", "Static host-to-address map, like /etc/hosts: 'host=addr,host2=addr2'."
    )
    min_delay: float = setting(
        "TRAWL_FETCHER_MIN_DELAY", 1.0, "Smallest gap in seconds between the end of a response and the next request."
    )
    max_crawl_delay: float = setting(
        "TRAWL_FETCHER_MAX_CRAWL_DELAY", 30.0, "Largest robots.txt Crawl-delay honoured (larger ones are capped)."
    )
    response_time_factor: float = setting(
        "TRAWL_FETCHER_RESPONSE_TIME_FACTOR", 10.0, "Gap is at least this many times the host's last response time."
    )
    max_backoff: float = setting("TRAWL_FETCHER_MAX_BACKOFF", 600.0, "Longest backoff after repeated errors (s).")
    park_after_failures: int = setting(
        "TRAWL_FETCHER_PARK_AFTER_FAILURES", 10, "Consecutive failures after which a host is parked."
    )
    robots_ttl: float = setting("TRAWL_FETCHER_ROBOTS_TTL", 86400.0, "Lifetime of a cached robots.txt (s).")
    robots_error_ttl: float = setting(
        "TRAWL_FETCHER_ROBOTS_ERROR_TTL", 600.0, "How long a 5xx/unreachable robots.txt disallows the host (s)."
    )

    def host_map_entries(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for item in self.host_map.split(","):
            if item.strip():
                host, _, addr = item.partition("=")
                out[host.strip().lower()] = addr.strip()
        return out
