"""Deterministic pseudo-English: titles, paragraphs and anchor phrases from a seed.

Sentences follow a small grammar (noun phrase, verb, object, optional clause) over
a few hundred real words with Zipf-like frequencies, so a text extractor sees
ordinary prose and two unrelated pages share few word n-grams (near-duplicate
detection then has something to tell apart). Everything is a pure function of
its seed: a page stores only a :class:`TextSpec` and its text is rebuilt on demand.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate


def _unique(words: str) -> list[str]:
    return list(dict.fromkeys(words.split()))


NOUNS = _unique("""
harbor engine river lantern market garden village council budget signal forest bridge
library museum station window mountain valley farmer teacher doctor engineer captain
artist writer student neighbor family company factory orchard kitchen winter summer
autumn spring morning evening season journey festival harvest record letter report
story question answer problem method theory model pattern network system server crawler
archive language history science music painting sculpture theater island coast harbour
lighthouse railway tunnel highway airport canal reservoir meadow desert glacier volcano
storm weather climate rainfall drought river basin delta estuary wetland prairie canyon
plateau ridge summit cabin cottage castle tower chapel square avenue street district
province region nation border treaty election senate committee mayor minister reporter
editor publisher magazine journal column headline interview survey census ledger
account invoice contract partner supplier customer product service platform device
battery circuit sensor motor turbine reactor pipeline harbor crane vessel cargo
container warehouse bakery brewery vineyard cellar recipe flavor spice orchard apple
pear cherry plum olive wheat barley maize rice coffee tea cocoa sugar salt copper iron
silver timber stone marble granite clay glass paper ink canvas thread fabric wool
cotton leather rope anchor sail compass map atlas telescope microscope laboratory
experiment sample measure ratio signal noise frequency rhythm melody chorus orchestra
violin piano drum trumpet guitar choir dancer painter poet novelist historian
""")

VERBS = _unique("""
opened closed built carried found moved raised lowered crossed followed measured
studied described painted wrote printed published repaired replaced designed planned
changed reached joined left covered shaped tested checked counted gathered shared
collected explained improved reduced increased delivered received protected restored
visited watched noticed recorded reported announced approved rejected signed traded
shipped loaded unloaded planted harvested cooked tasted baked brewed poured mixed
weighed sorted listed indexed linked crawled fetched parsed stored archived mapped
charted surveyed explored climbed sailed rowed drove flew walked guided warned praised
questioned answered debated funded hired trained welcomed hosted organized launched
""")

ADJECTIVES = _unique("""
quiet bright early late small large narrow wide ancient modern northern southern
eastern western coastal rural urban local regional national public private careful
patient steady sudden gradual warm cold dry wet green golden silver wooden stone
heavy light rapid slow simple complex familiar unusual rare common fresh seasonal
annual weekly daily remote nearby central distant hidden open crowded empty busy
gentle rough smooth sharp clear cloudy calm windy sunny frozen crisp mild bitter
sweet salty tall short broad deep shallow new old young mature clever curious bold
modest generous strict formal casual practical useful careful honest reliable
""")

ADVERBS = _unique("""
quickly slowly carefully quietly often rarely finally recently gradually suddenly
openly gently firmly nearly mostly partly briefly steadily eventually already
""")

PREPOSITIONS = _unique("of in near across beside beyond under over through along behind toward with from")
# Repeats weight the draw: "the" three times as likely as "this".
DETERMINERS = ["the", "the", "the", "a", "a", "this", "that", "every", "each", "one", "another", "their"]
FIRST_NAMES = ["Ada", "Ben", "Chen", "Dara", "Eli", "Farah", "Gus", "Hana", "Ivo", "June", "Kai", "Lena"]
CONJUNCTIONS = ["and", "but", "while", "because", "although", "so", "after", "before"]
LINK_LEADS = ["See also", "Read more in", "Related:", "As covered in", "Compare with", "Background:"]


@dataclass(frozen=True)
class TextSpec:
    """Seed of an article's prose; two pages with equal specs have equal text."""

    seed: int
    paragraphs: int
    edit_seed: int | None = None
    """When set, ``edits`` words are replaced (a near-duplicate of the unedited text)."""
    edits: int = 0


def _zipf_cum(n: int, exponent: float = 0.5) -> list[float]:
    return list(accumulate(1.0 / (rank + 1) ** exponent for rank in range(n)))


_NOUN_CUM = _zipf_cum(len(NOUNS))
_VERB_CUM = _zipf_cum(len(VERBS))
_ADJ_CUM = _zipf_cum(len(ADJECTIVES))
_NOUN_SET = frozenset(NOUNS)


class _Writer:
    """Builds sentences from one random stream."""

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng

    def _noun_phrase(self, words: list[str]) -> None:
        rng = self._rng
        determiner = rng.choice(DETERMINERS)
        adjective = rng.choices(ADJECTIVES, cum_weights=_ADJ_CUM)[0] if rng.random() < 0.55 else ""
        noun = rng.choices(NOUNS, cum_weights=_NOUN_CUM)[0]
        if determiner == "a" and (adjective or noun)[0] in "aeiou":
            determiner = "an"
        words.append(determiner)
        if adjective:
            words.append(adjective)
        words.append(noun)

    def _clause(self, words: list[str]) -> None:
        rng = self._rng
        self._noun_phrase(words)
        if rng.random() < 0.2:
            words.append(rng.choice(ADVERBS))
        words.append(rng.choices(VERBS, cum_weights=_VERB_CUM)[0])
        self._noun_phrase(words)
        if rng.random() < 0.6:
            words.append(rng.choice(PREPOSITIONS))
            self._noun_phrase(words)

    def sentence(self) -> list[str]:
        words: list[str] = []
        self._clause(words)
        if self._rng.random() < 0.45:
            words[-1] += ","
            words.append(self._rng.choice(CONJUNCTIONS))
            self._clause(words)
        words[0] = words[0].capitalize()
        words[-1] += "."
        return words

    def paragraph(self) -> list[str]:
        words: list[str] = []
        for _ in range(self._rng.randint(3, 7)):
            words.extend(self.sentence())
        return words


def title(seed: int) -> str:
    """A short headline, title-cased."""
    rng = random.Random(seed)
    adjective = rng.choices(ADJECTIVES, cum_weights=_ADJ_CUM)[0]
    noun = rng.choices(NOUNS, cum_weights=_NOUN_CUM)[0]
    other = rng.choice(NOUNS)
    shape = rng.randrange(3)
    if shape == 0:
        words = ["the", adjective, noun, rng.choice(PREPOSITIONS), "the", other]
    elif shape == 1:
        words = [adjective, noun, "and", rng.choice(ADJECTIVES), other]
    else:
        words = ["how", "the", noun, rng.choices(VERBS, cum_weights=_VERB_CUM)[0], "the", other]
    return " ".join(word.capitalize() if i == 0 or len(word) > 3 else word for i, word in enumerate(words))


def brand(seed: int) -> str:
    """A site name such as ``Quiet Harbor``."""
    rng = random.Random(seed)
    return f"{rng.choice(ADJECTIVES).capitalize()} {rng.choice(NOUNS).capitalize()}"


def person(seed: int) -> str:
    """A byline name."""
    rng = random.Random(seed)
    first = rng.choice(FIRST_NAMES)
    last = rng.choice(NOUNS).capitalize()
    return f"{first} {last}"


@lru_cache(maxsize=2048)
def paragraphs(spec: TextSpec) -> tuple[str, ...]:
    """The article's paragraphs as plain text (cached: rendering and ``Page.text`` both ask)."""
    writer = _Writer(random.Random(spec.seed))
    blocks = [writer.paragraph() for _ in range(spec.paragraphs)]
    if spec.edit_seed is not None and spec.edits > 0:
        edit_rng = random.Random(spec.edit_seed)
        positions = [
            (b, w)
            for b, block in enumerate(blocks)
            for w, word in enumerate(block)
            if word.rstrip(".,") in _NOUN_SET
        ]
        for b, w in edit_rng.sample(positions, min(spec.edits, len(positions))):
            old = blocks[b][w]
            core = old.rstrip(".,")
            replacement = edit_rng.choice(NOUNS)
            while replacement == core:
                replacement = edit_rng.choice(NOUNS)
            blocks[b][w] = replacement + old[len(core):]
    return tuple(" ".join(block) for block in blocks)


def link_slots(links: int, paragraph_count: int) -> list[list[int]]:
    """Which article links close which paragraph: link ``m`` goes to paragraph ``m % paragraph_count``."""
    slots: list[list[int]] = [[] for _ in range(paragraph_count)]
    for m in range(links):
        slots[m % paragraph_count].append(m)
    return slots


def link_lead(m: int) -> str:
    """Words before the ``m``-th article link, e.g. ``See also``."""
    return LINK_LEADS[m % len(LINK_LEADS)]


def article_text(spec: TextSpec, anchors: list[str]) -> str:
    """Plain text of an article with its inline links (what a main-text extractor should find)."""
    texts = paragraphs(spec)
    out = []
    for index, members in enumerate(link_slots(len(anchors), len(texts))):
        tail = "".join(f" {link_lead(m)} {anchors[m]}." for m in members)
        out.append(texts[index] + tail)
    return "\n\n".join(out)
