"""Adaptive OPIC for one partition of the URL space (or a whole graph, offline), in memory.

Every known page has cash C and history H; a visit moves C into H (through the sliding
window, below) and the caller shares it over the page's out-links and the virtual page.
The engine conserves cash exactly: it only moves it between pages, the virtual page and,
for plain OPIC (no virtual page), a ``lost`` account for pages without out-links. Cash
that enters or leaves the partition (transfers to pages other partitions own) is counted
in ``received`` and ``sent``, so at every moment::

    sum of effective cash + virtual + lost == initial + received - sent

The virtual page gives its cash away in O(1), as dividends. A share ``virtual_to_all``
goes to every known page equally (``div_all`` per page, favouring accurate importance),
the rest to the pages not crawled yet in proportion to their discovery weight
(``div_new`` per unit of weight, favouring discovery; see ``discovery.py``). A page
remembers both levels when it joins or is settled, so its effective cash is::

    C + (div_all - mark_all) + [not crawled] * weight * (div_new - mark_new)

Sliding window (a changing graph): with S the time since the page's last visit and T the
window, a visit sets H = C * T / S if T < S, else H = H * (T - S) / T + C; then C = 0.
A page's first visit adds C to H.

Internal links: a page's cash is shared over its out-links by weight, ``internal_link_weight``
for a link to a page of its own site (same host and port), 1 for a link to another site, so a
page with links of both kinds sends most of its cash out of its site (``Shard.visit``; a page
whose links are all of one kind shares equally). Within a site the navigation links every page
to the home and section pages and the pages to each other: with equal shares, the cash that
entered a site (a seed's, or a rich page's) circulates among the site's uncrawled pages until
they are crawled, and a crawl spends its first pages on the few sites it entered first.

Replays: a crawled page keeps the followed out-links of its last crawl (fingerprints, the
partition owning each, and whether the link is internal, in the owner's top bit). Replaying it
is an OPIC visit without a fetch: its cash goes to its history through the window, as at a
crawl, and the caller shares it over those out-links, weighed as at the crawl, and the virtual
page (``Shard.replay``). OPIC's estimates converge as every
page's cash keeps being passed on; a crawl passes it on once per fetch, replays between
fetches pass it on without asking the web again (``docs/evaluation.md`` has the figures).

Importance X(i) = (H(i) + C(i)) / (|H| + total cash), where |H| is the history of all
partitions, estimated as ``partitions`` times this partition's (URLs are spread evenly
by their hash), and the total cash is ``partitions`` times the partition's initial
share; 1 / |H| is OPIC's convergence indicator.

State lives in flat typed arrays indexed by a dense slot number (about 70 bytes per URL
plus the key index), every page's URL in one byte string, and the out-links of crawled
pages as one byte string each; ``dirty`` holds the slots changed since the state was last
saved, ``links_dirty`` the crawled pages whose out-links changed since.

The boundary: :class:`OpicEngine` is the one state class of a partition, and its columns are
public. The stored ones (:data:`INT_COLUMNS`, :data:`FLOAT_COLUMNS`, ``flags``, the URLs and the
kept links) are what the state codec (``state_codec.py``) saves and loads; the derived ones
(:data:`DERIVED_COLUMNS`) are rebuilt after a load (``finish_load``) or, for ``shown``, start empty
so that every touched page is announced again. The shard (``shard.py``) reads and writes the
columns openly to share cash, replay and announce; the engine's methods hold OPIC's arithmetic
(visits, dividends, the window, conservation), which nothing else repeats.
"""

from __future__ import annotations

import heapq
import math
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from libs.common.url_keys import UrlKind
from services.importance.discovery import DiscoveryWeights

CRAWLED = 0x10
KIND_MASK = 0x0F
INTERNAL = 0x8000
"""Top bit of a kept link's owner: the link is internal (the partition is in the other 15 bits)."""
MAX_PARTITIONS = INTERNAL


@dataclass(frozen=True)
class OpicConfig:
    """How the engine moves cash (see the module docstring)."""

    virtual_page: bool = True
    """False: plain OPIC; the cash of a page without out-links is lost, nothing is redistributed."""
    virtual_share: float = 0.15
    """Share of a visit's cash that goes to the virtual page (all of it for a page without out-links)."""
    virtual_to_all: float = 0.0
    """Share of the virtual page's cash given to all known pages; the rest goes to uncrawled pages."""
    window_seconds: float = math.inf
    weights: DiscoveryWeights = field(default_factory=DiscoveryWeights)
    announce_growth: float = 1.0
    """An uncrawled home or index page is announced again once its cash grew by this factor."""
    announce_min_change: float = 0.0
    """A touched page is announced only if its cash moved by more than this share since it last was."""
    replays_per_visit: float = 0.0
    """Replays of crawled pages (``Shard.replay``) per crawl applied; 0: cash moves only at crawls."""
    internal_link_weight: float = 1.0
    """Weight of a link to a page of the same site in sharing a page's cash (other links: 1); 1: all alike."""
    partitions: int = 1

    def __post_init__(self) -> None:
        if not 0.0 <= self.virtual_share <= 1.0 or not 0.0 <= self.virtual_to_all <= 1.0:
            raise ValueError("virtual_share and virtual_to_all must be within [0, 1]")
        if self.window_seconds <= 0 or self.announce_growth <= 0 or not 1 <= self.partitions <= MAX_PARTITIONS:
            raise ValueError(f"window_seconds and announce_growth must be > 0, 1 <= partitions <= {MAX_PARTITIONS}")
        if not 0.0 < self.internal_link_weight <= 1.0:
            raise ValueError("internal_link_weight must be within (0, 1]")
        if self.announce_min_change < 0 or self.replays_per_visit < 0:
            raise ValueError("announce_min_change and replays_per_visit must be >= 0")


INT_COLUMNS: tuple[str, ...] = ("keys", "visits", "host")
"""Stored per-page columns of 64-bit integers: the URL fingerprint, visits, the host id."""
FLOAT_COLUMNS: tuple[str, ...] = ("cash", "history", "mark_new", "mark_all", "weight", "last_visit")
"""Stored per-page columns of doubles (``flags``, one byte per page, is stored beside them)."""
DERIVED_COLUMNS: tuple[str, ...] = ("shown",)
"""Per-page columns that are not stored: rebuilt or restarted after a load."""


@dataclass
class Totals:
    """The engine's scalars: everything besides the per-page arrays."""

    initial: float = 0.0
    virtual: float = 0.0
    div_new: float = 0.0
    weight_new: float = 0.0
    div_all: float = 0.0
    known: int = 0
    crawled: int = 0
    history: float = 0.0
    lost: float = 0.0
    received: float = 0.0
    sent: float = 0.0


class OpicEngine:
    """The AOPIC state of a set of pages, keyed by a 64-bit integer (the URL fingerprint)."""

    def __init__(self, config: OpicConfig, initial_cash: float) -> None:
        self.config = config
        self.totals = Totals(initial=initial_cash, virtual=initial_cash if config.virtual_page else 0.0)
        self.slots: dict[int, int] = {}
        self.keys = array("q")
        self.cash = array("d")
        self.history = array("d")
        self.mark_new = array("d")
        self.mark_all = array("d")
        self.weight = array("d")
        self.last_visit = array("d")
        self.visits = array("q")
        self.host = array("q")
        self.flags = bytearray()
        self.shown = array("d")
        """Cash last announced per page (not saved: after a load every touched page is announced)."""
        self.hosts: list[str] = []
        self.host_ids: dict[str, int] = {}
        self.host_size = array("q")
        self.host_sized = array("q")
        self.site_pages: dict[int, list[int]] = {}
        self.site_urls: dict[int, str] = {}
        self.url_text = bytearray()
        self.url_end = array("q")
        """Every page's URL: ``url_text[url_end[s - 1]:url_end[s]]`` (UTF-8; empty when not known)."""
        self.links: dict[int, bytes] = {}
        """Crawled page -> its followed out-links at its last crawl: n fingerprints (int64), then n owners (uint16)."""
        self.links_dirty: set[int] = set()
        self.rows_saved = 0
        """Slots below this are saved with their URLs (the state codec writes URLs of new rows only)."""
        self.dirty: set[int] = set()
        self._rounding = 0.5 * config.weights.smallest
        """Below this, ``weight_new`` is rounding left over: no uncrawled page has a weight."""
        self._watch: list[tuple[float, int]] = []
        self._watch_at: dict[int, float] = {}

    # pages ------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.keys)

    def slot(self, key: int) -> int | None:
        return self.slots.get(key)

    def host_id(self, host: str) -> int:
        hid = self.host_ids.get(host)
        if hid is None:
            hid = self.host_ids[host] = len(self.hosts)
            self.hosts.append(host)
            self.host_size.append(0)
            self.host_sized.append(1)
        return hid

    def add(self, key: int, host: str, kind: int, url: str = "") -> int:
        """The slot of ``key``, discovering the page (no cash, owed future dividends) if new."""
        s = self.slots.get(key)
        if s is not None:
            return s
        t = self.totals
        hid = self.host_id(host)
        s = self.slots[key] = len(self.keys)
        self.keys.append(key)
        self.cash.append(0.0)
        self.history.append(0.0)
        self.mark_new.append(t.div_new)
        self.mark_all.append(t.div_all)
        self.last_visit.append(0.0)
        self.visits.append(0)
        self.host.append(hid)
        self.flags.append(kind & KIND_MASK)
        self.shown.append(-1.0)
        self.url_text += url.encode("utf-8")
        self.url_end.append(len(self.url_text))
        size = self.host_size[hid] = self.host_size[hid] + 1
        w = self.config.weights.weight(kind, size)
        self.weight.append(w)
        t.weight_new += w
        t.known += 1
        self.dirty.add(s)
        if kind != UrlKind.PAGE:
            self.site_pages.setdefault(hid, []).append(s)
            if url:
                self.site_urls[s] = url
            self._arm(s)
        if size >= 2 * self.host_sized[hid] and self.config.weights.site_size_exponent > 0:
            self._reweight_site(hid)
        return s

    def _reweight_site(self, hid: int) -> None:
        """The site doubled since its pages were weighed: weigh its uncrawled home and index pages again."""
        self.host_sized[hid] = self.host_size[hid]
        pages = [s for s in self.site_pages.get(hid, ()) if not self.flags[s] & CRAWLED]
        self.site_pages[hid] = pages
        t = self.totals
        for s in pages:
            self.settle(s)
            w = self.config.weights.weight(self.flags[s] & KIND_MASK, self.host_size[hid])
            t.weight_new += w - self.weight[s]
            self.weight[s] = w
            self._arm(s)

    def url(self, s: int) -> str:
        """The page's normalised URL ("" if the state never had it: saved before URLs were kept)."""
        end = self.url_end[s]
        return self.url_text[self.url_end[s - 1] if s else 0 : end].decode("utf-8") or self.site_urls.get(s, "")

    def keep_links(self, s: int, keys: Sequence[int], owners: Sequence[int],
                   internal: Sequence[bool] | None = None) -> None:
        """Remembers the followed out-links of the page's crawl (replayed until its next crawl).

        ``internal`` flags the links to pages of the page's own site (kept in the owners' top bit).
        """
        kept = array("H", owners)
        if internal is not None:
            kept = array("H", [o | INTERNAL if i else o for o, i in zip(owners, internal, strict=True)])
        self.links[s] = array("q", keys).tobytes() + kept.tobytes()
        self.links_dirty.add(s)

    def kept_links(self, s: int) -> tuple[array[int], array[int]] | None:
        """The out-links kept for the page (fingerprints, owners), or None if it has none kept."""
        kept = self.kept_links_flagged(s)
        return None if kept is None else kept[:2]

    def kept_links_flagged(self, s: int) -> tuple[array[int], array[int], list[bool] | None] | None:
        """The out-links kept for the page: fingerprints, owners and which are internal (None: none is)."""
        raw = self.links.get(s)
        if raw is None:
            return None
        n = len(raw) // 10
        keys, owners = array("q"), array("H")
        keys.frombytes(raw[: 8 * n])
        owners.frombytes(raw[8 * n :])
        if not owners or max(owners) < INTERNAL:
            return keys, owners, None
        internal = [o >= INTERNAL for o in owners]
        return keys, array("H", [o & ~INTERNAL for o in owners]), internal

    def crawled(self, s: int) -> bool:
        return bool(self.flags[s] & CRAWLED)

    def effective_cash(self, s: int) -> float:
        t = self.totals
        c = self.cash[s] + (t.div_all - self.mark_all[s])
        if not self.flags[s] & CRAWLED:
            c += self.weight[s] * (t.div_new - self.mark_new[s])
        return c

    def settle(self, s: int) -> float:
        """Turns the page's dividends into cash of its own; returns its effective cash."""
        c = self.effective_cash(s)
        self.cash[s] = c
        self.mark_all[s] = self.totals.div_all
        self.mark_new[s] = self.totals.div_new
        self.dirty.add(s)
        return c

    def importance(self, s: int) -> float:
        t = self.totals
        return (self.history[s] + self.effective_cash(s)) / (self.config.partitions * (t.history + t.initial))

    # cash movements ----------------------------------------------------------------------
    def visit(self, s: int, at: float) -> float:
        """Crawls the page at time ``at`` (seconds): its cash goes to history; returns that cash."""
        t = self.totals
        c = self.settle(s)
        if not self.flags[s] & CRAWLED:
            self.flags[s] |= CRAWLED
            t.weight_new -= self.weight[s]
            self.weight[s] = 0.0
            t.crawled += 1
            self._watch_at.pop(s, None)
        self._to_history(s, c, at, first=self.visits[s] == 0)
        self.visits[s] += 1
        return c

    def replay(self, s: int, at: float) -> float:
        """Replays a crawled page at time ``at``: its cash goes to history as at a crawl; returns that cash.

        Not counted in ``visits`` (crawls); ``last_visit`` is the last time its cash went to history.
        """
        c = self.settle(s)
        self._to_history(s, c, at, first=False)
        return c

    def _to_history(self, s: int, c: float, at: float, first: bool) -> None:
        old = self.history[s]
        window = self.config.window_seconds
        if first or window == math.inf:  # no window: the history is the sum of all visits
            new = old + c
        else:
            span = max(0.0, at - self.last_visit[s])
            new = c * window / span if window < span else old * (window - span) / window + c
        self.history[s] = new
        self.totals.history += new - old
        self.cash[s] = 0.0
        self.last_visit[s] = at

    def give(self, s: int, amount: float) -> None:
        self.cash[s] += amount
        self.dirty.add(s)

    def to_virtual(self, amount: float) -> None:
        """Cash for the virtual page; without one (plain OPIC) it is lost."""
        if self.config.virtual_page:
            self.totals.virtual += amount
        else:
            self.totals.lost += amount

    def receive(self, amount: float) -> None:
        """Book cash that arrived from another partition (the caller gives it to pages)."""
        self.totals.received += amount

    def send(self, amount: float) -> None:
        """Book cash that leaves for pages another partition owns."""
        self.totals.sent += amount

    def endow(self, s: int, amount: float) -> None:
        """Initial cash put on a page directly (plain OPIC's seeds), taken from the virtual page if any."""
        if self.config.virtual_page:
            self.totals.virtual -= amount
        self.give(s, amount)

    def distribute(self) -> None:
        """The virtual page gives its cash away (see the module docstring); O(1)."""
        t = self.totals
        if t.virtual == 0.0 or not self.config.virtual_page:
            return
        # weight_new is a running sum: once no uncrawled page has a weight, what is left is rounding
        weighted = t.weight_new >= self._rounding
        to_all = t.virtual * self.config.virtual_to_all if weighted else t.virtual
        to_new = t.virtual - to_all
        if to_new > 0.0:
            t.div_new += to_new / t.weight_new
        if to_all > 0.0:
            if t.known == 0:
                return
            t.div_all += to_all / t.known
        t.virtual = 0.0

    # announcements -----------------------------------------------------------------------
    def _arm(self, s: int) -> None:
        """Watch an uncrawled home or index page: announce it again once its cash has grown enough."""
        w = self.weight[s]
        if w <= 0.0:
            return
        c = self.effective_cash(s)
        at = self.totals.div_new + self.config.announce_growth * max(c, 1e-300) / w
        self._watch_at[s] = at
        heapq.heappush(self._watch, (at, s))

    def announced(self, s: int) -> None:
        """The page's cash was just announced: an uncrawled home or index page is watched from this level on."""
        flags = self.flags[s]
        if flags & KIND_MASK != UrlKind.PAGE and not flags & CRAWLED:
            self._arm(s)

    def due(self) -> list[int]:
        """Watched pages whose cash grew past their threshold since they were last announced."""
        level = self.totals.div_new
        out: list[int] = []
        watch = self._watch
        while watch and watch[0][0] <= level:
            at, s = heapq.heappop(watch)
            if self._watch_at.get(s) == at:
                del self._watch_at[s]
                out.append(s)
        return out

    def watched(self) -> Iterable[int]:
        return self._watch_at.keys()

    def rearm_all(self) -> None:
        """After loading a saved state: watch every uncrawled home and index page again."""
        self._watch.clear()
        self._watch_at.clear()
        for pages in self.site_pages.values():
            for s in pages:
                if not self.flags[s] & CRAWLED:
                    self._arm(s)

    # checks ------------------------------------------------------------------------------
    def accounted(self) -> float:
        """All cash the partition holds (pages, virtual page, lost), summed exactly: O(pages)."""
        parts = [self.effective_cash(s) for s in range(len(self.keys))]
        parts += [self.totals.virtual, self.totals.lost]
        return math.fsum(parts)

    def expected(self) -> float:
        t = self.totals
        return math.fsum([t.initial, t.received, -t.sent])

