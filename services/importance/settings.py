"""Settings of the importance service."""

from __future__ import annotations

from dataclasses import dataclass

from libs.common.settings import setting


@dataclass(frozen=True)
class ImportanceSettings:
    group_id: str = setting("TRAWL_IMPORTANCE_GROUP", "trawl-importance", "Consumer group of the importance service.")
    total_cash: float = setting(
        "TRAWL_IMPORTANCE_TOTAL_CASH", 100.0, "Cash in the whole system (OPIC's 100 credits), conserved."
    )
    follow_external: bool = setting(
        "TRAWL_IMPORTANCE_FOLLOW_EXTERNAL", True, "Whether cash flows over links to other sites."
    )
