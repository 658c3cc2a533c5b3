"""The dedup sketching benchmark: its workload, the identity check against a git revision, its stages."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bench import dedup_sketch_cost
from services.dedup import shingles, sketch


def test_texts_are_the_simulated_webs_main_texts() -> None:
    docs = dedup_sketch_cost.texts(pages=80)

    assert len(docs) >= 20
    assert all(text.strip() for text in docs)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git to read a revision")
def test_a_revision_loads_and_agrees_with_the_working_tree(tmp_path: Path) -> None:
    docs = dedup_sketch_cost.texts(pages=60)
    theirs = dedup_sketch_cost.load_revision("HEAD", tmp_path)

    dedup_sketch_cost.check_identical(docs, (shingles, sketch), theirs)  # raises SystemExit on any difference
    figures = dedup_sketch_cost.measure(docs[:3], {"ours": (shingles, sketch), "theirs": theirs}, rounds=1)
    assert set(figures) == {"ours", "theirs"}
    assert set(figures["ours"]) == {"shingle_hashes", "shingles + sketch"}
    assert figures["ours"]["shingles + sketch"]["best_us"] > 0


def test_a_disagreement_stops_the_benchmark() -> None:
    class OffByOne:
        @staticmethod
        def shingle_hashes(text: str, width: int = 11) -> object:
            return shingles.shingle_hashes(text, width) + 1

    with pytest.raises(SystemExit, match="disagree"):
        dedup_sketch_cost.check_identical(["one two three four five"], (shingles, sketch), (OffByOne, sketch))  # type: ignore[arg-type]
