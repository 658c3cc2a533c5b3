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
    concurrency: int = setting(
        "TRAWL_FETCHER_CONCURRENCY",
        64,
        "Requests on the wire at once (over all hosts, robots.txt included). A request waiting for its host's gap"
        " is not on the wire and does not count: see TRAWL_FETCHER_MAX_IN_HAND.",
    )
    max_in_hand: int = setting(
        "TRAWL_FETCHER_MAX_IN_HAND",
        4096,
        "Fetch requests held at once: on the wire and waiting for their host's turn (about 1 KB each). Enough for"
        " every host the scheduler hands out (TRAWL_SCHEDULER_MAX_IN_FLIGHT), so that no host waits behind another"
        " host's gap, robots.txt fetch or slow response; beyond it the fetcher stops consuming until one ends.",
    )
    commit_interval: float = setting(
        "TRAWL_FETCHER_COMMIT_INTERVAL",
        0.1,
        "How often the fetcher commits the requests it finished, once their results are acknowledged: a fetcher"
        " that crashes has them fetched again by the next owner, so this bounds the pages a crash refetches.",
    )
    pause_after: float = setting(
        "TRAWL_FETCHER_PAUSE_AFTER_SECONDS",
        2.0,
        "How long every fetch slot may stay taken before the fetcher pauses its partitions. Until then the requests"
        " fetched ahead wait in the consumer and go out as soon as a slot frees; a pause drops them, and fetching"
        " them again costs up to TRAWL_KAFKA_FETCH_WAIT_MAX_MS. A rebalance waits at most this long for the fetcher.",
    )
    connect_timeout: float = setting("TRAWL_FETCHER_CONNECT_TIMEOUT", 5.0, "Seconds to open a connection.")
    total_timeout: float = setting(
        "TRAWL_FETCHER_TOTAL_TIMEOUT", 30.0, "Seconds for a whole fetch, redirects and body included."
    )
    max_body_bytes: int = setting(
        "TRAWL_FETCHER_MAX_BODY_BYTES", 2 * 1024 * 1024, "Decoded body bytes kept; the rest is cut (truncated)."
    )
    max_redirects: int = setting("TRAWL_FETCHER_MAX_REDIRECTS", 5, "Redirects followed per fetch.")
    max_informational_responses: int = setting(
        "TRAWL_FETCHER_MAX_INFORMATIONAL_RESPONSES",
        16,
        "Informational (1xx) responses accepted before a request's final response; one more ends the fetch as"
        " protocol_error:too_many_informational_responses (each is already bounded in size by the header limits).",
    )
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
        "TRAWL_FETCHER_RESPONSE_TIME_FACTOR",
        5.0,
        "Gap is at least this many times the host's last response time (Heritrix's delay factor): a server that"
        " slows down is asked less often. 5 keeps a host that answers in 50 ms at a 0.25 s delay; Mercator's 10"
        " would make every gap of a 40 ms server 0.4 s.",
    )
    gap_margin: float = setting(
        "TRAWL_FETCHER_GAP_MARGIN",
        0.0,
        "Seconds added to every gap between two requests to a host. A server times a request's end when its"
        " process gets to it, which on a busy machine can be tens of milliseconds after the bytes left: a"
        " margin keeps the gap a server measures at least the gap, when the next request starts the moment"
        " the gap has passed (as a request waiting at the fetcher does, see TRAWL_SCHEDULER_HOST_QUEUE_DEPTH).",
    )
    max_backoff: float = setting("TRAWL_FETCHER_MAX_BACKOFF", 600.0, "Longest backoff after repeated errors (s).")
    park_after_failures: int = setting(
        "TRAWL_FETCHER_PARK_AFTER_FAILURES", 10, "Consecutive failures after which a host is parked."
    )
    robots_ttl: float = setting("TRAWL_FETCHER_ROBOTS_TTL", 86400.0, "Lifetime of a cached robots.txt (s).")
    robots_error_ttl: float = setting(
        "TRAWL_FETCHER_ROBOTS_ERROR_TTL", 600.0, "How long a 5xx/unreachable robots.txt disallows the host (s)."
    )
    robots_timeout_ttl: float = setting(
        "TRAWL_FETCHER_ROBOTS_TIMEOUT_TTL",
        5.0,
        "How long a robots.txt fetch that timed out keeps the host's pages back (s); they are reported as"
        " retryable network errors and tried again, not disallowed.",
    )
    politeness_by_ip: bool = setting(
        "TRAWL_FETCHER_POLITENESS_BY_IP",
        False,
        "Space requests per IP address instead of per host name (many hosts on one server share one gap).",
    )
    handoff_delay: float = setting(
        "TRAWL_FETCHER_HANDOFF_DELAY",
        30.0,
        "Seconds a fetcher holds the host of a request it inherited with a partition (produced before the "
        "assignment; a dead owner may have just fetched it), counted from the assignment.",
    )
    handoff_grace: float = setting(
        "TRAWL_FETCHER_HANDOFF_GRACE",
        5.0,
        "Seconds requests on the wire may take to finish when their partition is revoked, before they are "
        "cut short and handed on to the next owner.",
    )
    min_bytes_per_second: float = setting(
        "TRAWL_FETCHER_MIN_BYTES_PER_SECOND",
        256.0,
        "Slowest average body rate accepted after the grace below; slower bodies end as slow_body (0: off).",
    )
    rate_grace: float = setting(
        "TRAWL_FETCHER_RATE_GRACE", 5.0, "Seconds of a body before the minimum rate is enforced."
    )
    ssrf_allow: tuple[str, ...] = setting(
        "TRAWL_FETCHER_SSRF_ALLOW",
        (),
        "Exceptions to the SSRF guard, comma-separated: networks (127.0.0.0/8, ::1) and host names "
        "(site.test, *.test). Everything else in private, loopback, link-local, multicast or reserved "
        "ranges is refused after name resolution.",
    )
    ssrf_proxy_unresolved: bool = setting(
        "TRAWL_FETCHER_SSRF_PROXY_UNRESOLVED",
        True,
        "With a proxy: let the proxy try names that do not resolve here (the proxy must refuse internal "
        "targets itself); false refuses them unless allow-listed.",
    )
    sitemaps: bool = setting(
        "TRAWL_FETCHER_SITEMAPS",
        True,
        "Fetch the sitemaps robots.txt lists (same host only) and publish their URLs as discoveries.",
    )
    sitemap_max_urls: int = setting(
        "TRAWL_FETCHER_SITEMAP_MAX_URLS", 50_000, "Most URLs taken from one host's sitemaps per robots.txt load."
    )
    sitemap_max_files: int = setting(
        "TRAWL_FETCHER_SITEMAP_MAX_FILES", 20, "Most sitemap files (indexes included) read per host per load."
    )
    sitemap_max_depth: int = setting(
        "TRAWL_FETCHER_SITEMAP_MAX_DEPTH", 2, "Levels of sitemap indexes followed below the sitemaps robots.txt lists."
    )
    sitemap_max_decoded_bytes: int = setting(
        "TRAWL_FETCHER_SITEMAP_MAX_DECODED_BYTES",
        50 * 1024 * 1024,
        "Decoded (inflated) bytes read from one sitemap file; the rest is not read (the sitemaps.org limit).",
    )
    sitemap_max_elements: int = setting(
        "TRAWL_FETCHER_SITEMAP_MAX_ELEMENTS",
        1_000_000,
        "XML elements read from one sitemap file (50,000 URLs with four fields are 250,000). A file cut here or at"
        " its decoded size ends the read of its host's sitemaps: a bomb costs one file's parse, about a second.",
    )
    sitemap_max_urls_per_file: int = setting(
        "TRAWL_FETCHER_SITEMAP_MAX_URLS_PER_FILE", 50_000, "Most page URLs taken from one sitemap file."
    )
    sitemap_max_index_children: int = setting(
        "TRAWL_FETCHER_SITEMAP_MAX_INDEX_CHILDREN", 1_000, "Most sitemaps taken from one sitemap index."
    )
    warc_dir: str = setting(
        "TRAWL_FETCHER_WARC_DIR",
        "",
        "Folder the WARC files go to (a mounted volume in Kubernetes); empty: no archive.",
    )
    warc_max_file_bytes: int = setting(
        "TRAWL_FETCHER_WARC_MAX_FILE_BYTES",
        1024 * 1024 * 1024,
        "A WARC file is closed and the next one begun once it is this large.",
    )
    warc_process: bool = setting(
        "TRAWL_FETCHER_WARC_PROCESS",
        True,
        "Write the WARC files from a process of their own (false: from a thread of the fetcher's process).",
    )
    warc_gzip_level: int = setting(
        "TRAWL_FETCHER_WARC_GZIP_LEVEL",
        1,
        "gzip level of each WARC record (1-9): 1 takes a third of the CPU of warcio's 9 for a file 7% larger.",
    )
    body_codec: str = setting(
        "TRAWL_FETCHER_BODY_CODEC",
        "identity",
        "How fetch results carry bodies: identity (compressed with the batch by the producer,"
        " TRAWL_KAFKA_COMPRESSION) or zlib (level 1 in the fetcher, for a producer that does not compress).",
    )
    publish_batch: int = setting(
        "TRAWL_FETCHER_PUBLISH_BATCH",
        128,
        "Finished fetches whose results and outcomes are built and sent in one run (1: each as it ends); runs"
        " are always sent before the producer flushes, so before any request is committed.",
    )
    publish_delay: float = setting(
        "TRAWL_FETCHER_PUBLISH_DELAY",
        0.02,
        "Longest a finished fetch waits for its run to fill before it is published anyway (seconds).",
    )
    publish_run_bytes: int = setting(
        "TRAWL_FETCHER_PUBLISH_RUN_BYTES",
        4 * 1024 * 1024,
        "A run of finished fetches is published once its bodies reach this many bytes, however few they are"
        " (what waits in a run is at most this plus one body).",
    )
    producer_linger_ms: int = setting(
        "TRAWL_FETCHER_PRODUCER_LINGER_MS",
        100,
        "How long the fetcher's producer waits to fill a batch (at least TRAWL_KAFKA_LINGER_MS): results and"
        " outcomes are not latency-critical, and fuller batches cost the fetcher and the broker less CPU per message.",
    )
    event_loop: str = setting(
        "TRAWL_FETCHER_EVENT_LOOP",
        "uvloop",
        "The event loop the fetcher runs on: uvloop (libuv's, in C: less CPU per fetch) or asyncio (the standard one).",
    )
    warc_queue_records: int = setting(
        "TRAWL_FETCHER_WARC_QUEUE", 10_000, "Exchanges waiting for the WARC writer; beyond this, fetches wait for it."
    )

    def host_map_entries(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for item in self.host_map.split(","):
            if item.strip():
                host, _, addr = item.partition("=")
                out[host.strip().lower()] = addr.strip()
        return out
