"""One partition of the importance state: visits, incoming transfers, outgoing transfers, announcements.

The service keeps one shard per partition it owns; the ordering evaluator keeps one per
simulated partition (one by default) and hands transfers over directly. A visit shares
the page's cash over its followed out-links and the virtual page: targets this partition
owns get their share at once, the others are collected in ``outgoing`` by owner, to
travel as cash-transfer messages. ``announcements`` lists every page whose cash changed
(by more than ``announce_min_change`` of what was last announced for it), every page visited
since (whatever its change: a visit empties its cash, but dividends the virtual page paid out
after it may leave a little), and every home or index page whose dividends grew past its watch
threshold. Pages are given as
fingerprint and normalised URL; the host is read from the URL only when a page is new
or announced.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any, NamedTuple

from prometheus_client import Counter

from libs.common.url_keys import UrlKind, normalized_host, url_kind
from services.importance.engine import CRAWLED, KIND_MASK, OpicEngine

REPLAYS = Counter("trawl_importance_replays_total", "Crawled pages replayed: cash passed on over kept out-links.")
UNKNOWN_TARGETS = Counter(
    "trawl_importance_replay_unknown_targets_total",
    "Replayed shares for pages their partition did not know (their cash kept, the page not announced).",
)


def replay_priority(engine: OpicEngine, s: int) -> float:
    """C / sqrt(H + C): which crawled page a replay takes first.

    Between the most cash first (C: the largest pages, replayed again and again while the cash of
    the many small ones waits) and the largest share of its estimate not passed on yet
    (C / (H + C): all pages alike). On the evaluator's graphs this gives the estimates closest to
    PageRank after one pass (``docs/evaluation.md``).
    """
    c = engine.effective_cash(s)
    return c / math.sqrt(engine.history[s] + c) if c > 0.0 else 0.0


def site_prefix(url: str) -> str:
    """What a URL in normal form of the same site as ``url`` has after its scheme: ``host[:port]/``."""
    start = url.find("://") + 3
    end = url.find("/", start)
    return url[start:] + "/" if end < 0 else url[start : end + 1]


def internal_links(url: str, targets: Sequence[str]) -> list[bool]:
    """Which of ``targets`` (URLs in normal form) are on the site of ``url``: the same host and port, any scheme."""
    prefix = site_prefix(url)
    return [t.startswith(prefix, t.find("://") + 3) for t in targets]


class Announcement(NamedTuple):
    """A page's importance as the scheduler gets it (an importance update)."""

    key: int
    url: str
    host: str
    cash: float
    history: float
    importance: float


@dataclass
class Outgoing:
    """Shares for the pages of one other partition, as parallel lists."""

    keys: list[int] = field(default_factory=list)
    urls: list[str] = field(default_factory=list)
    cash: list[float] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.keys)


class Shard:
    def __init__(self, partition: int, engine: OpicEngine) -> None:
        self.partition = partition
        self.engine = engine
        self.outgoing: dict[int, Outgoing] = {}
        self._touched: dict[int, str | int] = {}
        """Slot -> its URL, or where it is: ``source << 32 | index`` into ``_sources`` (received URL lists)."""
        self._sources: list[Sequence[str]] = []
        self._visited: set[int] = set()
        """Slots visited since the last announcements: always announced."""
        self._seeded: dict[int, str] = {}
        """Seeded pages since the last announcements (slot -> URL): announced once the virtual page paid them."""
        self._credit = 0.0
        """Replays earned by crawls and not made yet."""
        self._heap: list[tuple[float, int]] = []
        """(-replay priority, slot) of crawled pages with kept out-links, possibly out of date (see ``replay``)."""
        self._heap_stale = True
        self._changed: set[int] = set()
        """Pages that received cash since the replay heap was last brought up to date (with replays on)."""
        self.replayed_links = 0
        """Shares replays passed over kept out-links (link transfers), since the shard was made."""

    def page(self, key: int, url: str) -> int:
        """The slot of the page, added (discovered) if new."""
        s = self.engine.slots.get(key)
        if s is None:
            s = self.engine.add(key, normalized_host(url), url_kind(url), url)
        return s

    def seed(self, key: int, url: str) -> None:
        """A page an operator seeded, known before its first crawl (added if new).

        The virtual page pays it from the next distribution on, as AOPIC's start pages are paid
        (with only seeds known, the cash of the start goes to them alike), so its first crawl has
        cash to pass on to its links. It is announced with the batch once it has cash: a seed added
        late in a crawl may have none yet, and an announced zero would rank it below every URL whose
        cash was never announced.
        """
        self._seeded[self.page(key, url)] = url

    def visit(self, key: int, url: str, target_keys: Sequence[int], target_urls: Sequence[str], owners: Sequence[int],
              at: float) -> None:
        """Applies a crawl of a page whose followed out-links are the targets (not the page itself; a target
        the page links several times may come as many times, a share each).

        ``owners`` gives the partition of each target; ``at`` is the crawl time in seconds. With
        replays on, the out-links are kept for them and the crawl earns ``replays_per_visit`` replays.
        With ``internal_link_weight`` below 1 the targets on the page's own site are found by their
        URLs (``internal_links``) and get that weight in the shares.
        """
        engine = self.engine
        s = self.page(key, url)
        cash = engine.visit(s, at)
        self._touched[s] = url
        self._visited.add(s)
        internal = internal_links(url, target_urls) if engine.config.internal_link_weight != 1.0 else None
        replays = engine.config.replays_per_visit
        if replays:
            engine.keep_links(s, target_keys, owners, internal)
            self._credit += replays
        self._share(cash, target_keys, target_urls, owners, internal)

    def replay(self, at: float) -> int:
        """Replays as many crawled pages as the crawls since earned, highest priority first; returns how many.

        A replay is a visit without a fetch (``OpicEngine.replay``) over the out-links kept from the
        page's last crawl. Unlike a crawl it is not announced whatever the change: the scheduler
        keeps the cash last announced for the page (what it received since its crawl, announced as
        it grew), which weighs its refetch; a replay moves that cash on in the computation only.

        Pages are taken from a max-heap of ``replay_priority`` that is brought up to date lazily:
        every crawled page that received cash is pushed with its priority (here, or at the
        announcements that follow a change), and an entry whose page's priority fell below what it
        recorded is pushed again with the current one instead of being replayed.
        """
        engine = self.engine
        links = engine.links
        heap = self._heap
        if self._heap_stale or len(heap) > 4 * len(links) + 10_000:
            heap[:] = [(-p, s) for s in links if (p := replay_priority(engine, s)) > 0.0]
            heapq.heapify(heap)
            self._heap_stale = False
            self._changed.clear()
        else:
            self._note_changed()
        done = 0
        budget = int(self._credit)
        while done < budget and heap:
            recorded, s = heapq.heappop(heap)
            priority = replay_priority(engine, s)
            if priority <= 0.0:
                continue
            if priority < -recorded * (1.0 - 1e-9):
                heapq.heappush(heap, (-priority, s))
                continue
            kept = engine.kept_links_flagged(s)
            if kept is None:
                continue
            keys, owners, internal = kept
            cash = engine.replay(s, at)
            self._touched.setdefault(s, "")  # announced by the usual rule (a drop to 0 is not, see the docstring)
            self._share(cash, keys, None, owners, internal)
            self.replayed_links += len(keys)
            self._note_changed()  # its targets here may be next
            done += 1
        self._credit = 0.0 if not heap else self._credit - done
        REPLAYS.inc(done)
        return done

    def _note_changed(self) -> None:
        """Pushes the crawled pages whose cash grew since the last call onto the replay heap."""
        changed = self._changed
        if self._heap_stale:
            changed.clear()
            return
        engine, links, heap = self.engine, self.engine.links, self._heap
        for s in changed:
            if s in links:
                heapq.heappush(heap, (-replay_priority(engine, s), s))
        changed.clear()

    def _share(self, cash: float, target_keys: Sequence[int], target_urls: Sequence[str] | None,
               owners: Sequence[int], internal: Sequence[bool] | None = None) -> None:
        """Shares a visited page's cash over its targets and the virtual page.

        ``target_urls`` None (a replay): the targets are known pages; shares for other partitions
        travel without URLs, their owners have them. ``internal`` flags the targets on the page's
        site, which weigh ``internal_link_weight`` against 1 for the others (None: all weigh 1).
        """
        engine = self.engine
        touched = self._touched
        n = len(target_keys)
        if n == 0:
            engine.to_virtual(cash)
            engine.distribute()
            return
        virtual = cash * engine.config.virtual_share if engine.config.virtual_page else 0.0
        inside = sum(internal) if internal is not None else 0
        amounts: Iterable[float]
        mixed = 0 < inside < n
        if mixed:  # links of both kinds: an internal one gets its weight's part of an external one's share
            weight = engine.config.internal_link_weight
            share = (cash - virtual) / (n - inside + weight * inside)
            small = share * weight
            amounts = [small if i else share for i in internal or ()]
            virtual = cash - math.fsum((share * (n - inside), small * inside))
        else:
            share = (cash - virtual) / n
            amounts = repeat(share, n)
            virtual = cash - share * n
        here = self.partition
        slots, balances, dirty, outgoing = engine.slots, engine.cash, engine.dirty, self.outgoing
        changed = self._changed if engine.config.replays_per_visit else None
        sent, sent_cash = 0, 0.0
        urls = target_urls if target_urls is not None else [""] * n
        for tkey, turl, part, amount in zip(target_keys, urls, owners, amounts, strict=True):
            if part == here:
                st = slots.get(tkey)
                if st is None:
                    if target_urls is None:  # a kept link to a page this partition does not know
                        UNKNOWN_TARGETS.inc()
                        virtual += amount
                        continue
                    st = engine.add(tkey, normalized_host(turl), url_kind(turl), turl)
                balances[st] += amount
                dirty.add(st)
                if changed is not None:
                    changed.add(st)
                touched[st] = turl
            else:
                out = outgoing.get(part)
                if out is None:
                    out = outgoing[part] = Outgoing()
                keys = out.keys
                if keys and keys[-1] == tkey:  # the same target again (a link the page repeats): one share more
                    out.cash[-1] += amount
                else:
                    keys.append(tkey)
                    out.urls.append(turl)
                    out.cash.append(amount)
                sent += 1
                sent_cash += amount
        if sent:
            engine.send(sent_cash if mixed else share * sent)
        engine.to_virtual(virtual)
        engine.distribute()

    def receive(self, keys: Sequence[int], urls: Sequence[str], amounts: Sequence[float]) -> None:
        """Applies one incoming transfer: ``amounts[i]`` for the page ``keys[i]`` / ``urls[i]`` this partition owns.

        The URLs are read only for new pages (and, later, for the pages announced): each one read
        from a decoded message is a new string, and most of the pages got cash before.
        """
        n = len(keys)
        if not n == len(urls) == len(amounts):
            raise ValueError("cash transfer lists of different lengths")
        engine = self.engine
        get = engine.slots.get
        key_list, amount_list = keys[:], amounts[:]  # slicing a decoded message's list is its fastest read
        slots: list[Any] = list(map(get, key_list))  # ints once the new pages are added
        balances = engine.cash
        start = 0
        if None in slots:  # new pages, each added before the amounts that follow it (as one loop would)
            for i in [i for i, s in enumerate(slots) if s is None]:
                for s, amount in zip(slots[start:i], amount_list[start:i], strict=True):
                    balances[s] += amount
                key = key_list[i]
                s = get(key)
                if s is None:
                    url = urls[i]
                    if not url:  # a replayed share for a page this partition does not know: kept, not announced
                        UNKNOWN_TARGETS.inc()
                    s = engine.add(key, normalized_host(url), url_kind(url), url)
                slots[i] = s
                start = i
        for s, amount in zip(slots[start:], amount_list[start:], strict=True):
            balances[s] += amount
        engine.dirty.update(slots)
        if engine.config.replays_per_visit:
            self._changed.update(slots)
        base = len(self._sources) << 32
        self._sources.append(urls)
        self._touched.update(zip(slots, range(base, base + n), strict=True))
        engine.receive(sum(amount_list))

    def take_outgoing(self) -> dict[int, Outgoing]:
        out, self.outgoing = self.outgoing, {}
        return out

    def announcements(self) -> list[Announcement]:
        """Pages to announce since the last call (see the module docstring); clears the list."""
        engine = self.engine
        if engine.config.replays_per_visit:
            self._note_changed()
        touched, self._touched = self._touched, {}
        if self._seeded:
            engine.distribute()  # seeds alone in a batch: nothing else paid the virtual page out
            for s, seeded in self._seeded.items():
                if engine.effective_cash(s) > 0.0:
                    touched.setdefault(s, seeded)
            self._seeded = {}
        visited, self._visited = self._visited, set()
        for s in engine.due():
            url = engine.site_urls.get(s)
            if url is not None:
                touched[s] = url
                engine.shown[s] = -1.0  # due: announced whatever the change
        out = []
        sources, self._sources = self._sources, []
        keys, shown, history, balances, flags = engine.keys, engine.shown, engine.history, engine.cash, engine.flags
        hosts, host_of = engine.hosts, engine.host  # the host of a page's URL, as it was added
        mark_all, mark_new, weight = engine.mark_all, engine.mark_new, engine.weight
        t = engine.totals
        div_all, div_new = t.div_all, t.div_new
        denominator = engine.config.partitions * (t.history + t.initial)
        min_change = engine.config.announce_min_change
        for s, ref in touched.items():
            cash = balances[s] + (div_all - mark_all[s])  # effective_cash, inlined: this runs for every touched page
            if not flags[s] & CRAWLED:
                cash += weight[s] * (div_new - mark_new[s])
            last = shown[s]
            if last >= 0.0 and abs(cash - last) <= min_change * last and (cash > 0.0 or last == 0.0) \
                    and s not in visited:
                continue
            shown[s] = cash
            if flags[s] & KIND_MASK != UrlKind.PAGE:
                engine.announced(s)
            h = history[s]
            url = ref if isinstance(ref, str) else sources[ref >> 32][ref & 0xFFFFFFFF]
            if not url:  # touched by a replay: the URL is in the state
                url = engine.url(s)
                if not url:
                    continue
            out.append(Announcement(keys[s], url, hosts[host_of[s]], cash, h, (h + cash) / denominator))
        return out
