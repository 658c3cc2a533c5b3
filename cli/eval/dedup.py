"""``trawl eval dedup --pairs FILE``: precision, recall and F1 of duplicate detection on labelled pairs.

FILE holds JSON lines ``{"a": ..., "b": ..., "duplicate": true|false}`` (gzip when it ends in
``.gz``); ``a`` and ``b`` are HTML pages or main text. Each side goes the way a page goes
through the crawler: HTML through the extractor's ``extract_content`` (main text), then the
content fingerprint and the sketch dedup makes; the pair is judged by the service's own
:class:`~services.dedup.judge.DuplicateJudge` at the configured threshold (the
``TRAWL_DEDUP_*`` settings, or ``--threshold``). An optional ``category`` key on a line
adds a per-category breakdown. Manku et al.'s rule (simhash within 3 bits) is reported
on the same pairs as the published baseline.
"""

from __future__ import annotations

import gzip
import json
import os
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from cli.output import console, emit
from libs.common.settings import load_settings
from services.dedup.judge import Document, DuplicateJudge, simhash_duplicates
from services.dedup.settings import DedupSettings
from services.extractor.content import content_fingerprint, extract_content

PAGE_URL = "http://pairs.test/page"


@dataclass
class Tally:
    """Confusion counts of one rule."""

    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0

    def add(self, predicted: bool, actual: bool) -> None:
        if predicted and actual:
            self.tp += 1
        elif predicted:
            self.fp += 1
        elif actual:
            self.fn += 1
        else:
            self.tn += 1

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    def figures(self) -> dict[str, float | int]:
        return {"precision": round(self.precision, 4), "recall": round(self.recall, 4), "f1": round(self.f1, 4),
                "true_positives": self.tp, "false_positives": self.fp, "false_negatives": self.fn,
                "true_negatives": self.tn}


def read_pairs(path: Path) -> Iterator[dict[str, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            row = json.loads(line)
            if not isinstance(row.get("a"), str) or not isinstance(row.get("b"), str) or not isinstance(
                row.get("duplicate"), bool
            ):
                raise typer.BadParameter(f"line {number}: needs string a, string b and boolean duplicate")
            yield row


def is_html(text: str) -> bool:
    head = text.lstrip()[:200].lower()
    return head.startswith("<") and ("<html" in head or "<!doctype" in head or "<body" in head)


class PairEvaluator:
    """Scores labelled pairs with one judge; the figures accumulate in tallies."""

    def __init__(self, judge: DuplicateJudge, simhash_distance: int = 3) -> None:
        self.judge = judge
        self.simhash_distance = simhash_distance
        self.service = Tally()
        self.simhash = Tally()
        self.categories: dict[str, Counter[str]] = {}
        self.html_documents = 0

    def document(self, raw: str) -> Document:
        text = raw
        if is_html(raw):
            self.html_documents += 1
            text = extract_content(raw, PAGE_URL).text
        return Document(content_fingerprint(text) if text.strip() else "", self.judge.sketch(text))

    def add(self, row: dict[str, Any]) -> None:
        a, b = self.document(row["a"]), self.document(row["b"])
        actual = bool(row["duplicate"])
        predicted = self.judge.similarity(a, b) is not None
        self.service.add(predicted, actual)
        self.simhash.add(
            a.content_fp == b.content_fp != "" or simhash_duplicates(a.sketch, b.sketch, self.simhash_distance),
            actual,
        )
        category = str(row.get("category", ""))
        if category:
            counts = self.categories.setdefault(category, Counter())
            counts["pairs"] += 1
            counts["duplicate"] += actual
            counts["correct"] += predicted == actual

    def result(self, seconds: float) -> dict[str, Any]:
        shape = self.judge.shape
        return {
            "pairs": self.service.tp + self.service.fp + self.service.fn + self.service.tn,
            "duplicates": self.service.tp + self.service.fn,
            "threshold": self.judge.threshold,
            "shingle_width": shape.shingle_width,
            "permutations": shape.permutations,
            "bands": shape.bands,
            "rows": shape.rows,
            **self.service.figures(),
            "simhash_baseline": {"max_distance": self.simhash_distance, **self.simhash.figures()},
            "categories": {
                name: {"pairs": c["pairs"], "duplicate": c["duplicate"] == c["pairs"], "correct": c["correct"],
                       "accuracy": round(c["correct"] / c["pairs"], 4)}
                for name, c in sorted(self.categories.items())
            },
            "html_documents": self.html_documents,
            "seconds": round(seconds, 2),
        }


def evaluate(path: Path, judge: DuplicateJudge, limit: int = 0) -> dict[str, Any]:
    evaluator = PairEvaluator(judge)
    started = time.perf_counter()
    for count, row in enumerate(read_pairs(path), 1):
        evaluator.add(row)
        if limit and count >= limit:
            break
    return evaluator.result(time.perf_counter() - started)


def run(
    pairs: Path = typer.Option(..., "--pairs", exists=True, dir_okay=False, help="Labelled pairs, JSON lines."),
    threshold: float | None = typer.Option(None, help="Resemblance threshold (default: TRAWL_DEDUP_THRESHOLD)."),
    limit: int = typer.Option(0, help="Evaluate only the first N pairs (0: all)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Precision, recall and F1 of duplicate detection on labelled pairs, as the dedup service decides."""
    overrides = {} if threshold is None else {"threshold": threshold}
    settings = load_settings(DedupSettings, os.environ, **overrides)
    result = evaluate(pairs, DuplicateJudge(settings.shape, settings.threshold), limit)
    baseline = result["simhash_baseline"]
    rows: list[list[Any]] = [
        [f"minhash resemblance >= {result['threshold']} (service)", result["precision"], result["recall"],
         result["f1"]],
        [f"simhash within {baseline['max_distance']} bits (Manku et al.)", baseline["precision"],
         baseline["recall"], baseline["f1"]],
    ]
    emit(as_json, result, f"dedup on {result['pairs']} pairs ({result['duplicates']} duplicates)",
         ["rule", "precision", "recall", "F1"], rows)
    if not as_json and result["categories"]:
        emit(False, {}, "per category (service rule)", ["category", "label", "pairs", "correct"],
             [[name, "duplicate" if c["duplicate"] else "distinct", c["pairs"], f"{c['accuracy']:.3f}"]
              for name, c in result["categories"].items()])
        console.print(f"{result['html_documents']} HTML pages went through the extractor; {result['seconds']} s")


def register(app: typer.Typer) -> None:
    app.command("dedup")(run)
