"""The pause flag the admin API sets and every dispatch round reads."""

from __future__ import annotations

import pytest

from libs.common.db.pool import Database
from services.scheduler.admin.pause import PauseFlag

pytestmark = pytest.mark.integration


async def test_pause_flag(scheduler_db: Database) -> None:
    flag = PauseFlag(scheduler_db)
    assert not await flag.is_paused()
    await flag.set_paused(True)
    assert await flag.is_paused()
    await flag.set_paused(True)
    assert await flag.is_paused()
    await flag.set_paused(False)
    assert not await flag.is_paused()
