"""The near-duplicate index on the real PostgreSQL server: clusters, redelivery, new versions, shape."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator

import pytest

from libs.common.db.key_probes import by_key_probes
from libs.common.db.migrations import apply_migrations
from libs.common.db.pool import Database
from libs.common.db.settings import DatabaseSettings
from libs.common.urls import url_fingerprint
from libs.simweb.words import TextSpec, paragraphs
from services.dedup import near_store
from services.dedup.judge import DuplicateJudge
from services.dedup.main import MIGRATIONS
from services.dedup.near_clusters import NearClaim
from services.dedup.near_store import IndexShapeMismatch, NearAnswer, NearDuplicateIndex
from services.dedup.sketch import SketchShape, signature_bytes

pytestmark = pytest.mark.integration

JUDGE = DuplicateJudge(SketchShape(), threshold=0.5)
ARTICLE = "\n".join(paragraphs(TextSpec(seed=21, paragraphs=6)))
COPY = ARTICLE.replace(" the ", " a ", 1)
COPY_OF_COPY = COPY.replace(" a ", " one ", 1)
OTHER = "\n".join(paragraphs(TextSpec(seed=22, paragraphs=6)))


def _claim(url: str, text: str, fetched_at_ms: int = 1) -> NearClaim:
    return NearClaim(url, url_fingerprint(url), f"fp:{hash(text)}", JUDGE.sketch(text), fetched_at_ms)


@pytest.fixture
async def dedup_db(fresh_db: str) -> AsyncIterator[Database]:
    apply_migrations(fresh_db, "dedup", MIGRATIONS)
    db = Database(DatabaseSettings(dsn=fresh_db), "dedup-near-test")
    await db.start()
    try:
        yield db
    finally:
        await db.stop()


async def _count(db: Database, table: str) -> int:
    async with db.connection() as conn:
        cur = await conn.execute(f"SELECT count(*) FROM dedup.{table}")
        row = await cur.fetchone()
        assert row is not None
        return int(row[0])


async def test_copies_join_the_first_copy_and_redelivery_changes_nothing(dedup_db: Database) -> None:
    index = NearDuplicateIndex(dedup_db, JUDGE)
    await index.check_shape()
    first = await index.judge([_claim("http://a.test/", ARTICLE), _claim("http://o.test/", OTHER)])
    assert first == {"http://a.test/": NearAnswer(None, 0.0), "http://o.test/": NearAnswer(None, 0.0)}
    second = await index.judge([_claim("http://b.test/", COPY)])
    assert second["http://b.test/"].duplicate_of == "http://a.test/"
    third = await index.judge([_claim("http://c.test/", COPY_OF_COPY)])
    assert third["http://c.test/"].duplicate_of == "http://a.test/"  # the cluster's representative
    bands = await _count(dedup_db, "near_bands")
    again = await index.judge([_claim("http://b.test/", COPY), _claim("http://a.test/", ARTICLE)])
    assert again["http://b.test/"] == second["http://b.test/"] and again["http://a.test/"].duplicate_of is None
    assert await _count(dedup_db, "near_bands") == bands == 4 * JUDGE.shape.bands


async def test_new_content_replaces_a_urls_sketch_and_older_content_is_not_stored(dedup_db: Database) -> None:
    index = NearDuplicateIndex(dedup_db, JUDGE)
    await index.judge([_claim("http://a.test/", ARTICLE, fetched_at_ms=10)])
    await index.judge([_claim("http://a.test/", OTHER, fetched_at_ms=20)])  # the page changed completely
    moved = await index.judge([_claim("http://b.test/", COPY)])
    assert moved["http://b.test/"].duplicate_of is None  # the old content is no longer indexed under a.test
    stale = await index.judge([_claim("http://a.test/", ARTICLE, fetched_at_ms=15)])
    assert stale["http://a.test/"].duplicate_of == "http://b.test/"
    assert await _count(dedup_db, "near_documents") == 2
    probe = await index.judge([_claim("http://p.test/", OTHER)])
    assert probe["http://p.test/"].duplicate_of == "http://a.test/"


async def test_an_index_of_another_shape_is_refused(dedup_db: Database) -> None:
    await NearDuplicateIndex(dedup_db, JUDGE).check_shape()
    other = DuplicateJudge(SketchShape(shingle_width=5), threshold=0.5)
    with pytest.raises(IndexShapeMismatch, match="shingle width 11"):
        await NearDuplicateIndex(dedup_db, other).check_shape()


async def test_the_stored_rows_hold_each_sketch_exactly(dedup_db: Database) -> None:
    index = NearDuplicateIndex(dedup_db, JUDGE)
    claims = [_claim("http://a.test/", ARTICLE, fetched_at_ms=10), _claim("http://o.test/", OTHER, fetched_at_ms=2**40)]
    await index.judge(claims)
    async with dedup_db.connection() as conn:
        cur = await conn.execute("SELECT band_key, url_fp FROM dedup.near_bands")
        bands = set(await cur.fetchall())
        cur = await conn.execute("SELECT url_fp, url, content_fp, signature, simhash, representative, fetched_at_ms"
                                 " FROM dedup.near_documents")
        stored = {row[0]: tuple(row[1:]) for row in await cur.fetchall()}
    assert bands == {(key, claim.url_fp) for claim in claims for key in claim.sketch.band_keys}
    assert {key < 0 for key, _fp in bands} == {True, False}
    assert stored == {
        claim.url_fp: (claim.url, claim.content_fp, signature_bytes(claim.sketch.signature),
                       claim.sketch.simhash - (1 << 64) if claim.sketch.simhash >= 1 << 63 else claim.sketch.simhash,
                       claim.url, claim.fetched_at_ms)
        for claim in claims
    }


async def test_a_batch_s_candidates_are_joined_to_the_documents_by_key_probes(dedup_db: Database) -> None:
    rng = random.Random(5)
    docs = [rng.getrandbits(62) for _ in range(8000)]
    bands = [(rng.getrandbits(62), fp) for fp in docs for _ in range(20)]
    async with dedup_db.transaction() as conn:
        async with conn.cursor().copy("COPY dedup.near_bands (band_key, url_fp) FROM STDIN") as copy:
            for band in bands:
                await copy.write_row(band)
        async with conn.cursor().copy(
                "COPY dedup.near_documents (url_fp, url, content_fp, seq, signature, simhash, representative,"
                " representative_seq, similarity) FROM STDIN") as copy:
            for seq, fp in enumerate(docs):
                await copy.write_row((fp, f"http://d.test/{fp}", f"c{fp}", seq, b"s", 0, f"http://d.test/{fp}", seq, 0))
    async with dedup_db.connection() as conn:
        await conn.execute("ANALYZE dedup.near_bands")
        await conn.execute("ANALYZE dedup.near_documents")
    keys = [key for key, _ in rng.sample(bands, 200)]
    explain = "EXPLAIN " + near_store._CANDIDATES
    async with dedup_db.transaction() as conn:
        free = await conn.execute(explain.encode(), (keys,))
        assert "Hash Join" in "\n".join(r[0] for r in await free.fetchall())  # planned freely: every document read
        text = "\n".join(r[0] for r in await by_key_probes(conn, explain, (keys,)))
        assert "Hash Join" not in text and "Merge Join" not in text
        assert "Index Scan using near_documents_p" in text  # a probe per candidate, in its document's partition
        found = await by_key_probes(conn, near_store._CANDIDATES, (keys,))
    assert {row[1] for row in found} >= {fp for key, fp in bands if key in set(keys)}
