"""Dedup documents per second with a million fingerprints indexed: LSH lookups against a linear scan.

One throwaway PostgreSQL (durable unless ``--fast``, tuned like ``bench.linkbase_scale``)
holds the dedup schema, bulk-loaded (COPY, indexes rebuilt afterwards) with ``--indexed``
documents: their exact fingerprints and their near-duplicate sketches (MinHash signatures
and LSH band keys). Most are random signatures, the sketches of unrelated pages; ``--real``
of them are sketches of generated articles, so that a tenth of the measured documents (near
copies of those articles) find their cluster. The measured documents are fresh generated articles (300 to 600 words).

Contender: the service's decision path for a batch of ``--batch`` documents, as
``DedupHandler`` runs it minus producing the verdicts: the exact claim
(``ExactFingerprintIndex``), sketching (w = 11 shingles, 128-value MinHash, 20 bands of 3),
and ``NearDuplicateIndex.judge`` (band-key lookups, verification, storing the new sketches).
Documents per second of wall time, and per CPU-second of this (single-threaded) process.
Baseline: the same documents sketched and compared, with numpy, against every indexed
signature (a linear scan, what the index avoids), measured on ``--scan-docs`` documents.

    .venv/bin/python -m bench.dedup_throughput [--indexed 1000000] [--fast] [--json]
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from typing import Any

import numpy as np
import psycopg

from bench.harness import REPO, add_postgres_options, base_parser, fresh_database, machine
from bench.linkbase_scale import TUNING, tuned_postgres
from libs.common.db.migrations import apply_migrations
from libs.common.db.pool import Database
from libs.common.db.settings import DatabaseSettings
from libs.common.urls import url_fingerprint
from libs.simweb.words import TextSpec, paragraphs
from services.dedup.index import Claim
from services.dedup.judge import DuplicateJudge
from services.dedup.near_clusters import NearClaim
from services.dedup.near_store import NearDuplicateIndex
from services.dedup.settings import DedupSettings
from services.dedup.sketch import signature_bytes
from services.dedup.store import ExactFingerprintIndex
from services.extractor.content import content_fingerprint

MIGRATIONS = REPO / "services" / "dedup" / "migrations"
SETTINGS = DedupSettings()

_DROP = ["ALTER TABLE dedup.near_bands DROP CONSTRAINT near_bands_pk",
         "ALTER TABLE dedup.near_documents DROP CONSTRAINT near_documents_pk",
         "ALTER TABLE dedup.fingerprints DROP CONSTRAINT fingerprints_pkey"]
_REBUILD = ["ALTER TABLE dedup.fingerprints ADD PRIMARY KEY (content_fp)",
            "ALTER TABLE dedup.near_documents ADD CONSTRAINT near_documents_pk PRIMARY KEY (url_fp)",
            "ALTER TABLE dedup.near_bands ADD CONSTRAINT near_bands_pk PRIMARY KEY (band_key, url_fp)",
            "ANALYZE dedup.fingerprints", "ANALYZE dedup.near_documents", "ANALYZE dedup.near_bands"]


def article(seed: int) -> str:
    return "\n".join(paragraphs(TextSpec(seed, 5 + seed % 4)))


def near_copy(text: str) -> str:
    return text.replace(" the ", " a ", 2)


def bulk_load(dsn: str, judge: DuplicateJudge, indexed: int, real: int) -> tuple[float, np.ndarray]:
    """Loads ``indexed`` documents (``real`` of them real articles); returns seconds and the signatures."""
    started = time.perf_counter()
    rng = np.random.default_rng(7)
    perms = judge.shape.permutations
    signatures = rng.integers(0, 2**32, size=(indexed, perms), dtype=np.uint32)
    for i in range(real):
        signatures[i] = judge.sketch(article(i)).signature
    with psycopg.connect(dsn, autocommit=True) as conn, psycopg.connect(dsn, autocommit=True) as second, \
            psycopg.connect(dsn, autocommit=True) as third:
        for statement in _DROP:
            conn.execute(statement.encode())
        with conn.cursor().copy(
            "COPY dedup.near_documents (url_fp, url, content_fp, seq, signature, simhash, representative,"
            " representative_seq, similarity) FROM STDIN (FORMAT BINARY)"
        ) as docs, second.cursor().copy(
            "COPY dedup.near_bands (band_key, url_fp) FROM STDIN (FORMAT BINARY)"
        ) as bands, third.cursor().copy(
            "COPY dedup.fingerprints (content_fp, url) FROM STDIN (FORMAT BINARY)"
        ) as exact:
            docs.set_types(["int8", "text", "text", "int8", "bytea", "int8", "text", "int8", "float4"])
            bands.set_types(["int8", "int8"])
            exact.set_types(["text", "text"])
            for i in range(indexed):
                url = f"http://h{i % 50_000}.test/indexed/{i}"
                fp = url_fingerprint(url)
                content = f"{i:032x}"
                docs.write_row((fp, url, content, i + 1, signature_bytes(signatures[i]), 0, url, i + 1, 0.0))
                exact.write_row((content, url))
                for key in judge.sketcher.band_keys(signatures[i]):
                    bands.write_row((key, fp))
        conn.execute(f"SELECT setval('dedup.near_seq', {indexed + 1})".encode())
        for statement in _REBUILD:
            conn.execute(statement.encode())
    return time.perf_counter() - started, signatures


def measured_documents(count: int, real: int, salt: int) -> list[tuple[str, str, str]]:
    """(url, text, content fingerprint): fresh articles, every tenth a near copy of an indexed one."""
    docs = []
    for i in range(count):
        text = near_copy(article(i % real)) if i % 10 == 0 else article(10_000_000 + salt * count + i)
        docs.append((f"http://m{salt}.test/doc/{i}", text, content_fingerprint(text)))
    return docs


async def decide(exact: ExactFingerprintIndex, near: NearDuplicateIndex, judge: DuplicateJudge,
                 docs: list[tuple[str, str, str]]) -> int:
    """The handler's decision path for one batch; returns how many documents were duplicates."""
    firsts = await exact.claim([Claim(url, fp) for url, _text, fp in docs])
    claims = [NearClaim(url, url_fingerprint(url), fp, judge.sketch(text)) for url, text, fp in docs
              if firsts[url] == url]
    answers = await near.judge(claims)
    return sum(firsts[url] != url or answers[url].duplicate_of is not None for url, _t, _f in docs)


def linear_scan(judge: DuplicateJudge, signatures: np.ndarray, docs: list[tuple[str, str, str]]) -> int:
    """The baseline: every document's signature compared with every indexed one."""
    found = 0
    for _url, text, _fp in docs:
        signature = judge.sketch(text).signature
        matches = np.count_nonzero(signatures == signature, axis=1)
        found += int(matches.max() >= judge.threshold * signature.size)
    return found


async def run(indexed: int, real: int, batches: int, batch: int, scan_docs: int, fast: bool) -> dict[str, Any]:
    judge = DuplicateJudge(SETTINGS.shape, SETTINGS.threshold)
    with tuned_postgres(fast) as server, fresh_database(server, "bench_dedup") as dsn:
        apply_migrations(dsn, "dedup", MIGRATIONS)
        load_seconds, signatures = await asyncio.to_thread(bulk_load, dsn, judge, indexed, real)
        print(f"  indexed {indexed:,} documents in {load_seconds:.0f} s", file=sys.stderr)
        db = Database(DatabaseSettings(dsn=dsn, pool_max=2), "bench-dedup")
        await db.start()
        try:
            exact, near = ExactFingerprintIndex(db), NearDuplicateIndex(db, judge)
            await near.check_shape()
            await decide(exact, near, judge, measured_documents(batch, real, salt=0))  # untimed warm-up
            wall, cpu, duplicates = [], [], 0
            for b in range(batches):
                docs = measured_documents(batch, real, salt=b + 1)
                started, cpu_started = time.perf_counter(), time.process_time()
                duplicates += await decide(exact, near, judge, docs)
                wall.append(len(docs) / (time.perf_counter() - started))
                cpu.append(len(docs) / (time.process_time() - cpu_started))
                print(f"  batch {b + 1}/{batches}: {wall[-1]:,.0f} docs/s ({cpu[-1]:,.0f} per CPU-second)",
                      file=sys.stderr)
        finally:
            await db.stop()
    scan = measured_documents(scan_docs, real, salt=batches + 1)
    started = time.perf_counter()
    scan_found = linear_scan(judge, signatures, scan)
    scan_rate = len(scan) / (time.perf_counter() - started)
    return {
        "benchmark": "dedup_throughput",
        "unit": "documents/s",
        "workload": {"indexed": indexed, "real_articles_indexed": real, "batches": batches, "batch": batch,
                     "near_copy_share": 0.1, "postgres": "fsync off" if fast else "durable (fsync on)",
                     "tuning": TUNING,
                     "shape": {"shingle_width": judge.shape.shingle_width, "permutations": judge.shape.permutations,
                               "bands": judge.shape.bands, "rows": judge.shape.rows}},
        "preload_seconds": round(load_seconds, 1),
        "contender": {"name": "exact claim + sketch + NearDuplicateIndex.judge", "median": statistics.median(wall),
                      "min": min(wall), "max": max(wall), "per_cpu_second_median": statistics.median(cpu),
                      "duplicates_found_share": duplicates / (batches * batch)},
        "baseline": {"name": "sketch + numpy scan of every indexed signature", "rate": scan_rate,
                     "documents": len(scan), "duplicates_found_share": scan_found / len(scan)},
        "ratio": statistics.median(wall) / scan_rate,
        "machine": machine(),
    }


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--indexed", type=int, default=1_000_000, help="Documents in the index before measuring.")
    parser.add_argument("--real", type=int, default=2_000, help="Indexed documents that are real articles.")
    parser.add_argument("--batches", type=int, default=6, help="Timed batches.")
    parser.add_argument("--batch", type=int, default=500, help="Documents per batch (the service's default).")
    parser.add_argument("--scan-docs", type=int, default=20, help="Documents the linear-scan baseline judges.")
    add_postgres_options(parser)
    args = parser.parse_args()
    result = asyncio.run(run(args.indexed, args.real, args.batches, args.batch, args.scan_docs, args.fast))
    if args.json:
        print(json.dumps(result, indent=2))
        return
    c, b = result["contender"], result["baseline"]
    print(f"dedup_throughput: documents/s with {args.indexed:,} documents indexed (median of {args.batches} batches)")
    print(f"  workload: {', '.join(f'{k}={v}' for k, v in result['workload'].items())}")
    print(f"  {c['name']}: {c['median']:,.0f} docs/s (min {c['min']:,.0f}, max {c['max']:,.0f});"
          f" {c['per_cpu_second_median']:,.0f} per CPU-second; duplicates found {c['duplicates_found_share']:.1%}")
    print(f"  baseline: {b['name']}: {b['rate']:,.1f} docs/s on {b['documents']} documents;"
          f" duplicates found {b['duplicates_found_share']:.1%}")
    print(f"  ratio: {result['ratio']:,.0f}x")
    info = result["machine"]
    print(f"  machine: {info['cpus']} cpus, Python {info['python']}, load {info['load_average_1m_at_end']}")


if __name__ == "__main__":
    main()
