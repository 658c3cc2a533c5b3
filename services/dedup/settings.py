"""Settings of the dedup service."""

from __future__ import annotations

from dataclasses import dataclass

from libs.common.settings import setting


@dataclass(frozen=True)
class DedupSettings:
    group_id: str = setting("TRAWL_DEDUP_GROUP", "trawl-dedup", "Consumer group of the dedup service.")
    batch_size: int = setting(
        "TRAWL_DEDUP_BATCH_SIZE", 500, "Most documents judged per consumed batch (one database transaction)."
    )
