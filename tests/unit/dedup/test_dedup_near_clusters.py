"""Placing documents in near-duplicate clusters (the pure decision)."""

from __future__ import annotations

from libs.simweb.words import TextSpec, paragraphs
from services.dedup.judge import DuplicateJudge
from services.dedup.near_clusters import IndexedDoc, NearClaim, place
from services.dedup.sketch import SketchShape

JUDGE = DuplicateJudge(SketchShape(), threshold=0.5)
ARTICLE = "\n".join(paragraphs(TextSpec(seed=11, paragraphs=6)))
COPY = ARTICLE.replace(" the ", " a ", 1)
OTHER = "\n".join(paragraphs(TextSpec(seed=12, paragraphs=6)))


def _claim(url: str, text: str, fp: int) -> NearClaim:
    return NearClaim(url, fp, f"c-{fp}", JUDGE.sketch(text))


def _indexed(claim: NearClaim, representative: str, seq: int) -> dict[int, list[IndexedDoc]]:
    doc = IndexedDoc(claim.url_fp, claim.url, claim.sketch.signature, representative, seq)
    return {key: [doc] for key in claim.sketch.band_keys}


def test_a_near_copy_joins_the_indexed_cluster_and_names_its_representative() -> None:
    first = _claim("http://a.test/1", ARTICLE, 1)
    second = _claim("http://b.test/2", COPY, 2)
    [placement] = place([second], [50], _indexed(first, "http://a.test/0", 7), JUDGE)
    assert (placement.representative, placement.representative_seq, placement.seq) == ("http://a.test/0", 7, 50)
    assert 0.5 <= placement.similarity < 1.0
    assert placement.duplicate_of("http://b.test/2") == "http://a.test/0"


def test_unrelated_documents_start_their_own_cluster() -> None:
    first = _claim("http://a.test/1", ARTICLE, 1)
    [placement] = place([_claim("http://c.test/", OTHER, 3)], [9], _indexed(first, "http://a.test/1", 1), JUDGE)
    assert (placement.representative, placement.representative_seq, placement.similarity) == ("http://c.test/", 9, 0.0)
    assert placement.duplicate_of("http://c.test/") is None


def test_copies_within_one_batch_find_each_other_in_order() -> None:
    claims = [_claim("http://a.test/1", ARTICLE, 1), _claim("http://b.test/2", COPY, 2)]
    first, second = place(claims, [3, 4], {}, JUDGE)
    assert first.representative == "http://a.test/1" and second.representative == "http://a.test/1"
    assert second.representative_seq == 3


def test_the_oldest_cluster_wins_and_a_page_is_never_its_own_duplicate() -> None:
    old = _claim("http://a.test/old", ARTICLE, 1)
    young = _claim("http://a.test/young", ARTICLE, 2)
    candidates = _indexed(young, "http://a.test/young", 20)
    for key, docs in _indexed(old, "http://a.test/old", 5).items():
        candidates.setdefault(key, []).extend(docs)
    [placement] = place([_claim("http://z.test/", COPY, 3)], [30], candidates, JUDGE)
    assert placement.representative == "http://a.test/old"
    [itself] = place([_claim("http://a.test/old", COPY, 1)], [31], _indexed(old, "http://a.test/old", 5), JUDGE)
    assert itself.representative == "http://a.test/old" and itself.representative_seq == 31
