"""The near-duplicate index in PostgreSQL (``dedup.near_documents``, ``dedup.near_bands``).

One transaction per batch: read the stored rows of the batch's URLs, look up the candidates
of every band key (at most :data:`CANDIDATES_PER_BAND` per key, so a band shared by
thousands of boilerplate pages costs no more than any other; joined to the documents by a key
probe each, ``libs.common.db.key_probes``, not a scan of the index), place each document
(:mod:`services.dedup.near_clusters`), then store the new sketches and band keys (COPY, after
dropping those of a URL's replaced sketch). Idempotent: a URL whose stored sketch has the same
content fingerprint gets its stored answer back and nothing is written. A URL's newer content replaces its
sketch and band keys; an older one is judged but not stored.

Documents of one cluster are on different partitions of trawl.documents, so two replicas
may judge two copies at the same moment; each then misses the other and both are recorded
as unique (later copies still find both). The window is one batch transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from psycopg import AsyncConnection

from libs.common.db.key_probes import by_key_probes
from libs.common.db.pool import Database
from services.dedup.judge import DuplicateJudge
from services.dedup.near_clusters import IndexedDoc, NearClaim, Placement, place
from services.dedup.sketch import COEFFICIENT_SEED, SketchShape, signature_bytes, signature_from_bytes

CANDIDATES_PER_BAND = 20

_SHAPE = "SELECT shingle_width, permutations, bands, rows_per_band, coefficient_seed FROM dedup.index_shape"
_SAVE_SHAPE = """
INSERT INTO dedup.index_shape (shingle_width, permutations, bands, rows_per_band, coefficient_seed)
VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING
"""
_STORED = """
SELECT url_fp, content_fp, representative, similarity, fetched_at_ms, signature, seq
FROM dedup.near_documents WHERE url_fp = ANY(%b::bigint[])
"""
_CANDIDATES = f"""
SELECT k.key, d.url_fp, d.url, d.signature, d.representative, d.representative_seq
FROM unnest(%b::bigint[]) AS k(key)
CROSS JOIN LATERAL (SELECT b.url_fp FROM dedup.near_bands AS b WHERE b.band_key = k.key
                    LIMIT {CANDIDATES_PER_BAND}) AS c
JOIN dedup.near_documents AS d ON d.url_fp = c.url_fp
"""
_SEQS = "SELECT nextval('dedup.near_seq') FROM generate_series(1, %s)"
_DROP_BANDS = """
DELETE FROM dedup.near_bands AS b USING unnest(%b::bigint[], %b::bigint[]) AS k(band_key, url_fp)
WHERE b.band_key = k.band_key AND b.url_fp = k.url_fp
"""
# Arrays are sent in binary (%b: no per-element text formatting), except the similarities: as text, PostgreSQL
# rounds their decimal form straight to real, as it always has.
_UPSERT_DOCS = """
INSERT INTO dedup.near_documents AS d (url_fp, url, content_fp, seq, signature, simhash, representative,
                                       representative_seq, similarity, fetched_at_ms)
SELECT * FROM unnest(%b::bigint[], %b::text[], %b::text[], %b::bigint[], %b::bytea[], %b::bigint[], %b::text[],
                     %b::bigint[], %s::real[], %b::bigint[])
ON CONFLICT (url_fp) DO UPDATE SET url = excluded.url, content_fp = excluded.content_fp, seq = excluded.seq,
    signature = excluded.signature, simhash = excluded.simhash, representative = excluded.representative,
    representative_seq = excluded.representative_seq, similarity = excluded.similarity,
    fetched_at_ms = excluded.fetched_at_ms, indexed_at = now()
"""
# COPY's binary format (PostgreSQL docs, "COPY", Binary Format): a header, then per row the field count and each
# field's byte length and big-endian value, then -1 as the field count. All band rows are laid out in one array.
_COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + bytes(8)  # signature, flags, header extension length
_COPY_TRAILER = b"\xff\xff"
_BAND_ROW = np.dtype([("fields", ">i2"), ("key_size", ">i4"), ("band_key", ">i8"), ("fp_size", ">i4"),
                      ("url_fp", ">i8")])


class IndexShapeMismatch(RuntimeError):
    """The stored index was built with another sketch shape than the settings ask for."""


@dataclass(frozen=True, slots=True)
class NearAnswer:
    """A document's near-duplicate verdict: its representative (None when it is unique) and resemblance."""

    duplicate_of: str | None
    similarity: float


def _signed64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def band_rows_copy(claims: Sequence[NearClaim]) -> bytes:
    """The (band key, url fingerprint) rows of the claims, as one binary COPY stream."""
    rows = np.empty(sum(len(claim.sketch.band_keys) for claim in claims), dtype=_BAND_ROW)
    rows["fields"], rows["key_size"], rows["fp_size"] = 2, 8, 8
    rows["band_key"] = [key for claim in claims for key in claim.sketch.band_keys]
    rows["url_fp"] = [claim.url_fp for claim in claims for _key in claim.sketch.band_keys]
    return _COPY_HEADER + rows.tobytes() + _COPY_TRAILER


class NearDuplicateIndex:
    """Judges batches of :class:`NearClaim` against, and into, the stored index."""

    def __init__(self, db: Database, judge: DuplicateJudge) -> None:
        self._db = db
        self._judge = judge

    async def check_shape(self) -> None:
        """Records the sketch shape on first use; refuses to go on with an index of another shape."""
        shape = self._judge.shape
        wanted = (shape.shingle_width, shape.permutations, shape.bands, shape.rows, COEFFICIENT_SEED)
        async with self._db.transaction() as conn:
            await conn.execute(_SAVE_SHAPE, wanted)
            cur = await conn.execute(_SHAPE)
            stored = await cur.fetchone()
        if stored is not None and tuple(stored) != wanted:
            width, perms, bands, rows, seed = stored
            raise IndexShapeMismatch(
                f"the near-duplicate index was built with shingle width {width}, {perms} permutations, {bands} bands"
                f" of {rows} rows (seed {seed}); the settings ask for {SketchShape(*wanted[:4])}. Keep the index's"
                " settings, or drop dedup.near_documents and dedup.near_bands to rebuild it."
            )

    async def judge(self, claims: Sequence[NearClaim]) -> dict[str, NearAnswer]:
        """Answers every claim (keyed by URL; a URL must appear once) and records the new ones."""
        answers: dict[str, NearAnswer] = {}
        if not claims:
            return answers
        async with self._db.transaction() as conn:
            cur = await conn.execute(_STORED, ([c.url_fp for c in claims],))
            stored = {row[0]: row for row in await cur.fetchall()}
            fresh: list[NearClaim] = []
            for claim in claims:
                row = stored.get(claim.url_fp)
                if row is not None and row[1] == claim.content_fp:
                    representative, similarity = row[2], row[3]
                    answers[claim.url] = NearAnswer(None if representative == claim.url else representative,
                                                    float(similarity))
                elif not claim.sketch.empty:
                    fresh.append(claim)
                else:
                    answers[claim.url] = NearAnswer(None, 0.0)
            if not fresh:
                return answers
            placements = await self._place(conn, fresh)
            newer = [(c, p) for c, p in zip(fresh, placements, strict=True)
                     if c.url_fp not in stored or stored[c.url_fp][4] <= c.fetched_at_ms]
            await self._store(conn, newer, stored)
        for claim, placement in zip(fresh, placements, strict=True):
            answers[claim.url] = NearAnswer(placement.duplicate_of(claim.url), placement.similarity)
        return answers

    async def _place(self, conn: AsyncConnection[Any], claims: list[NearClaim]) -> list[Placement]:
        keys = sorted({key for claim in claims for key in claim.sketch.band_keys})
        candidates: dict[int, list[IndexedDoc]] = {}
        for key, url_fp, url, signature, representative, representative_seq in await by_key_probes(
                conn, _CANDIDATES, (keys,)):
            candidates.setdefault(key, []).append(
                IndexedDoc(url_fp, url, signature_from_bytes(signature), representative, representative_seq))
        cur = await conn.execute(_SEQS, (len(claims),))
        seqs = sorted(seq for (seq,) in await cur.fetchall())
        return place(claims, seqs, candidates, self._judge)

    async def _store(
        self, conn: AsyncConnection[Any], placed: list[tuple[NearClaim, Placement]], stored: dict[int, Any]
    ) -> None:
        if not placed:
            return
        replaced = [stored[c.url_fp] for c, _ in placed if c.url_fp in stored]
        if replaced:
            old = [(key, row[0]) for row in replaced
                   for key in self._judge.sketcher.band_keys(signature_from_bytes(row[5]))]
            await conn.execute(_DROP_BANDS, ([k for k, _ in old], [fp for _, fp in old]))
        placed.sort(key=lambda cp: cp[0].url_fp)
        await conn.execute(_UPSERT_DOCS, (
            [c.url_fp for c, _ in placed], [c.url for c, _ in placed], [c.content_fp for c, _ in placed],
            [p.seq for _, p in placed], [signature_bytes(c.sketch.signature) for c, _ in placed],
            [_signed64(c.sketch.simhash) for c, _ in placed], [p.representative for _, p in placed],
            [p.representative_seq for _, p in placed], [p.similarity for _, p in placed],
            [c.fetched_at_ms for c, _ in placed],
        ))
        # Straight in: a URL's stored band rows were just dropped, so none of its new ones can be there.
        # Only a second replica storing the same URL at the same moment can make the COPY fail on the
        # key; the batch is then retried and finds that URL's stored sketch.
        async with conn.cursor() as cursor, cursor.copy(
            "COPY dedup.near_bands (band_key, url_fp) FROM STDIN (FORMAT BINARY)"
        ) as copy:
            await copy.write(band_rows_copy([claim for claim, _ in placed]))
