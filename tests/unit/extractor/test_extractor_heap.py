"""Memory freed by parsed trees goes back to the system once the process is over the bound."""

from __future__ import annotations

import sys
import threading

import pytest

from services.extractor.heap import TRIMS, release_free_memory, resident_bytes
from services.extractor.html_tree import parse_html

MiB = 1024 * 1024
PAGE = "<html><body>" + "".join(f"<div><a href='/p{i}'>link {i}</a><p>text {i}</p></div>" for i in range(50_000))


def _parse_and_free_in_a_thread() -> list[str]:
    """Parses four dense pages in a worker thread (as the service does) and frees them, keeping a little text
    allocated among them, as a phase's messages are."""
    kept: list[str] = []

    def work() -> None:
        trees = [parse_html(PAGE) for _ in range(4)]
        kept.extend(str(tree.findtext(".//a")) + "x" * 100 for tree in trees)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    return kept


def _resident() -> int:
    if sys.platform != "linux":
        pytest.skip("the resident size is read from /proc/self/statm, on Linux only")
    resident = resident_bytes()
    assert resident is not None and resident > 0
    return resident


def test_freed_trees_are_given_back_when_over_the_bound() -> None:
    kept = _parse_and_free_in_a_thread()
    before = _resident()
    trims = TRIMS._value.get()
    assert release_free_memory(0)
    after = _resident()
    assert TRIMS._value.get() == trims + 1
    assert kept and before - after > 32 * MiB, (before / MiB, after / MiB)


def test_below_the_bound_nothing_is_trimmed() -> None:
    kept = _parse_and_free_in_a_thread()
    before = _resident()
    trims = TRIMS._value.get()
    assert not release_free_memory(before + 512 * MiB)
    assert TRIMS._value.get() == trims
    assert kept and _resident() > before - 8 * MiB
