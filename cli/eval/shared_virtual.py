"""What-if for the ordering evaluator: the partitions' virtual pages paying as one.

In the service each partition has its own virtual page: it collects the virtual share of the
visits of that partition's pages and pays it to that partition's pages only (to the uncrawled
ones by discovery weight while any has a weight, else to every known page alike). With one
partition the virtual page pays the whole crawl's pages alike; split in twelve, what a page is
paid depends on what its partition happened to collect and how many pages it happens to know.

:class:`SharedVirtualPage` lets the evaluator measure how much of the ordering gap between one
partition and twelve that accounts for, by pooling the partitions' virtual cash whenever one of
them pays it out, and paying it with the same dividend per unit of weight (or per known page) in
every partition, as one virtual page would:

- ``weighted``: pooled while some partition has uncrawled pages with a discovery weight; once
  none has, each partition pays its own known pages (as the service does);
- ``all``: pooled always, the known pages of all partitions paid alike once no page has a weight.

Cash stays conserved over the partitions together (each partition's own account of what it
received and sent does not record the pooled cash). This is the evaluator's alone: the service
does not pool its partitions' virtual pages (``docs/evaluation.md`` has the figures).
"""

from __future__ import annotations

import math

from services.importance.engine import OpicConfig, OpicEngine

MODES = ("none", "weighted", "all")


class SharedVirtualPage:
    """The pool the partitions' engines pay their virtual cash through."""

    def __init__(self, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown shared virtual page mode {mode!r}; known: {', '.join(MODES)}")
        self.mode = mode
        self.engines: list[PooledEngine] = []

    def engine(self, config: OpicConfig, initial_cash: float) -> OpicEngine:
        """An engine for one partition: pooled unless the mode is ``none``."""
        if self.mode == "none":
            return OpicEngine(config, initial_cash)
        engine = PooledEngine(config, initial_cash, self)
        self.engines.append(engine)
        return engine

    def distribute(self, caller: PooledEngine) -> bool:
        """Pays every partition's virtual cash as one virtual page; False: ``caller`` pays its own."""
        engines = self.engines
        total = math.fsum(e.totals.virtual for e in engines)
        if total == 0.0:
            return True
        rounding = 0.5 * caller.config.weights.smallest
        weighted = [e for e in engines if e.totals.weight_new >= rounding]
        if not weighted and self.mode == "weighted":
            return False
        weight = math.fsum(e.totals.weight_new for e in weighted)
        to_all = total * caller.config.virtual_to_all if weighted else total
        to_new = total - to_all
        known = [e for e in engines if e.totals.known > 0]
        count = sum(e.totals.known for e in known)
        if to_all > 0.0 and count == 0:
            return True  # nothing to pay yet: the cash waits in the partitions' virtual pages
        for e in engines:
            e.totals.virtual = 0.0
        for e in weighted:
            e.totals.div_new += to_new / weight
        for e in known:
            e.totals.div_all += to_all / count
        return True


class PooledEngine(OpicEngine):
    """A partition's engine whose virtual page pays through a :class:`SharedVirtualPage`."""

    def __init__(self, config: OpicConfig, initial_cash: float, pool: SharedVirtualPage) -> None:
        super().__init__(config, initial_cash)
        self._pool = pool

    def distribute(self) -> None:
        if not self.config.virtual_page or not self._pool.distribute(self):
            super().distribute()
