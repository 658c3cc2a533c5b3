"""Every topic of Trawl, declared once: name, message type, key and partitioning contract.

Keys are plain UTF-8 strings (host names, URL fingerprints) so that operators can read
them in the topic tools. The partition of a message is decided by Kafka's default
partitioner on that key, so "keyed by host" means one partition, hence one consumer in
a group, sees every message of a host.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic

from google.protobuf.message import Message
from typing_extensions import TypeVar

from libs.common.wire import messages as pb

M_co = TypeVar("M_co", bound=Message, covariant=True, default=Message)


@dataclass(frozen=True)
class Topic(Generic[M_co]):
    """A topic and the one message type it carries (``Topic[pb.FetchRequest]``); a bare ``Topic`` is any topic."""

    name: str
    message_type: type[M_co]
    key: str
    why: str
    partitions: int = 12


FETCH_REQUESTS = Topic(
    "trawl.fetch-requests",
    pb.FetchRequest,
    key="host",
    why=(
        "Keyed by host so that one fetcher instance owns a host at a time and alone keeps its "
        "politeness clock (Mercator's back-queue invariant, carried by partition ownership). "
        "A host marked large is split into path groups keyed 'host#group'; the scheduler then "
        "spaces the groups' requests so the host's delay still holds across all of them."
    ),
)
FETCH_RESULTS = Topic(
    "trawl.fetch-results",
    pb.FetchResult,
    key="host",
    why="Keyed by host so that a site's pages reach one extractor in fetch order.",
)
FETCH_OUTCOMES = Topic(
    "trawl.fetch-outcomes",
    pb.FetchOutcome,
    key="host",
    why=(
        "Keyed by host, like fetch requests, so that the scheduler partition that owns a host "
        "releases its in-flight slot and the linkbase records its history in order."
    ),
)
DOCUMENTS = Topic(
    "trawl.documents",
    pb.Document,
    key="content fingerprint",
    why=(
        "Keyed by content fingerprint so that every copy of the same content reaches the same "
        "dedup instance, which alone decides which copy came first."
    ),
)
PAGE_LINKS = Topic(
    "trawl.page-links",
    pb.PageLinks,
    key="URL fingerprint of the page",
    why=(
        "Keyed by the page's URL fingerprint so that the importance state of a page is updated "
        "by one consumer and crawls of a page stay in order."
    ),
)
PAGE_LINK_COUNTS = Topic(
    "trawl.page-link-counts",
    pb.PageLinkCounts,
    key="host",
    why=(
        "Keyed by host, like fetch outcomes, so that the scheduler partition that owns a host "
        "credits its pages' links to a crawl goal's site (the page's external links are its reward)."
    ),
)
DUPLICATE_VERDICTS = Topic(
    "trawl.duplicate-verdicts",
    pb.DuplicateVerdict,
    key="URL fingerprint",
    why="Keyed by URL fingerprint so that verdicts about one page are applied in order.",
)
DISCOVERED_URLS = Topic(
    "trawl.discovered-urls",
    pb.DiscoveredUrl,
    key="host",
    why="Keyed by host so that the scheduler partition that owns a host admits its new URLs.",
)
IMPORTANCE_UPDATES = Topic(
    "trawl.importance-updates",
    pb.ImportanceUpdates,
    key="host",
    why="Keyed by host so that the scheduler partition that owns a host receives its priorities.",
)
CASH_TRANSFERS = Topic(
    "trawl.cash-transfers",
    pb.CashTransfer,
    key="URL fingerprint of the pages the cash is for (all entries of a message share one partition)",
    why=(
        "Keyed like page links, so that the importance partition which owns a page, and alone "
        "holds its cash, receives the shares other partitions send it; the two topics have the "
        "same partition count and one consumer owns the same partition number of both."
    ),
)
SEEDS = Topic(
    "trawl.seeds",
    pb.Seed,
    key="URL fingerprint of the page",
    why=(
        "Keyed like page links, so that the importance partition which will own a seeded page knows "
        "it before its first crawl and its virtual page pays it, as AOPIC starts from its seeds; "
        "same partition count as page links, one consumer owns the same partition number of both."
    ),
)
DEAD_LETTERS = Topic(
    "trawl.dead-letters",
    pb.DeadLetter,
    key="original key",
    why="Keeps the failing message's own key so that operators can find it by URL or host.",
    partitions=1,
)

ALL_TOPICS: tuple[Topic, ...] = (
    FETCH_REQUESTS,
    FETCH_RESULTS,
    FETCH_OUTCOMES,
    DOCUMENTS,
    PAGE_LINKS,
    PAGE_LINK_COUNTS,
    DUPLICATE_VERDICTS,
    DISCOVERED_URLS,
    IMPORTANCE_UPDATES,
    CASH_TRANSFERS,
    SEEDS,
    DEAD_LETTERS,
)

BY_NAME: dict[str, Topic] = {t.name: t for t in ALL_TOPICS}

INPUTS: dict[str, tuple[Topic, ...]] = {
    "scheduler": (DISCOVERED_URLS, IMPORTANCE_UPDATES, FETCH_OUTCOMES, PAGE_LINK_COUNTS),
    "fetcher": (FETCH_REQUESTS,),
    "extractor": (FETCH_RESULTS,),
    "dedup": (DOCUMENTS,),
    "linkbase": (PAGE_LINKS, DOCUMENTS, DUPLICATE_VERDICTS, FETCH_OUTCOMES),
    "importance": (SEEDS, PAGE_LINKS, CASH_TRANSFERS),
}
"""What each service consumes, in the order its consumer hands a poll's records over (the scheduler admits
new URLs before the priorities that may name them, then outcomes, then link counts). A service's consumer
refuses handlers for other topics or in another order; ``trawl status`` reads each group's lag over these."""


def topic_named(name: str, prefix: str = "") -> Topic:
    """The declared topic whose name (after stripping ``prefix``) is ``name``."""
    return BY_NAME[name.removeprefix(prefix)]
