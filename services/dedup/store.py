"""The exact-fingerprint index in PostgreSQL (``dedup.fingerprints``)."""

from __future__ import annotations

from collections.abc import Sequence

from libs.common.db.pool import Database
from services.dedup.index import Claim

_CLAIM = """
INSERT INTO dedup.fingerprints (content_fp, url)
SELECT * FROM unnest(%b::text[], %b::text[])
ON CONFLICT (content_fp) DO NOTHING
"""

_FIRST_URLS = "SELECT content_fp, url FROM dedup.fingerprints WHERE content_fp = ANY(%b::text[])"


class ExactFingerprintIndex:
    """Implements :class:`~services.dedup.index.FingerprintIndex` with one insert and one select per batch."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def claim(self, batch: Sequence[Claim]) -> dict[str, str]:
        if not batch:
            return {}
        first_claims: dict[str, str] = {}
        for claim in batch:  # within a batch, the earliest claim of a fingerprint comes first
            first_claims.setdefault(claim.content_fp, claim.url)
        fps = sorted(first_claims)
        async with self._db.transaction() as conn:
            await conn.execute(_CLAIM, (fps, [first_claims[fp] for fp in fps]))
            cur = await conn.execute(_FIRST_URLS, (fps,))
            first_url = {fp: url for fp, url in await cur.fetchall()}
        return {claim.url: first_url[claim.content_fp] for claim in batch}
