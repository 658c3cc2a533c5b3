"""Turning consumed messages into de-duplicated rows."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf.message import Message

from libs.common.errors import PoisonMessage
from libs.common.kafka.consumer import Record
from libs.common.topics import DOCUMENTS, DUPLICATE_VERDICTS, FETCH_OUTCOMES, PAGE_LINKS, Topic
from libs.common.wire import messages as pb
from services.linkbase.api import page_size
from services.linkbase.batch import build_batch
from services.linkbase.rows import host_group, resolve


def _record(topic: Topic, value: Message, offset: int = 0, timestamp_ms: int = 0) -> Record[Any]:
    return Record(topic, 0, offset, "", value, timestamp_ms, None, None)


def _page(url: str, *links: pb.Link, nofollow: bool = False, depth: int = 1) -> Record[Any]:
    return _record(PAGE_LINKS, pb.PageLinks(url=url, host="", depth=depth, nofollow=nofollow, links=list(links)))


def test_links_are_classified_and_deduplicated() -> None:
    batch = build_batch([
        _page(
            "http://a.test/",
            pb.Link(url="http://a.test/x", anchor="X", link_class=pb.LINK_CLASS_INTERNAL),
            pb.Link(url="http://a.test/x#again", anchor="X again", link_class=pb.LINK_CLASS_INTERNAL),
            pb.Link(url="http://other.test/", link_class=pb.LINK_CLASS_UNSPECIFIED),
            pb.Link(url="http://www.a.test/y", link_class=pb.LINK_CLASS_UNSPECIFIED),
        )
    ])
    by_url = {link.target.url: link for link in batch.links}
    assert set(by_url) == {"http://a.test/x", "http://other.test/", "http://www.a.test/y"}
    assert by_url["http://a.test/x"].anchor == "X"
    assert by_url["http://other.test/"].link_class == pb.LINK_CLASS_EXTERNAL
    assert by_url["http://www.a.test/y"].link_class == pb.LINK_CLASS_INTERNAL
    assert set(batch.hosts) == {resolve(u).host_id for u in ("http://a.test/", "http://other.test/",
                                                              "http://www.a.test/")}


def test_bad_and_invalid_links_become_bad_links_with_reasons() -> None:
    batch = build_batch([
        _page(
            "http://a.test/",
            pb.Link(url="javascript:void(0)", link_class=pb.LINK_CLASS_BAD, bad_reason="unsupported_scheme:javascript"),
            pb.Link(url="http://exa mple.test:99999/", link_class=pb.LINK_CLASS_INTERNAL),
            pb.Link(url="", link_class=pb.LINK_CLASS_INTERNAL),
        )
    ])
    reasons = {bad.href: bad.reason for bad in batch.bad_links}
    assert reasons == {
        "javascript:void(0)": "unsupported_scheme:javascript",
        "http://exa mple.test:99999/": "bad_host",
        "": "empty",
    }
    assert batch.links == []


def test_nofollow_page_or_link_is_not_followable() -> None:
    batch = build_batch([
        _page("http://a.test/1", pb.Link(url="http://a.test/x", link_class=pb.LINK_CLASS_INTERNAL), nofollow=True),
        _page("http://a.test/2", pb.Link(url="http://a.test/y", link_class=pb.LINK_CLASS_INTERNAL, nofollow=True)),
        _page("http://a.test/3", pb.Link(url="http://a.test/z", link_class=pb.LINK_CLASS_INTERNAL)),
    ])
    followable = {link.target.url: link.followable for link in batch.links}
    assert followable == {"http://a.test/x": False, "http://a.test/y": False, "http://a.test/z": True}


def test_a_later_crawl_of_the_same_page_replaces_its_links() -> None:
    batch = build_batch([
        _page("http://a.test/", pb.Link(url="http://a.test/old", link_class=pb.LINK_CLASS_INTERNAL)),
        _page("http://a.test/", pb.Link(url="http://a.test/new", link_class=pb.LINK_CLASS_INTERNAL), depth=0),
    ])
    assert [p.depth for p in batch.page_rows] == [0]
    assert [link.target.url for link in batch.links] == ["http://a.test/new"]


@pytest.mark.parametrize(
    ("topic", "message"),
    [
        (PAGE_LINKS, pb.PageLinks(url="")),
        (PAGE_LINKS, pb.PageLinks(url="ftp://a.test/")),
        (DOCUMENTS, pb.Document(url=" ")),
        (DUPLICATE_VERDICTS, pb.DuplicateVerdict(url="")),
        (FETCH_OUTCOMES, pb.FetchOutcome(url="not a url")),
    ],
)
def test_messages_without_a_usable_url_are_poison(topic: Topic, message: Message) -> None:
    with pytest.raises(PoisonMessage):
        build_batch([_record(topic, message)])


def test_latest_outcome_per_url_and_home_page_availability() -> None:
    batch = build_batch([
        _record(FETCH_OUTCOMES, pb.FetchOutcome(request_id="a", url="http://a.test/", status=pb.FETCH_STATUS_OK,
                                                fetched_at_ms=2000)),
        _record(FETCH_OUTCOMES, pb.FetchOutcome(request_id="b", url="http://a.test/",
                                                status=pb.FETCH_STATUS_NETWORK_ERROR, fetched_at_ms=1000)),
        _record(FETCH_OUTCOMES, pb.FetchOutcome(url="http://b.test/", status=pb.FETCH_STATUS_NETWORK_ERROR),
                timestamp_ms=3000),
    ])
    assert len(batch.outcomes) == 3
    latest = {row.ref.url: row.status for row in batch.latest_outcomes()}
    assert latest == {"http://a.test/": pb.FETCH_STATUS_OK, "http://b.test/": pb.FETCH_STATUS_NETWORK_ERROR}
    assert batch.host_availability() == {resolve("http://a.test/").host_id: (True, 2000),
                                         resolve("http://b.test/").host_id: (False, 3000)}
    synthesized = [row for row in batch.outcomes.values() if row.ref.url == "http://b.test/"]
    assert synthesized[0].request_id == "3000:0" and synthesized[0].fetched_at_ms == 3000


def test_documents_keep_the_latest_version_and_a_normalised_canonical() -> None:
    batch = build_batch([
        _record(DOCUMENTS, pb.Document(url="http://a.test/p", title="new", fetched_at_ms=2, canonical_url="/c#x")),
        _record(DOCUMENTS, pb.Document(url="http://a.test/p", title="old", fetched_at_ms=1)),
    ])
    (doc,) = batch.documents.values()
    assert doc.title == "new"
    assert doc.canonical_url == "http://a.test/c"


def test_verdict_duplicate_of_only_when_duplicate() -> None:
    batch = build_batch([
        _record(DUPLICATE_VERDICTS, pb.DuplicateVerdict(url="http://a.test/1", duplicate=False, duplicate_of="x")),
        _record(DUPLICATE_VERDICTS, pb.DuplicateVerdict(url="http://a.test/2", duplicate=True,
                                                        duplicate_of="http://a.test/1")),
    ])
    assert {v.ref.url: v.duplicate_of for v in batch.verdicts.values()} == {
        "http://a.test/1": None,
        "http://a.test/2": "http://a.test/1",
    }


def test_page_size_defaults_and_caps() -> None:
    assert page_size(0) == 100
    assert page_size(-5) == 100
    assert page_size(7) == 7
    assert page_size(5000) == 1000


def test_nul_characters_are_dropped_from_stored_text() -> None:
    batch = build_batch([
        _page("http://a.test/", pb.Link(url="http://a.test/x", anchor="a\x00b", link_class=pb.LINK_CLASS_INTERNAL),
              pb.Link(url="bad\x00href", link_class=pb.LINK_CLASS_BAD, bad_reason="r\x00")),
        _record(DOCUMENTS, pb.Document(url="http://a.test/", title="t\x00itle")),
    ])
    assert [link.anchor for link in batch.links] == ["ab"]
    assert [(bad.href, bad.reason) for bad in batch.bad_links] == [("badhref", "r")]
    assert [doc.title for doc in batch.documents.values()] == ["title"]


def test_trapped_links_are_bad_links_named_after_their_rule() -> None:
    batch = build_batch([
        _page(
            "http://a.test/",
            pb.Link(url="http://a.test/cal/2091/01/", link_class=pb.LINK_CLASS_BAD, bad_reason="trap:calendar",
                    trap_rule="calendar", anchor="Next"),
            pb.Link(url="http://a.test/a/a/a/", link_class=pb.LINK_CLASS_INTERNAL, trap_rule="repeated_segments"),
        )
    ])
    assert {bad.href: bad.reason for bad in batch.bad_links} == {
        "http://a.test/cal/2091/01/": "trap:calendar",
        "http://a.test/a/a/a/": "trap:repeated_segments",
    }
    assert batch.links == []


def test_a_batch_splits_into_host_groups_of_disjoint_rows() -> None:
    hosts = [f"h{n}.test" for n in range(6)]
    records = [_page(f"http://{h}/", pb.Link(url=f"http://{hosts[(n + 1) % 6]}/x", link_class=pb.LINK_CLASS_INTERNAL))
               for n, h in enumerate(hosts)]
    records += [_record(DOCUMENTS, pb.Document(url=f"http://{h}/doc", title="t")) for h in hosts]
    records += [_record(FETCH_OUTCOMES, pb.FetchOutcome(request_id="r", url=f"http://{h}/", status=pb.FETCH_STATUS_OK))
                for h in hosts]
    records += [_record(DUPLICATE_VERDICTS, pb.DuplicateVerdict(url=f"http://{h}/doc")) for h in hosts]
    batch = build_batch(records)
    parts = batch.split(2)
    for g, part in enumerate(parts):
        keyed = [*part.hosts, *(p.ref.host_id for p in part.page_rows),
                 *(d.ref.host_id for d in part.documents.values()), *(v.ref.host_id for v in part.verdicts.values()),
                 *(o.ref.host_id for o in part.outcomes.values()),
                 *(link.source.host_id for link in part.links)]
        assert keyed and {host_group(h, 2) for h in keyed} == {g}
    assert sorted(h for part in parts for h in part.hosts) == sorted(batch.hosts)
    assert sorted((r.source.fp, r.target.fp) for part in parts for r in part.links) == sorted(
        (r.source.fp, r.target.fp) for r in batch.links)
    assert sum(len(part.documents) + len(part.verdicts) + len(part.outcomes) for part in parts) == 18
    assert not any(part.empty for part in parts) and build_batch([]).empty
