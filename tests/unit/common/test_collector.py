import gc
import weakref
from collections.abc import Iterator

import pytest

from libs.common.collector import collector_paused, tune_collector


def test_collection_is_off_inside_and_back_on_after() -> None:
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_overlapping_pauses_end_with_the_last() -> None:
    outer = collector_paused()
    inner = collector_paused()
    outer.__enter__()
    inner.__enter__()
    outer.__exit__(None, None, None)
    assert not gc.isenabled()
    inner.__exit__(None, None, None)
    assert gc.isenabled()


def test_back_on_after_a_failure() -> None:
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("write failed")
    assert gc.isenabled()


def test_a_collector_turned_off_before_stays_off() -> None:
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


@pytest.fixture
def restored_collector() -> Iterator[None]:
    threshold = gc.get_threshold()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)


def test_tuning_freezes_what_is_alive_and_sets_the_young_threshold(restored_collector: None) -> None:
    class Node:
        def __init__(self) -> None:
            self.me = self

    alive = [Node() for _ in range(100)]
    before = gc.get_freeze_count()
    tune_collector(12_345)
    assert gc.get_threshold()[0] == 12_345
    assert gc.get_freeze_count() >= before + len(alive)  # the live objects, out of every pass
    garbage = Node()
    ref = weakref.ref(garbage)
    del garbage
    gc.collect()
    assert ref() is None  # what is made later is still collected


def test_a_negative_threshold_is_refused(restored_collector: None) -> None:
    with pytest.raises(ValueError):
        tune_collector(-1)
