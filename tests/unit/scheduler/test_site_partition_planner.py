"""The partition planner: key paths covering 90% of URLs, greedy groups, two seeds per key path."""

from __future__ import annotations

import pytest

from services.scheduler.site_partition.graph import build_graph
from services.scheduler.site_partition.planner import PartitionPlanner, group_of, tail_group

H = "http://s.example"


def test_key_paths_are_the_largest_ones_up_to_90_percent_of_urls() -> None:
    counts = {"a": 50, "b": 30, "c": 10, "d": 6, "e": 4}
    assert PartitionPlanner().key_paths(counts) == ["a", "b", "c"]
    assert PartitionPlanner(share=0.8).key_paths(counts) == ["a", "b"]
    assert PartitionPlanner().key_paths({"x": 5, "w": 5}) == ["w", "x"]  # ties by name
    with pytest.raises(ValueError):
        PartitionPlanner(share=0.0)


def test_key_paths_go_to_the_group_with_the_fewest_urls() -> None:
    counts = {"a": 40, "b": 30, "c": 15, "d": 10, "e": 5}
    assert PartitionPlanner().assign(counts, 2) == [["a", "d"], ["b", "c"]]
    assert PartitionPlanner().assign(counts, 3) == [["a"], ["b"], ["c", "d"]]
    assert PartitionPlanner().assignment(counts, 2) == {"a": 0, "d": 0, "b": 1, "c": 1}
    with pytest.raises(ValueError):
        PartitionPlanner().assign(counts, 0)


def test_other_paths_are_hashed_to_a_group() -> None:
    assert group_of("s/a", {"s/a": 1}, 3) == 1
    assert group_of("s/tail", {}, 3) == tail_group("s/tail", 3)
    assert {tail_group(f"s/p{i}", 3) for i in range(30)} == {0, 1, 2}


def test_seeds_are_the_home_page_then_the_most_linked_and_the_shallowest_url_of_each_key_path() -> None:
    edges = [
        (f"{H}/", f"{H}/a/"),
        (f"{H}/a/", f"{H}/a/1"),
        (f"{H}/a/1", f"{H}/a/2"),
        (f"{H}/a/2", f"{H}/a/3"),
        (f"{H}/a/3", f"{H}/a/2"),
        (f"{H}/a/1", f"{H}/a/3"),
        (f"{H}/", f"{H}/b/"),
        (f"{H}/b/", f"{H}/b/1"),
    ]
    site = build_graph(edges, f"{H}/")
    plan = PartitionPlanner(share=0.8).plan(site, 2)
    assert plan.key_paths == ("s.example/a", "s.example/b")
    assert [g.paths for g in plan.groups] == [("s.example/a",), ("s.example/b",)]
    assert [g.urls for g in plan.groups] == [4, 2]
    # a/3 and a/2 have two in-links each (a/2 is shallower); then the shallowest of the others: a/
    assert plan.groups[0].seeds == (f"{H}/", f"{H}/a/2", f"{H}/a/")
    assert plan.groups[1].seeds == (f"{H}/", f"{H}/b/", f"{H}/b/1")
    assert plan.assignment() == {"s.example/a": 0, "s.example/b": 1}
    assert plan.paths == 3
