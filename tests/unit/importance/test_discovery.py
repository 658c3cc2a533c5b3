"""Discovery weights."""

from __future__ import annotations

import pytest

from libs.common.url_keys import UrlKind
from services.importance.discovery import UNIFORM, DiscoveryWeights


def test_weights_grow_with_the_other_pages_of_the_site_for_home_and_index_pages_only() -> None:
    w = DiscoveryWeights(home=10.0, index=3.0, site_size_exponent=1.0)
    assert w.weight(UrlKind.HOME, 5) == 40.0  # the four other pages of the site link to it through its navigation
    assert w.weight(UrlKind.INDEX, 5) == 12.0
    assert w.weight(UrlKind.PAGE, 5) == 1.0
    assert w.weight(UrlKind.HOME, 1) == 0.0 == w.weight(UrlKind.HOME, 0)  # a site of one page: nothing links to it
    assert UNIFORM.weight(UrlKind.HOME, 1) == 1.0  # textbook AOPIC: every page alike
    assert UNIFORM.uniform and not w.uniform
    assert DiscoveryWeights(page=0.25).weight(UrlKind.PAGE, 5) == 0.25
    assert DiscoveryWeights(home=10.0, index=3.0, page=0.0).smallest == 3.0
    with pytest.raises(ValueError):
        DiscoveryWeights(home=0.0)
    with pytest.raises(ValueError):
        DiscoveryWeights(page=-1.0)
