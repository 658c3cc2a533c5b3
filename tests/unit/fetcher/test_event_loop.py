"""The fetcher's event loop setting."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from libs.common.settings import SettingsError
from services.fetcher.event_loop import install_event_loop


@pytest.fixture
def standard_policy_after() -> Iterator[None]:
    yield
    asyncio.set_event_loop_policy(None)


def test_uvloop_and_asyncio_loops_are_installed(standard_policy_after: None) -> None:
    async def loop_module() -> str:
        return type(asyncio.get_running_loop()).__module__

    install_event_loop("uvloop")
    assert asyncio.run(loop_module()).startswith("uvloop")
    install_event_loop("asyncio")
    assert asyncio.run(loop_module()).startswith("asyncio")


def test_an_unknown_loop_is_a_settings_error(standard_policy_after: None) -> None:
    with pytest.raises(SettingsError, match="TRAWL_FETCHER_EVENT_LOOP='tokio'"):
        install_event_loop("tokio")
