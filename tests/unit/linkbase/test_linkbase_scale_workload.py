"""The scale benchmark's workloads (bench/linkbase_scale.py) still build what it measures."""

from __future__ import annotations

from bench import linkbase_scale as scale
from services.linkbase.batch import build_batch


def test_insert_batches_fetch_stored_urls_with_half_new_links() -> None:
    batches = scale.insert_batches(first_page=100, batches=2, pages=3)
    assert [len(b) for b in batches] == [3, 3]
    batch = build_batch(batches[0])
    assert len(batch.links) == 3 * scale.LINKS_PER_PAGE
    stored_targets = {fp for _h, _n, targets in scale.stored_graph(100, 3) for fp in targets}
    page_fps = {page.ref.fp for page in batch.page_rows}
    assert page_fps <= stored_targets  # the fetched pages are stored, never-fetched URLs
    known = [link for link in batch.links if link.target.fp in stored_targets]
    assert len(known) == 3 * scale.NAV


def test_seen_batches_are_half_stored() -> None:
    [refs] = scale.seen_batches(stored_pages=50_000, batches=1, salt=3)
    assert len(refs) == scale.SEEN_BATCH
    assert sum("/never/" in ref.url for ref in refs) == scale.SEEN_BATCH // 2


def test_revisiting_batches_come_back_to_the_same_hosts_with_new_pages() -> None:
    first, second = scale.insert_batches(first_page=0, batches=2, pages=4, revisit=True)
    hosts = [{build_batch([r]).page_rows[0].ref.host for r in batch} for batch in (first, second)]
    assert hosts[0] == hosts[1] == {scale.host_name(h) for h in range(4)}
    pages = {r.value.url for r in first} | {r.value.url for r in second}
    assert len(pages) == 8
