"""Which new URLs fit their host's budget (the database part is in tests/integration/linkbase)."""

from __future__ import annotations

from services.linkbase.host_budget import over_budget
from services.linkbase.rows import TargetRow, UrlRef, resolve

SOURCE = resolve("http://a.test/")


def _target(url: str, depth: int | None) -> TargetRow:
    return TargetRow(resolve(url), depth, SOURCE, True)


def _keys(*urls: str) -> set[tuple[int, int]]:
    return {resolve(u).key for u in urls}


def test_shallowest_new_urls_fit_first_and_known_ones_never_count() -> None:
    targets = [
        _target("http://a.test/deep", 5),
        _target("http://a.test/shallow", 1),
        _target("http://a.test/unknown-depth", None),
        _target("http://a.test/known", 9),
        _target("http://b.test/x", 3),
    ]
    counts = {SOURCE.host_id: 8}
    over = over_budget(targets, _keys("http://a.test/known"), counts, 9)
    assert over == _keys("http://a.test/deep", "http://a.test/unknown-depth")


def test_hosts_with_room_and_spent_budgets() -> None:
    targets = [_target(f"http://a.test/{i}", 1) for i in range(3)]
    assert over_budget(targets, set(), {}, 3) == set()
    assert over_budget(targets, set(), {SOURCE.host_id: 10}, 3) == {t.ref.key for t in targets}


def test_ties_are_broken_by_key_so_every_replica_agrees() -> None:
    targets = [_target(f"http://a.test/{i}", 2) for i in range(10)]
    first = over_budget(targets, set(), {}, 4)
    second = over_budget(list(reversed(targets)), set(), {}, 4)
    assert first == second and len(first) == 6
    kept: list[UrlRef] = [t.ref for t in targets if t.ref.key not in first]
    assert sorted(r.key for r in kept) == sorted(t.ref.key for t in targets)[:4]
