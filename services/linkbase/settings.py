"""Settings of the linkbase service."""

from __future__ import annotations

from dataclasses import dataclass

from libs.common.settings import setting
from services.linkbase.trap_signal import TrapPolicy


@dataclass(frozen=True)
class LinkbaseSettings:
    group_id: str = setting("TRAWL_LINKBASE_GROUP", "trawl-linkbase", "Consumer group of the linkbase service.")
    batch_size: int = setting(
        "TRAWL_LINKBASE_BATCH_SIZE", 500, "Most messages handled per consumed batch (one database transaction)."
    )
    write_chunk: int = setting(
        "TRAWL_LINKBASE_WRITE_CHUNK",
        250,
        "Messages per write transaction: a batch's chunks are written one after the other while the next "
        "ones' rows are built, so normalising and writing overlap (each transaction also costs the database "
        "a fixed amount per statement and partition: 250 pages of 50 links take 14 us of its CPU per link, 100 "
        "take 17).",
    )
    write_groups: int = setting(
        "TRAWL_LINKBASE_WRITE_GROUPS",
        2,
        "Host groups a chunk is split into, each written in its own transaction on its own connection, side by "
        "side (1: one transaction per chunk). Groups write disjoint rows, so they never wait for each other.",
    )
    publish_interval: float = setting(
        "TRAWL_LINKBASE_PUBLISH_INTERVAL_SECONDS",
        2.0,
        "Seconds between outbox runs that publish pending discoveries left over (for example after a crash).",
    )
    publish_chunk: int = setting(
        "TRAWL_LINKBASE_PUBLISH_CHUNK", 5000, "Pending discoveries announced per outbox transaction."
    )
    trap_min_judged: int = setting(
        "TRAWL_LINKBASE_TRAP_MIN_JUDGED", 10, "Pages of a path dedup must have judged before it can be called a trap."
    )
    trap_duplicate_share: float = setting(
        "TRAWL_LINKBASE_TRAP_DUPLICATE_SHARE",
        0.5,
        "Share of duplicates among a path's judged pages above which its URLs are announced with a penalty.",
    )
    trap_penalty: float = setting(
        "TRAWL_LINKBASE_TRAP_PENALTY",
        0.9,
        "Penalty announced for URLs of a trap path: the scheduler multiplies their priority by 1 - penalty.",
    )

    max_urls_per_host: int = setting(
        "TRAWL_LINKBASE_MAX_URLS_PER_HOST",
        100_000,
        "Most URLs a host may gain from links; links to new URLs beyond it are bad links trap:host_budget (0: none).",
    )

    @property
    def traps(self) -> TrapPolicy:
        return TrapPolicy(self.trap_min_judged, self.trap_duplicate_share, self.trap_penalty)
