"""The corpus (tests/corpus): realistic pages through the whole extraction path, against what must come out.

Each case names only what it is about; a key it leaves out is not checked. Keys:
``title``, ``author``, ``language``, ``charset``, ``canonical`` (null: none), ``error`` (exact)
or ``error_prefix``, ``published`` (ISO date-time, or a date meaning midnight UTC; null:
unknown), ``noindex``, ``nofollow``, ``truncated``, ``link_count``, ``text_contains``,
``text_excludes``, ``links`` (each: ``url`` and any of ``class``, ``tag``, ``anchor``,
``context_contains``, ``nofollow``, ``reason``, ``trap``), ``absent_links`` and ``links_exact``
(the listed links are all the page has).
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

import pytest

from libs.common.wire import messages as pb
from services.extractor.page_extractor import Extracted, extract_page, extract_pages
from tests.corpus.loader import CorpusCase, load_corpus

CASES = load_corpus()
CLASSES = {"internal": pb.LINK_CLASS_INTERNAL, "external": pb.LINK_CLASS_EXTERNAL, "bad": pb.LINK_CLASS_BAD}


def _ms(value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=UTC)
    elif isinstance(value, date):
        moment = datetime(value.year, value.month, value.day, tzinfo=UTC)
    else:
        moment = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    return int(moment.timestamp() * 1000)


def _check_document(out: Extracted, expect: dict[str, Any]) -> None:
    doc = out.document
    for key, field in (("title", "title"), ("author", "author"), ("language", "language"), ("charset", "charset")):
        if key in expect:
            assert getattr(doc, field) == expect[key], key
    if "canonical" in expect:
        assert doc.canonical_url == (expect["canonical"] or "")
        assert out.links.canonical_url == doc.canonical_url
    if "error" in expect:
        assert doc.extraction_error == expect["error"]
    if "error_prefix" in expect:
        assert doc.extraction_error.startswith(expect["error_prefix"]), doc.extraction_error
    if "published" in expect:
        assert doc.published_at_ms == _ms(expect["published"]), datetime.fromtimestamp(doc.published_at_ms / 1000, UTC)
    if "noindex" in expect:
        assert doc.noindex is expect["noindex"]
    for snippet in expect.get("text_contains", []):
        assert snippet in doc.text, snippet
    for snippet in expect.get("text_excludes", []):
        assert snippet not in doc.text, snippet
    assert doc.text or doc.extraction_error  # never silently empty


def _check_links(out: Extracted, expect: dict[str, Any]) -> None:
    page = out.links
    by_url = {link.url: link for link in page.links}
    assert len(by_url) == len(page.links)  # deduplicated
    if "nofollow" in expect:
        assert page.nofollow is expect["nofollow"]
    if "truncated" in expect:
        assert page.links_truncated is expect["truncated"]
    if "link_count" in expect:
        assert len(page.links) == expect["link_count"]
    for wanted in expect.get("links", []):
        link = by_url.get(wanted["url"])
        assert link is not None, f"missing link {wanted['url']}; have {sorted(by_url)[:50]}"
        if "class" in wanted:
            assert link.link_class == CLASSES[wanted["class"]], wanted["url"]
        fields = (("tag", "source_tag"), ("anchor", "anchor"), ("reason", "bad_reason"), ("trap", "trap_rule"))
        for key, field in fields:
            if key in wanted:
                assert getattr(link, field) == wanted[key], (wanted["url"], key)
        if "nofollow" in wanted:
            assert link.nofollow is wanted["nofollow"], wanted["url"]
        if "context_contains" in wanted:
            assert wanted["context_contains"] in link.context, (wanted["url"], link.context)
        if link.trap_rule:
            assert (link.link_class, link.bad_reason) == (pb.LINK_CLASS_BAD, f"trap:{link.trap_rule}")
    for url in expect.get("absent_links", []):
        assert url not in by_url, url
    if expect.get("links_exact"):
        assert set(by_url) == {wanted["url"] for wanted in expect.get("links", [])}


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_corpus_page(case: CorpusCase) -> None:
    out = extract_page(case.fetch_result())
    _check_document(out, case.expect)
    _check_links(out, case.expect)
    assert pb.PageLinks.FromString(out.links.SerializeToString()) == out.links


def test_the_batch_path_gives_the_same_results() -> None:
    results = [case.fetch_result() for case in CASES]
    assert extract_pages(results) == [extract_page(result) for result in results]


def test_the_corpus_covers_what_the_issue_asks_for() -> None:
    names = {case.name for case in CASES}
    assert len(CASES) >= 15
    for needed in ("news_article", "category_list", "base_href", "frameset", "broken_markup", "huge_link_index"):
        assert needed in names, needed
    assert any("charset" in name for name in names)
