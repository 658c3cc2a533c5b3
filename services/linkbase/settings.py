"""Settings of the linkbase service."""

from __future__ import annotations

from dataclasses import dataclass

from libs.common.settings import setting


@dataclass(frozen=True)
class LinkbaseSettings:
    group_id: str = setting("TRAWL_LINKBASE_GROUP", "trawl-linkbase", "Consumer group of the linkbase service.")
    batch_size: int = setting(
        "TRAWL_LINKBASE_BATCH_SIZE", 500, "Most messages handled per consumed batch (one database transaction)."
    )
    publish_interval: float = setting(
        "TRAWL_LINKBASE_PUBLISH_INTERVAL_SECONDS",
        2.0,
        "Seconds between outbox runs that publish pending discoveries left over (for example after a crash).",
    )
    publish_chunk: int = setting(
        "TRAWL_LINKBASE_PUBLISH_CHUNK", 5000, "Pending discoveries announced per outbox transaction."
    )
