"""Word shingles of the main text: paragraph-local, hashed, reorder-invariant."""

from __future__ import annotations

from services.dedup.shingles import blocks, resemblance, shingle_hashes, tokens

TEXT = (
    "The quiet harbor opened a new market beside the old stone bridge this spring.\n"
    "Every farmer in the valley carried fresh apples and pears to the early morning stalls.\n"
    "The council approved the budget after a long debate about the railway station."
)


def test_tokens_ignore_case_and_punctuation() -> None:
    assert tokens("The Harbor, opened -- a MARKET.") == ["the", "harbor", "opened", "a", "market"]


def test_short_lines_are_carried_into_the_next_paragraph() -> None:
    text = "Menu\nNews Sports\n" + TEXT.splitlines()[0]
    merged = blocks(text, 11)
    assert len(merged) == 1 and merged[0][:3] == ["menu", "news", "sports"]
    assert blocks("one two\nthree", 11) == [["one", "two", "three"]]


def test_a_paragraph_yields_words_minus_width_plus_one_shingles() -> None:
    first = TEXT.splitlines()[0]
    assert shingle_hashes(first, 11).size == len(tokens(first)) - 10
    assert shingle_hashes("too short to shingle", 11).size == 1
    assert shingle_hashes("", 11).size == 0


def test_reordered_paragraphs_have_the_same_shingles() -> None:
    reordered = "\n".join(reversed(TEXT.splitlines()))
    assert resemblance(shingle_hashes(TEXT), shingle_hashes(reordered)) == 1.0


def test_one_word_edit_changes_at_most_width_shingles() -> None:
    edited = TEXT.replace("budget", "plan")
    a, b = shingle_hashes(TEXT), shingle_hashes(edited)
    common = len(set(a.tolist()) & set(b.tolist()))
    assert a.size - common <= 11
    assert 0.5 < resemblance(a, b) < 1.0


def test_resemblance_of_empty_sets_is_zero() -> None:
    assert resemblance(shingle_hashes(""), shingle_hashes("")) == 0.0
