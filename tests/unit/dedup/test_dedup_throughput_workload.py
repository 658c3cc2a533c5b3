"""The dedup benchmark's documents (bench/dedup_throughput.py): a tenth are near copies of indexed articles."""

from __future__ import annotations

from bench import dedup_throughput as bench
from services.dedup.judge import DuplicateJudge
from services.dedup.sketch import SketchShape


def test_every_tenth_document_is_a_near_copy_of_an_indexed_article() -> None:
    judge = DuplicateJudge(SketchShape(), threshold=0.5)
    docs = bench.measured_documents(count=20, real=5, salt=1)
    assert len({url for url, _t, _f in docs}) == 20
    copy = judge.sketch(docs[10][1])
    assert judge.near_similarity(copy, judge.sketch(bench.article(0))) is not None
    assert judge.near_similarity(judge.sketch(docs[3][1]), judge.sketch(bench.article(0))) is None
