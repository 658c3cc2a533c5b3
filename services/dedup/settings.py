"""Settings of the dedup service."""

from __future__ import annotations

from dataclasses import dataclass

from libs.common.settings import setting
from services.dedup.sketch import SketchShape


@dataclass(frozen=True)
class DedupSettings:
    group_id: str = setting("TRAWL_DEDUP_GROUP", "trawl-dedup", "Consumer group of the dedup service.")
    batch_size: int = setting(
        "TRAWL_DEDUP_BATCH_SIZE", 500, "Most documents judged per consumed batch (one database transaction)."
    )
    threshold: float = setting(
        "TRAWL_DEDUP_THRESHOLD",
        0.5,
        "Resemblance (Jaccard of the shingle sets, estimated by MinHash) at or above which a document is a "
        "near-duplicate of an earlier one.",
    )
    shingle_width: int = setting(
        "TRAWL_DEDUP_SHINGLE_WIDTH",
        11,
        "Words per shingle (w). Changing it makes the stored index incomparable: the service refuses to start "
        "on an index built with another width.",
    )
    bands: int = setting(
        "TRAWL_DEDUP_LSH_BANDS",
        20,
        "LSH bands of the MinHash signature (index keys per document); bands x rows <= 128. Fixed for an index.",
    )
    rows: int = setting("TRAWL_DEDUP_LSH_ROWS", 3, "MinHash values per LSH band. Fixed for an index.")

    @property
    def shape(self) -> SketchShape:
        return SketchShape(shingle_width=self.shingle_width, bands=self.bands, rows=self.rows)
