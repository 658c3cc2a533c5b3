"""CPU per document of dedup's sketching: shingle hashes, then MinHash signature, band keys and simhash.

The documents are the simulated web's main texts (``Page.text`` of ``--pages`` pages: what
the extractor hands to dedup, one paragraph per line with the inline link sentences). Each
round sketches every document once per contender, interleaved, and reads the process's CPU
time; the figure is the best round (the one least disturbed by other work on the machine)
and the median, in microseconds per document, for ``shingle_hashes`` alone and for the whole
``DuplicateJudge.sketch`` (shingles and sketch).

``--against REV`` puts the implementation of another git revision beside the working tree's:
its ``services/dedup/shingles.py`` and ``sketch.py`` are loaded from ``git show`` as separate
modules, and every document's sketch is first checked to be bit-identical in both.

    nice -n 19 .venv/bin/python -m bench.dedup_sketch_cost [--pages 1000] [--rounds 7] [--against REV] [--json]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from bench.harness import REPO, machine
from libs.simweb.build import build_web
from libs.simweb.config import SimWebConfig
from services.dedup import shingles, sketch

Implementation = tuple[ModuleType, ModuleType]  # (shingles, sketch)


def load_revision(rev: str, into: Path) -> Implementation:
    """The revision's shingles and sketch modules, loaded under names of their own."""
    modules = []
    for name in ("shingles", "sketch"):
        source = subprocess.run(["git", "-C", str(REPO), "show", f"{rev}:services/dedup/{name}.py"],
                                check=True, capture_output=True, text=True).stdout
        path = into / f"baseline_{name}.py"
        path.write_text(source)
        spec = importlib.util.spec_from_file_location(f"baseline_{name}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
        spec.loader.exec_module(module)
        modules.append(module)
    return modules[0], modules[1]


def texts(pages: int) -> list[str]:
    web = build_web(SimWebConfig(pages=pages))
    return [page.text for page in web.pages.values() if page.text.strip()]


def check_identical(docs: list[str], ours: Implementation, theirs: Implementation) -> None:
    ours_sketcher = ours[1].Sketcher(ours[1].SketchShape())
    theirs_sketcher = theirs[1].Sketcher(theirs[1].SketchShape())
    for text in docs:
        a, b = ours[0].shingle_hashes(text), theirs[0].shingle_hashes(text)
        x, y = ours_sketcher.sketch(a), theirs_sketcher.sketch(b)
        if not (np.array_equal(a, b) and np.array_equal(x.signature, y.signature) and x.band_keys == y.band_keys
                and x.simhash == y.simhash and x.shingles == y.shingles):
            raise SystemExit(f"the implementations disagree on a document starting {text[:80]!r}")


def stages(implementation: Implementation) -> dict[str, Callable[[str], object]]:
    shingle_module, sketch_module = implementation
    sketcher = sketch_module.Sketcher(sketch_module.SketchShape())
    width = sketcher.shape.shingle_width
    return {
        "shingle_hashes": lambda text: shingle_module.shingle_hashes(text, width),
        "shingles + sketch": lambda text: sketcher.sketch(shingle_module.shingle_hashes(text, width)),
    }


def measure(docs: list[str], contenders: dict[str, Implementation], rounds: int) -> dict[str, dict[str, Any]]:
    runs = {(name, stage): fn for name, impl in contenders.items() for stage, fn in stages(impl).items()}
    per_doc: dict[tuple[str, str], list[float]] = {key: [] for key in runs}
    for _ in range(rounds):
        for key, fn in runs.items():
            started = time.process_time()
            for text in docs:
                fn(text)
            per_doc[key].append((time.process_time() - started) / len(docs) * 1e6)
    out: dict[str, dict[str, Any]] = {}
    for (name, stage), values in per_doc.items():
        out.setdefault(name, {})[stage] = {"best_us": round(min(values), 1),
                                           "median_us": round(statistics.median(values), 1)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=1000, help="Pages of the simulated web whose texts are sketched.")
    parser.add_argument("--rounds", type=int, default=7, help="Interleaved rounds over all documents.")
    parser.add_argument("--against", metavar="REV", help="Also measure the implementation at this git revision.")
    parser.add_argument("--json", action="store_true", help="Print the result as JSON.")
    args = parser.parse_args()
    docs = texts(args.pages)
    contenders: dict[str, Implementation] = {"working tree": (shingles, sketch)}
    with tempfile.TemporaryDirectory() as scratch:
        if args.against:
            contenders[args.against] = load_revision(args.against, Path(scratch))
            check_identical(docs, contenders["working tree"], contenders[args.against])
        figures = measure(docs, contenders, args.rounds)
    words = [len(shingles.tokens(text)) for text in docs]
    result: dict[str, Any] = {"benchmark": "dedup_sketch_cost", "unit": "CPU microseconds per document",
              "workload": {"documents": len(docs), "pages": args.pages, "median_words": statistics.median(words),
                           "mean_words": round(statistics.mean(words)), "rounds": args.rounds},
              "identical": bool(args.against), "contenders": figures, "machine": machine()}
    if args.json:
        print(json.dumps(result, indent=2))
        return
    workload = result["workload"]
    print(f"dedup_sketch_cost: CPU us per document, {workload['documents']} simulated-web texts"
          f" (median {workload['median_words']} words), best / median of {args.rounds} rounds")
    if args.against:
        print(f"  sketches bit-identical to {args.against}: yes")
    for name, by_stage in figures.items():
        cells = "; ".join(f"{stage} {v['best_us']:,.1f} / {v['median_us']:,.1f}" for stage, v in by_stage.items())
        print(f"  {name}: {cells}")
    info = result["machine"]
    print(f"  machine: {info['cpus']} cpus, Python {info['python']}, load {info['load_average_1m_at_end']}")


if __name__ == "__main__":
    main()
