"""Real web graphs with URLs for the ordering suite: how the committed files were built, and reading them.

The files under ``tests/data/ordering/`` (``README.md`` there names each source, its commit,
checksum and licence) are gzip'd graph files in the evaluator's format, one ``source target``
line of URLs per edge, written by :func:`write_edges` from the public files:

* ``wikispeedia.edges.gz``: the Wikispeedia selection of Wikipedia (West and Leskovec 2012;
  4,604 articles, ``links.tsv``), each article ``https://en.wikipedia.org/wiki/<name>`` (the
  names are URL-encoded already): one host, no home or index pages, a graph where the
  URL tells nothing of a page's importance.
* ``polblogs.edges.gz``: the political blogs of Adamic and Glance (2005; 1,490 blogs,
  ``polblogs.gml``), each blog ``http://<its URL>`` with ``/`` added after a bare host name;
  two labels that name the same URL once trimmed (``atrios.blogspot.com`` and
  ``atrios.blogspot.com/ ``) are one page. Most pages are home pages of their own hosts,
  which is where a home-page weight can only add noise.

``python -m cli.eval.ordering_datasets wikispeedia links.tsv OUT`` (or ``polblogs polblogs.gml
OUT``) rebuilds a file.
"""

from __future__ import annotations

import gzip
import html
import re
import sys
from collections.abc import Iterable
from pathlib import Path

from cli.eval.ordering_graph import CrawlGraph, GraphFormatError

DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "ordering"
WIKIPEDIA = "https://en.wikipedia.org/wiki/"


def wikispeedia_edges(links_tsv: Path) -> list[tuple[str, str]]:
    edges = []
    for line in links_tsv.read_text(encoding="utf-8").splitlines():
        if not line.strip('"').strip() or line.lstrip('"').startswith("#") or line == "linkSource\tlinkTarget":
            continue  # comments (some copies quote them) and a header line
        source, target = line.split("\t")
        edges.append((WIKIPEDIA + source, WIKIPEDIA + target))
    return edges


def blog_url(label: str) -> str:
    label = html.unescape(label).strip()
    return "http://" + (label if "/" in label else label + "/")


def polblogs_edges(gml: Path) -> list[tuple[str, str]]:
    text = gml.read_text(encoding="utf-8")
    nodes = {int(i): blog_url(label) for i, label in re.findall(r'node \[\s*id (\d+)\s*label "([^"]*)"', text)}
    return [(nodes[int(s)], nodes[int(t)]) for s, t in re.findall(r"edge \[\s*source (\d+)\s*target (\d+)", text)]


def write_edges(edges: Iterable[tuple[str, str]], path: Path) -> None:
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=9) as fh:
        fh.writelines(f"{s} {t}\n" for s, t in edges)


def read_edges(path: Path) -> CrawlGraph:
    """A gzip'd graph file as a graph without seeds (the suite draws them)."""
    ids: dict[str, int] = {}
    labels: list[str] = []
    out: list[set[int]] = []
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            parts = line.split()
            if not parts or parts[0].startswith("#"):
                continue
            if len(parts) != 2:
                raise GraphFormatError(f"{path}:{number}: expected 'source target', got {line.strip()!r}")
            ends = []
            for label in parts:
                i = ids.get(label)
                if i is None:
                    i = ids[label] = len(labels)
                    labels.append(label)
                    out.append(set())
                ends.append(i)
            if ends[0] != ends[1]:
                out[ends[0]].add(ends[1])
    return CrawlGraph(labels, [sorted(t) for t in out], [])


def main(argv: list[str]) -> None:
    kind, source, target = argv
    edges = wikispeedia_edges(Path(source)) if kind == "wikispeedia" else polblogs_edges(Path(source))
    write_edges(edges, Path(target))


if __name__ == "__main__":
    main(sys.argv[1:])
