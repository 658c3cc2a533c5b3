"""What the frontier tells the policies built on it, inside its own transactions.

The frontier stores; policies decide. They meet at one interface, :class:`FrontierListener`:
the frontier calls each listener it was given, in order, on the events it applies, with the
transaction's connection, so a listener's writes commit or roll back with the frontier's.
Two sides listen: a crawl goal's site statistics (``services/scheduler/bandits/goal_sites.py``)
and the freshness revisit plans (``services/scheduler/freshness/revisit_hook.py``). Freshness
also plans a fetched page's next fetch before its outcome applies (:class:`RevisitPlanning`),
since the outcome's own update writes that plan.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from psycopg import AsyncConnection


@dataclass(frozen=True)
class FetchedPage:
    url_fp: int
    url: str
    host: str
    unchanged_at: datetime | None = None  # fetched with a 304 at this time: the page was seen unchanged


@dataclass(frozen=True)
class RevisitPlan:
    """A fetched page's next fetch, written by the update that applies its outcome."""

    due: datetime
    change_probability: float
    freshness_gain: float


@dataclass(frozen=True)
class EndedFetch:
    """A URL whose fetch ended (any final status; a retry has not ended)."""

    url_fp: int
    host: str
    fetched: bool


@dataclass(frozen=True)
class AppliedOutcomes:
    """The outcomes of one batch that applied (stale and repeated ones left out)."""

    ended: Sequence[EndedFetch]
    fetched: Sequence[FetchedPage]  # the pages among them now fetched
    plans: Mapping[int, RevisitPlan]  # the revisit plans written with them (by URL fingerprint)


class FrontierListener(Protocol):
    """Told of what the frontier applied, on the frontier transaction's connection."""

    async def discovered(self, conn: AsyncConnection[Any], found: Mapping[int, tuple[str, int]]) -> None:
        """URLs entered the frontier for the first time: page fingerprint -> (its host, how many were found on it)."""
        ...

    async def outcomes_applied(self, conn: AsyncConnection[Any], applied: AppliedOutcomes) -> None:
        """Fetch outcomes applied: URLs whose fetch ended, pages fetched (their frontier rows locked)."""
        ...


class RevisitPlanning(FrontierListener, Protocol):
    """A listener that also plans the next fetch of pages an outcome reports fetched.

    ``plan_fetched`` runs before the outcomes are applied (it locks nothing), for every page an
    outcome reports fetched; :meth:`FrontierListener.outcomes_applied` then gets the plans it
    made, for the pages whose outcome applied.
    """

    async def plan_fetched(self, conn: AsyncConnection[Any], pages: Sequence[FetchedPage]) -> Mapping[int, RevisitPlan]:
        ...
