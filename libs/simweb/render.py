"""HTML of simulated pages: an ordinary site template around the article.

Every ``<a href>`` in the output is one of the page's :class:`~libs.simweb.model.SimLink`
values (or a hub listing entry), so link extraction can be checked exactly.
Links to the same host in the menu and footer are written root-relative
(``/section-2/page-5.html``), article links absolute, as real sites mix both.
The page's own URL appears nowhere, which is what lets an exact duplicate be
byte-identical to its original.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from html import escape
from urllib.parse import urlsplit

from libs.simweb import words
from libs.simweb.model import HostSpec, Page, SimLink

_CSS = """
:root{--ink:#1d232b;--muted:#5b6573;--accent:#0b6bcb;--paper:#fbfbf8;--rule:#e3e1da}
*{box-sizing:border-box}
body{margin:0;font:17px/1.6 Georgia,"Times New Roman",serif;color:var(--ink);background:var(--paper)}
.site-header{display:flex;align-items:center;gap:2rem;padding:1rem 2rem;border-bottom:1px solid var(--rule)}
.brand{font:700 1.3rem/1 Helvetica,Arial,sans-serif;letter-spacing:.02em}
.menu ul{display:flex;flex-wrap:wrap;gap:1.2rem;margin:0;padding:0;list-style:none}
.menu a{color:var(--muted);text-decoration:none;font-family:Helvetica,Arial,sans-serif;font-size:.9rem}
.menu a:hover{color:var(--accent);text-decoration:underline}
main{max-width:46rem;margin:2rem auto;padding:0 1.5rem}
article h1{font-size:2.1rem;line-height:1.2;margin:0 0 .5rem}
.byline{color:var(--muted);font-size:.9rem;font-family:Helvetica,Arial,sans-serif}
article p{margin:0 0 1.1rem}
article a{color:var(--accent)}
.stories{list-style:none;padding:0}
.stories li{padding:.6rem 0;border-bottom:1px solid var(--rule)}
.stories time{display:block;color:var(--muted);font-size:.8rem}
.notice{margin-top:3rem;padding:1rem;background:#f1efe8;font-size:.8rem;color:var(--muted)}
footer{margin-top:4rem;padding:2rem;border-top:1px solid var(--rule);font-size:.85rem;color:var(--muted)}
footer ul{display:flex;flex-wrap:wrap;gap:1rem;list-style:none;padding:0}
@media (max-width:640px){.site-header{flex-direction:column;align-items:flex-start}main{margin:1rem auto}}
@media print{.site-header,footer,.notice{display:none}body{background:#fff}}
"""

_SCRIPT = (
    "window.dataLayer=window.dataLayer||[];function track(){dataLayer.push(arguments)}"
    "track('init',{consent:'pending'});document.addEventListener('click',function(e){"
    "var a=e.target.closest('a');if(a){track('click',{href:a.getAttribute('href')})}});"
)


_ASIDE = (
    '<aside class="notice">\n<p>We use cookies to remember reading preferences. '
    "Manage them in settings at any time.</p>\n"
    '<form class="newsletter" method="post" action="/subscribe"><label>Weekly letter '
    '<input type="email" name="email" placeholder="you@example.test"></label> '
    '<button type="submit">Subscribe</button></form>\n</aside>\n'
)


def http_time(moment: datetime) -> str:
    """RFC 9110 date, e.g. ``Mon, 02 Mar 2026 00:00:00 GMT``."""
    return moment.strftime("%a, %d %b %Y %H:%M:%S GMT")


def iso_time(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _href(link: SimLink, host: str) -> str:
    if link.kind != "bad" and link.placement != "article":
        parts = urlsplit(link.target_url)
        if parts.hostname == host:
            return parts.path or "/"
    return link.target_url


def _anchor(link: SimLink, host: str) -> str:
    return f'<a href="{escape(_href(link, host))}">{escape(link.anchor)}</a>'


def _menu(links: Sequence[SimLink], host: str) -> str:
    return "\n".join(f"<li>{_anchor(link, host)}</li>" for link in links)


def render_page(page: Page, host: HostSpec, listing: Sequence[tuple[str, str, datetime]] = ()) -> str:
    """The page's HTML; ``listing`` holds a hub's visible articles as ``(url, title, appeared_at)``."""
    nav = [link for link in page.links if link.placement == "nav"]
    article = [link for link in page.links if link.placement == "article"]
    footer = [link for link in page.links if link.placement == "footer"]
    texts = words.paragraphs(page.text_spec)
    body = []
    for index, members in enumerate(words.link_slots(len(article), len(texts))):
        tail = "".join(f" {words.link_lead(m)} {_anchor(article[m], page.host)}." for m in members)
        body.append(f"<p>{escape(texts[index])}{tail}</p>")
    robots = [name for name, flag in (("noindex", page.noindex), ("nofollow", page.nofollow)) if flag]
    meta_robots = f'<meta name="robots" content="{", ".join(robots)}">\n' if robots else ""
    description = escape(texts[0].split(". ")[0].rstrip(".") + ".")
    stories = ""
    if listing:
        items = "\n".join(
            f'<li><a href="{escape(urlsplit(url).path)}">{escape(heading)}</a> '
            f'<time datetime="{iso_time(at)}">{at:%d %B %Y, %H:%M}</time></li>'
            for url, heading, at in listing
        )
        stories = f'<section aria-label="Latest stories">\n<ul class="stories">\n{items}\n</ul>\n</section>\n'
    menu = f'<nav class="menu" aria-label="Main"><ul>\n{_menu(nav, page.host)}\n</ul></nav>\n' if nav else ""
    links_footer = f"<ul>\n{_menu(footer, page.host)}\n</ul>\n" if footer else ""
    author = words.person(page.text_spec.seed)
    # Hub articles say when they were published to the second, as news sites do: the freshness
    # models learn the hour items appear from it (a <time> with a date alone only gives the day).
    published_meta = (f'<meta property="article:published_time" content="{iso_time(page.published_at)}">\n'
                      if page.role == "article" else "")
    return (
        "<!doctype html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{escape(page.title)} | {escape(host.brand)}</title>\n"
        f'<meta name="description" content="{description}">\n'
        f"{meta_robots}{published_meta}<style>{_CSS}</style>\n</head>\n<body>\n"
        f'<header class="site-header">\n<span class="brand">{escape(host.brand)}</span>\n{menu}</header>\n'
        "<main>\n<article>\n"
        f"<h1>{escape(page.title)}</h1>\n"
        f'<p class="byline">By {escape(author)} &middot; '
        f'<time datetime="{iso_time(page.published_at)}">{page.published_at:%d %B %Y}</time></p>\n'
        + "\n".join(body)
        + "\n</article>\n"
        + stories
        + _ASIDE
        + "</main>\n"
        f"<footer>\n{links_footer}<p>&copy; 2026 {escape(host.brand)}. All rights reserved.</p>\n</footer>\n"
        f"<script>{_SCRIPT}</script>\n</body>\n</html>\n"
    )


def render_index(hosts: Sequence[HostSpec]) -> str:
    """A directory of every host's home page, served when the server is asked for its own address."""
    items = "\n".join(
        f'<li><a href="{escape(h.home_url)}">{escape(h.name)}</a> {escape(h.brand)}</li>' for h in hosts
    )
    return (
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>Simulated web</title>\n'
        f"</head>\n<body>\n<h1>Simulated web: {len(hosts)} hosts</h1>\n"
        f"<ul>\n{items}\n</ul>\n</body>\n</html>\n"
    )
