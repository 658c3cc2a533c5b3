"""HTML of structured sites' pages: the weight and boilerplate of a publisher's template.

A page is 20-100 KB, most of it what a crawler fetches and an extractor throws away: an
inline stylesheet and script bundle of the site's own (7-20 KB and 10-35 KB, fixed per
host), a header with the menu, a breadcrumb, a "most read" sidebar, a footer with a
sitemap and legal text; then the article (2-40 paragraphs) or a section's listing.

Every ``<a href>`` is one of the page's :class:`~libs.simweb.model.SimLink` values, as in
:mod:`libs.simweb.render`: same-host links are root-relative except inside the article's
text, where links are absolute.
"""

from __future__ import annotations

import random
import zlib
from dataclasses import dataclass
from html import escape
from urllib.parse import urlsplit

from libs.simweb import words
from libs.simweb.model import HostSpec, Page, SimLink
from libs.simweb.render import iso_time

STYLE_BYTES = (7_000, 20_000)
SCRIPT_BYTES = (10_000, 35_000)
_PROPERTIES = ("margin", "padding", "border-radius", "gap", "top", "left", "width", "max-width", "line-height")
_COLORS = ("color", "background", "border-color", "outline-color")
_ELEMENTS = ("div", "span", "a", "li", "ul", "p", "h2", "h3", "button", "img", "figure", "section")
_STATES = ("", ":hover", ":focus", "::before", "::after", ":first-child", ":not(:last-child)")


@dataclass(frozen=True)
class PageBlocks:
    """A page's links by where they appear; ``links()`` is the page's whole link list, in document order."""

    menu: tuple[SimLink, ...] = ()
    breadcrumb: tuple[SimLink, ...] = ()
    listing: tuple[SimLink, ...] = ()
    """A home or section page's list of sections and articles."""
    inline: tuple[SimLink, ...] = ()
    """Links inside an article's paragraphs: siblings, and other sites' pages."""
    sidebar: tuple[SimLink, ...] = ()
    footer: tuple[SimLink, ...] = ()

    def links(self) -> tuple[SimLink, ...]:
        return self.menu + self.breadcrumb + self.inline + self.listing + self.sidebar + self.footer


@dataclass(frozen=True)
class Boilerplate:
    """What every page of a host shares, rendered once."""

    head: str
    header: str
    sidebar: str
    footer: str
    bundle: str


def _seed(text: str) -> int:
    return zlib.crc32(text.encode())


def _href(link: SimLink, host: str, absolute: bool = False) -> str:
    parts = urlsplit(link.target_url)
    return link.target_url if absolute or parts.hostname != host else (parts.path or "/")


def _anchor(link: SimLink, host: str, absolute: bool = False) -> str:
    return f'<a href="{escape(_href(link, host, absolute))}">{escape(link.anchor)}</a>'


def _items(links: tuple[SimLink, ...], host: str) -> str:
    return "\n".join(f"<li>{_anchor(link, host)}</li>" for link in links)


def site_style(seed: int) -> str:
    """A stylesheet of utility and component rules, as a site's build emits (7-20 KB)."""
    rng = random.Random(seed)
    size = rng.randint(*STYLE_BYTES)
    prefix = rng.choice(words.NOUNS)[:4]
    rules, total, i = [], 0, 0
    while total < size:
        selector = f".{prefix}-{rng.choice(words.NOUNS)}-{i} {rng.choice(_ELEMENTS)}{rng.choice(_STATES)}"
        declarations = [f"{rng.choice(_PROPERTIES)}:{rng.randint(0, 48)}px" for _ in range(rng.randint(1, 4))]
        declarations.append(f"{rng.choice(_COLORS)}:#{rng.getrandbits(24):06x}")
        rule = f"{selector}{{{';'.join(declarations)}}}"
        if rng.random() < 0.08:
            rule = f"@media (max-width:{rng.choice((480, 640, 768, 1024))}px){{{rule}}}"
        rules.append(rule)
        total += len(rule) + 1
        i += 1
    return "\n".join(rules)


def site_script(seed: int, nav: list[str]) -> str:
    """A minified-looking script bundle with the page state blob sites hydrate from (10-35 KB)."""
    rng = random.Random(seed)
    size = rng.randint(*SCRIPT_BYTES)
    state = ",".join(f'{{"id":{i},"label":"{escape(label)}","slot":"{rng.getrandbits(32):08x}"}}'
                     for i, label in enumerate(nav))
    parts = [f'window.__STATE__={{"nav":[{state}],"build":"{rng.getrandbits(64):016x}","consent":false}};']
    total = len(parts[0])
    i = 0
    while total < size:
        name, word = f"_{rng.getrandbits(20):05x}", rng.choice(words.NOUNS)
        shape = rng.randrange(3)
        if shape == 0:
            part = (f"function {name}(t,e){{var n=t.length,r=[];for(var o=0;o<n;o++){{r.push(t[o]*"
                    f"{rng.randint(2, 97)}+e)}}return r.join(\"{word}\")}}")
        elif shape == 1:
            part = (f"!function(w,d){{var s=d.querySelectorAll(\".{word}-{i}\");for(var k=0;k<s.length;k++)"
                    f"{{s[k].setAttribute(\"data-{word}\",\"{rng.getrandbits(16):04x}\")}}}}(window,document);")
        else:
            part = (f"var {name}={{key:\"{word}\",ttl:{rng.randint(60, 86400)},retry:{rng.randint(1, 9)},"
                    f"endpoint:\"/api/{word}/{i}\",enabled:{str(rng.random() < 0.5).lower()}}};")
        parts.append(part)
        total += len(part)
        i += 1
    return "".join(parts)


def boilerplate(host: HostSpec, home: PageBlocks) -> Boilerplate:
    """The host's shared parts; ``home`` is its home page's blocks (the menu, sidebar and footer every page has)."""
    seed = _seed(host.name)
    name = host.name
    brand = escape(host.brand)
    head = f"<style>{site_style(seed)}</style>\n"
    menu = f'<nav class="menu" aria-label="Main"><ul>\n{_items(home.menu, name)}\n</ul></nav>\n' if home.menu else ""
    header = (f'<header class="site-header">\n<span class="brand">{brand}</span>\n{menu}'
              '<form class="search" role="search"><input type="search" name="q" placeholder="Search">'
              "<button>Go</button></form>\n</header>\n")
    sidebar = ""
    if home.sidebar:
        sidebar = (f'<aside class="sidebar">\n<h2>Most read</h2>\n<ol>\n{_items(home.sidebar, name)}\n</ol>\n'
                   '<div class="ad-slot" data-slot="sidebar-1" aria-hidden="true"></div>\n'
                   "<p>Get the morning briefing in your inbox. No spam, unsubscribe at any time.</p>\n</aside>\n")
    sitemap = f'<nav class="sitemap" aria-label="Sections"><ul>\n{_items(home.footer, name)}\n</ul></nav>\n'
    legal = " ".join(words.paragraphs(words.TextSpec(seed, 2)))
    footer = (f"<footer>\n{sitemap if home.footer else ''}<p class=\"legal\">{escape(legal)}</p>\n"
              f"<p>&copy; 2026 {brand}. All rights reserved.</p>\n</footer>\n")
    bundle = f"<script>{site_script(seed, [link.anchor for link in home.menu])}</script>\n"
    return Boilerplate(head, header, sidebar, footer, bundle)


def render_tree_page(page: Page, host: HostSpec, blocks: PageBlocks, shared: Boilerplate) -> str:
    """The page's HTML: ``shared`` around its breadcrumb, its text with inline links, and its listing."""
    name = host.name
    texts = words.paragraphs(page.text_spec)
    body = []
    for index, members in enumerate(words.link_slots(len(blocks.inline), len(texts))):
        tail = "".join(f" {words.link_lead(m)} {_anchor(blocks.inline[m], name, absolute=True)}." for m in members)
        body.append(f"<p>{escape(texts[index])}{tail}</p>")
    crumbs = ""
    if blocks.breadcrumb:
        crumbs = (f'<nav class="breadcrumb" aria-label="Breadcrumb"><ol>\n{_items(blocks.breadcrumb, name)}\n'
                  "</ol></nav>\n")
    listing = ""
    if blocks.listing:
        items = "\n".join(
            f'<li>{_anchor(link, name)}<p class="teaser">{escape(words.title(_seed(link.target_url)))}.</p></li>'
            for link in blocks.listing)
        listing = f'<section class="listing" aria-label="In this section">\n<ul>\n{items}\n</ul>\n</section>\n'
    description = escape(texts[0].split(". ")[0].rstrip(".") + ".")
    published = (f'<meta property="article:published_time" content="{iso_time(page.published_at)}">\n'
                 if page.role == "article" else "")
    return (
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{escape(page.title)} | {escape(host.brand)}</title>\n"
        f'<meta name="description" content="{description}">\n{published}{shared.head}</head>\n<body>\n'
        f"{shared.header}{crumbs}<div class=\"layout\">\n<main>\n<article>\n<h1>{escape(page.title)}</h1>\n"
        f'<p class="byline">By {escape(words.person(page.text_spec.seed))} &middot; '
        f'<time datetime="{iso_time(page.published_at)}">{page.published_at:%d %B %Y}</time></p>\n'
        + "\n".join(body)
        + f"\n</article>\n{listing}</main>\n{shared.sidebar}</div>\n{shared.footer}{shared.bundle}</body>\n</html>\n"
    )
