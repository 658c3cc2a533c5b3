"""Generates the labelled near-duplicate pairs set, ``tests/data/dedup/pairs.jsonl.gz``.

Every line is ``{"a": ..., "b": ..., "duplicate": true|false, "category": ...}``; ``a`` and
``b`` are whole HTML pages (templated sites, where the extractor's boilerplate removal is
part of what is tested) or main text, one paragraph per line (as the extractor hands it to
dedup). The prose comes from the simulated web's seeded writer (``libs.simweb.words``), so
the set is a pure function of ``--seed``.

Duplicates (the same article):
  other_template      the article syndicated on another site (another template around it)
  boilerplate_changes one site, one article, different menus, "most read" lists, dates, notices
  small_edits         1 word edit per 100 words at most (at least one): typo fixes, updated
                      numbers, a substituted, inserted or deleted word
  revised             2 to 3 word edits per 100 words (a copy edited after publication)
  brief_edited        a one-paragraph news brief with one or two word edits
  reordered           paragraphs in another order, possibly with one word edit
  sentence_changed    one sentence added (an update line) or removed
  leaked_boilerplate  main text with different navigation and footer lines left in by a
                      poor extractor
Not duplicates:
  same_template       two articles on one site (the boilerplate-heavy hard case)
  same_topic          two articles sharing names, title words and vocabulary
  follow_up           a new article quoting one paragraph of an earlier one
  rewrite             the story rewritten: at most a third of its paragraphs kept
  listings            two section pages of one site listing different stories
  shared_boilerplate  two articles with the same navigation and footer lines left in

    .venv/bin/python -m bench.dedup_pairs [--seed 6 --out tests/data/dedup/pairs.jsonl.gz]
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from html import escape
from pathlib import Path

from libs.simweb import words

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "tests" / "data" / "dedup" / "pairs.jsonl.gz"

# pairs per category: (label, count)
PLAN: dict[str, tuple[bool, int]] = {
    "other_template": (True, 150),
    "boilerplate_changes": (True, 150),
    "small_edits": (True, 200),
    "revised": (True, 150),
    "brief_edited": (True, 120),
    "reordered": (True, 150),
    "sentence_changed": (True, 150),
    "leaked_boilerplate": (True, 160),
    "same_template": (False, 260),
    "same_topic": (False, 200),
    "follow_up": (False, 180),
    "rewrite": (False, 150),
    "listings": (False, 140),
    "shared_boilerplate": (False, 250),
}


@dataclass(frozen=True)
class Article:
    title: str
    byline: str
    date: str
    paragraphs: tuple[str, ...]

    @property
    def text(self) -> str:
        return "\n".join(self.paragraphs)


@dataclass(frozen=True)
class Site:
    name: str
    sections: tuple[str, ...]
    footer_links: tuple[str, ...]
    address: str


def make_article(rng: random.Random, min_paragraphs: int = 2, max_paragraphs: int = 7) -> Article:
    seed = rng.randrange(2**31)
    paragraphs = words.paragraphs(words.TextSpec(seed, rng.randint(min_paragraphs, max_paragraphs)))
    date = f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    return Article(words.title(seed), f"By {words.person(seed + 1)}", date, paragraphs)


def make_site(rng: random.Random) -> Site:
    seed = rng.randrange(2**31)
    sections = tuple(dict.fromkeys(rng.choice(words.NOUNS).capitalize() for _ in range(rng.randint(8, 14))))
    footer = ("About us", "Contact", "Careers", "Advertise", "Privacy policy", "Terms of use", "Cookie settings",
              "Accessibility", "Newsletter", "Archive", "Corrections", "Sitemap")
    address = f"{rng.randint(1, 400)} {rng.choice(words.NOUNS).capitalize()} Street, {words.brand(seed + 7)}"
    return Site(words.brand(seed), sections, tuple(rng.sample(footer, rng.randint(6, len(footer)))), address)


def _headlines(rng: random.Random, count: int) -> list[str]:
    return [words.title(rng.randrange(2**31)) for _ in range(count)]


def render(site: Site, article: Article, rng: random.Random, *, paragraphs: tuple[str, ...] | None = None) -> str:
    """A whole page: header menu, the article, a "most read" sidebar, related teasers, footer, notice."""
    body = paragraphs if paragraphs is not None else article.paragraphs
    slug = lambda s: s.lower().replace(" ", "-")  # noqa: E731
    menu = "".join(f'<li><a href="/{slug(s)}/">{escape(s)}</a></li>' for s in site.sections)
    most_read = "".join(f'<li><a href="/story/{rng.randrange(10**6)}">{escape(h)}</a></li>'
                        for h in _headlines(rng, rng.randint(5, 9)))
    related = "".join(
        f'<div class="teaser"><h3><a href="/story/{rng.randrange(10**6)}">{escape(h)}</a></h3>'
        f"<p>{escape(' '.join(words.paragraphs(words.TextSpec(rng.randrange(2**31), 1))[0].split()[:24]))}...</p></div>"
        for h in _headlines(rng, rng.randint(2, 4))
    )
    footer = "".join(f'<li><a href="/{slug(s)}">{escape(s)}</a></li>' for s in site.footer_links)
    article_html = "".join(f"<p>{escape(p)}</p>" for p in body)
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{escape(article.title)} | '
        f"{escape(site.name)}</title></head><body>"
        f'<header><div class="brand">{escape(site.name)}</div><nav class="menu"><ul>{menu}</ul></nav></header>'
        f'<main><article><h1>{escape(article.title)}</h1><p class="byline">{escape(article.byline)} - '
        f'<time datetime="{article.date}">{article.date}</time></p>{article_html}</article>'
        f'<section class="related"><h2>Related stories</h2>{related}</section></main>'
        f'<aside class="most-read"><h2>Most read</h2><ol>{most_read}</ol></aside>'
        f'<div class="notice">{NOTICE}</div>'
        f"<footer><ul>{footer}</ul><p>{escape(site.address)}. Copyright 2025 {escape(site.name)}. "
        f"All rights reserved.</p></footer></body></html>"
    )


def render_listing(site: Site, rng: random.Random, section: str, stories: int) -> str:
    items = "".join(
        f'<li><a href="/story/{rng.randrange(10**6)}">{escape(h)}</a> '
        f"<time>2025-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}</time></li>"
        for h in _headlines(rng, stories)
    )
    html = render(site, Article(f"{section} news", "", "", ()), rng, paragraphs=())
    listing = f'<article><h2>Latest in {escape(section)}</h2><ul class="stories">{items}</ul>'
    return html.replace("<article>", listing, 1)


def leaked_lines(site: Site, rng: random.Random) -> tuple[list[str], list[str]]:
    """Navigation and footer lines as a poor extractor leaves them: before and after the article."""
    head = [site.name, *rng.sample(list(site.sections), min(len(site.sections), rng.randint(5, 9))), "Subscribe",
            "Sign in"]
    teasers = [" ".join(words.paragraphs(words.TextSpec(rng.randrange(2**31), 1))[0].split()[:24]) + "..."
               for _ in range(rng.randint(1, 3))]
    tail = ["Related stories", *teasers, "Most read", *_headlines(rng, rng.randint(5, 10)), *site.footer_links,
            f"{site.address}. Copyright 2025 {site.name}. All rights reserved.", NOTICE]
    return head, tail


NOTICE = ("We use cookies to remember your reading preferences and to measure traffic. "
          "You can change your choice in cookie settings at any time.")


# -- edits ---------------------------------------------------------------------------------------


def edit_words(paragraphs: tuple[str, ...], edits: int, rng: random.Random) -> tuple[str, ...]:
    """``edits`` single-word substitutions, insertions or deletions at random places."""
    blocks = [p.split() for p in paragraphs]
    for _ in range(edits):
        b = rng.randrange(len(blocks))
        block = blocks[b]
        i = rng.randrange(len(block))
        kind = rng.random()
        if kind < 0.6:
            block[i] = rng.choice(words.NOUNS + words.ADJECTIVES) + ("." if block[i].endswith(".") else "")
        elif kind < 0.8 or len(block) < 4:
            block.insert(i, rng.choice(words.ADJECTIVES + words.ADVERBS))
        else:
            del block[i]
    return tuple(" ".join(block) for block in blocks)


def small_edit_count(paragraphs: tuple[str, ...], rng: random.Random) -> int:
    total = sum(len(p.split()) for p in paragraphs)
    return rng.randint(1, max(1, total // 100))


def _sentences(paragraph: str) -> list[str]:
    parts = [s.strip() for s in paragraph.replace(". ", ".\n").splitlines()]
    return [p for p in parts if p]


# -- categories ----------------------------------------------------------------------------------

Pair = tuple[str, str]


def other_template(rng: random.Random) -> Pair:
    article = make_article(rng)
    return render(make_site(rng), article, rng), render(make_site(rng), article, rng)


def boilerplate_changes(rng: random.Random) -> Pair:
    article, site = make_article(rng), make_site(rng)
    later = Article(article.title, article.byline, f"2025-12-{rng.randint(1, 28):02d}", article.paragraphs)
    return render(site, article, rng), render(site, later, rng)


def small_edits(rng: random.Random) -> Pair:
    article = make_article(rng)
    edited = edit_words(article.paragraphs, small_edit_count(article.paragraphs, rng), rng)
    return article.text, "\n".join(edited)


def revised(rng: random.Random) -> Pair:
    article = make_article(rng)
    total = sum(len(p.split()) for p in article.paragraphs)
    edits = rng.randint(max(1, 2 * total // 100), max(1, 3 * total // 100))
    return article.text, "\n".join(edit_words(article.paragraphs, edits, rng))


def brief_edited(rng: random.Random) -> Pair:
    article = make_article(rng, 1, 1)
    return article.text, "\n".join(edit_words(article.paragraphs, rng.randint(1, 2), rng))


def reordered(rng: random.Random) -> Pair:
    article = make_article(rng, min_paragraphs=4)
    order = list(article.paragraphs)
    while tuple(order) == article.paragraphs:
        rng.shuffle(order)
    moved = tuple(order)
    if rng.random() < 0.5:
        moved = edit_words(moved, 1, rng)
    return article.text, "\n".join(moved)


def sentence_changed(rng: random.Random) -> Pair:
    article = make_article(rng)
    paragraphs = list(article.paragraphs)
    p = rng.randrange(len(paragraphs))
    sentences = _sentences(paragraphs[p])
    if rng.random() < 0.5 and len(sentences) > 1:
        del sentences[rng.randrange(len(sentences))]
        paragraphs[p] = " ".join(sentences)
    else:
        update = " ".join(words.paragraphs(words.TextSpec(rng.randrange(2**31), 1))[0].split(". ")[0].split())
        paragraphs.insert(rng.randint(0, len(paragraphs)), f"Update: {update.rstrip('.')}.")
    return article.text, "\n".join(paragraphs)


def leaked_boilerplate(rng: random.Random) -> Pair:
    article = make_article(rng, min_paragraphs=4)
    head_a, tail_a = leaked_lines(make_site(rng), rng)
    head_b, tail_b = leaked_lines(make_site(rng), rng)
    return "\n".join([*head_a, article.title, *article.paragraphs, *tail_a]), "\n".join(
        [*head_b, article.title, *article.paragraphs, *tail_b])


def same_template(rng: random.Random) -> Pair:
    site = make_site(rng)
    return render(site, make_article(rng, 1, 6), rng), render(site, make_article(rng, 1, 6), rng)


def same_topic(rng: random.Random) -> Pair:
    a, b = make_article(rng), make_article(rng)
    shared = f"{words.person(rng.randrange(2**31))} of {words.brand(rng.randrange(2**31))}"
    first = tuple(f"{shared} said that {p[0].lower()}{p[1:]}" for p in a.paragraphs)
    second = tuple(f"{shared} said that {p[0].lower()}{p[1:]}" for p in b.paragraphs)
    return "\n".join((a.title, *first)), "\n".join((a.title, *second))


def follow_up(rng: random.Random) -> Pair:
    earlier, later = make_article(rng, 3, 8), make_article(rng, 3, 8)
    quoted = rng.choice(earlier.paragraphs)
    paragraphs = list(later.paragraphs)
    paragraphs.insert(rng.randint(1, len(paragraphs)), f"As we reported earlier: {quoted}")
    return earlier.text, "\n".join(paragraphs)


def rewrite(rng: random.Random) -> Pair:
    article = make_article(rng, 3, 9)
    fresh = make_article(rng, len(article.paragraphs), len(article.paragraphs))
    keep = set(rng.sample(range(len(article.paragraphs)), len(article.paragraphs) // 3))
    paragraphs = [article.paragraphs[i] if i in keep else fresh.paragraphs[i] for i in range(len(article.paragraphs))]
    return article.text, "\n".join(paragraphs)


def listings(rng: random.Random) -> Pair:
    site = make_site(rng)
    section = rng.choice(site.sections)
    return render_listing(site, rng, section, rng.randint(6, 20)), render_listing(site, rng, section,
                                                                                  rng.randint(6, 20))


def shared_boilerplate(rng: random.Random) -> Pair:
    site = make_site(rng)
    head, tail = leaked_lines(site, rng)
    a, b = make_article(rng, 1, 5), make_article(rng, 1, 5)
    return "\n".join([*head, a.title, *a.paragraphs, *tail]), "\n".join([*head, b.title, *b.paragraphs, *tail])


MAKERS: dict[str, Callable[[random.Random], Pair]] = {
    "other_template": other_template,
    "boilerplate_changes": boilerplate_changes,
    "small_edits": small_edits,
    "revised": revised,
    "brief_edited": brief_edited,
    "reordered": reordered,
    "sentence_changed": sentence_changed,
    "leaked_boilerplate": leaked_boilerplate,
    "same_template": same_template,
    "same_topic": same_topic,
    "follow_up": follow_up,
    "rewrite": rewrite,
    "listings": listings,
    "shared_boilerplate": shared_boilerplate,
}


def generate(seed: int, scale: float = 1.0) -> list[dict[str, object]]:
    """Every pair of the plan (counts times ``scale``), categories interleaved in a seeded order."""
    rng = random.Random(seed)
    rows: list[dict[str, object]] = []
    for category, (duplicate, count) in PLAN.items():
        for _ in range(max(1, round(count * scale))):
            a, b = MAKERS[category](rng)
            if rng.random() < 0.5:
                a, b = b, a
            rows.append({"a": a, "b": b, "duplicate": duplicate, "category": category})
    rng.shuffle(rows)
    return rows


def write(rows: list[dict[str, object]], out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    # mtime=0: the same rows always give the same bytes (a regenerated file shows no diff)
    with open(out, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0) as gz:
        for row in rows:
            gz.write((json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n").encode())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=6)
    parser.add_argument("--scale", type=float, default=1.0, help="Multiplies every category's count.")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    rows = generate(args.seed, args.scale)
    write(rows, args.out)
    print(f"{len(rows)} pairs ({sum(bool(r['duplicate']) for r in rows)} duplicates) -> {args.out} "
          f"({args.out.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
