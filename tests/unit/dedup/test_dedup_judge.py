"""The duplicate rule shared by the service and the evaluator."""

from __future__ import annotations

import pytest

from libs.simweb.words import TextSpec, paragraphs
from services.dedup.judge import Document, DuplicateJudge, simhash_duplicates
from services.dedup.sketch import SketchShape

ARTICLE = "\n".join(paragraphs(TextSpec(seed=3, paragraphs=6)))
OTHER = "\n".join(paragraphs(TextSpec(seed=4, paragraphs=6)))


@pytest.fixture(scope="module")
def judge() -> DuplicateJudge:
    return DuplicateJudge(SketchShape(), threshold=0.5)


def test_exact_copies_have_similarity_one(judge: DuplicateJudge) -> None:
    a = Document("fp", judge.sketch(ARTICLE))
    b = Document("fp", judge.sketch("different text, same fingerprint"))
    assert judge.similarity(a, b) == 1.0


def test_a_lightly_edited_copy_is_a_near_duplicate(judge: DuplicateJudge) -> None:
    edited = ARTICLE.replace(" the ", " a ", 2)
    similarity = judge.similarity(Document("x", judge.sketch(ARTICLE)), Document("y", judge.sketch(edited)))
    assert similarity is not None and 0.5 <= similarity < 1.0


def test_different_articles_are_not_duplicates(judge: DuplicateJudge) -> None:
    assert judge.similarity(Document("x", judge.sketch(ARTICLE)), Document("y", judge.sketch(OTHER))) is None
    assert judge.near_similarity(judge.sketch(""), judge.sketch("")) is None


def test_the_threshold_decides(judge: DuplicateJudge) -> None:
    half = "\n".join(ARTICLE.splitlines()[:3] + OTHER.splitlines()[3:])
    strict = DuplicateJudge(SketchShape(), threshold=0.9)
    assert strict.near_similarity(strict.sketch(ARTICLE), strict.sketch(half)) is None
    with pytest.raises(ValueError):
        DuplicateJudge(SketchShape(), threshold=0.0)


def test_simhash_rule_accepts_identical_sets_only_within_the_distance(judge: DuplicateJudge) -> None:
    assert simhash_duplicates(judge.sketch(ARTICLE), judge.sketch(ARTICLE))
    assert not simhash_duplicates(judge.sketch(ARTICLE), judge.sketch(OTHER))
