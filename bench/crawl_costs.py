"""How each cost grows: CPU time and peak memory of every part of the stack against crawl size.

Crawls simulated webs of growing size (``--sizes``, pages; one host per
``--pages-per-host`` pages, the end-to-end benchmark's web) to an idle frontier with the
whole local stack (``bench.trawl_stack_run``), and reads from /proc, for each service,
PostgreSQL (postmaster and backends) and the broker: CPU seconds spent from seeding to the
end of the crawl, and peak memory (a service's peak resident size; PostgreSQL's largest
summed proportional set size over its processes). The simulated web's server is shown apart:
it is the world, not the crawler. With ``--repeat`` the sizes are crawled again in reverse
order, and the table gives the medians.

    .venv/bin/python -m bench.crawl_costs [--sizes 1000 3000 10000] [--repeat 1] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.e2e_vs_scrapy import log_figures
from bench.harness import machine
from bench.simweb_process import WebSpec, rendered_web, served_web
from bench.trawl_stack_run import crawl_with_stack
from cli.stack.layout import SERVICES

PARTS = (*SERVICES, "postgres", "broker", "simweb")


def crawl_once(spec: WebSpec, folder: Path) -> dict[str, Any]:
    web = rendered_web(spec.config)
    served = served_web(spec, folder / f"costs-{spec.pages}.log")
    served.start()
    try:
        crawl = crawl_with_stack(served, web.home_pages(), watch_lag=False)
    finally:
        served.stop()
    figures = log_figures(crawl.log, web)
    return {
        "pages": figures.pages,
        "seconds": round(figures.seconds, 1),
        "rate": round(figures.rate, 1),
        "cpu_seconds": {p: round(crawl.usage[p].cpu_seconds, 1) for p in PARTS},
        "peak_mib": {p: round(crawl.usage[p].peak_mib, 1) for p in PARTS},
        "postgres_processes": crawl.usage["postgres"].processes,
    }


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    def med(values: list[float]) -> float:
        return round(statistics.median(values), 1)

    return {
        "pages": int(statistics.median(r["pages"] for r in runs)),
        "seconds": med([r["seconds"] for r in runs]),
        "rate": med([r["rate"] for r in runs]),
        "cpu_seconds": {p: med([r["cpu_seconds"][p] for r in runs]) for p in PARTS},
        "peak_mib": {p: med([r["peak_mib"][p] for r in runs]) for p in PARTS},
        "runs": runs,
    }


def print_table(result: dict[str, Any]) -> None:
    sizes = result["sizes"]
    print(f"crawl_costs: CPU seconds / peak MiB per part against crawl size ({result['pages_per_host']} pages a host;"
          f" median of {result['repeat']} run(s))")
    header = "  " + f"{'part':<12}" + "".join(f"{s['pages']:>11,} pages      " for s in sizes)
    print(header)
    print("  " + f"{'':<12}" + "".join(f"{'CPU s':>11} {'peak MiB':>10}   " for _ in sizes))
    for part in PARTS:
        cells = "".join(f"{s['cpu_seconds'][part]:>11.1f} {s['peak_mib'][part]:>10.1f}   " for s in sizes)
        print(f"  {part:<12}{cells}")
    crawler = [sum(v for p, v in s["cpu_seconds"].items() if p != "simweb") for s in sizes]
    print("  " + f"{'crawler':<12}" + "".join(f"{c:>11.1f} {'':>10}   " for c in crawler))
    print("  " + f"{'crawl s':<12}" + "".join(f"{s['seconds']:>11.1f} {'':>10}   " for s in sizes))
    print("  " + f"{'pages/s':<12}" + "".join(f"{s['rate']:>11.1f} {'':>10}   " for s in sizes))
    print("  " + f"{'CPU ms/page':<12}" + "".join(
        f"{c * 1000 / max(s['pages'], 1):>11.1f} {'':>10}   " for c, s in zip(crawler, sizes, strict=True)))
    m = result["machine"]
    print(f"  machine: {m['cpus']} cpus, Python {m['python']}, load {m['load_average_1m_at_end']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 3000, 10000])
    parser.add_argument("--pages-per-host", type=int, default=10)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    runs: dict[int, list[dict[str, Any]]] = {size: [] for size in args.sizes}
    with tempfile.TemporaryDirectory(prefix="trawl-bench-costs-", dir="/var/tmp") as tmp:
        for i in range(args.repeat):
            for size in args.sizes if i % 2 == 0 else list(reversed(args.sizes)):
                spec = WebSpec(args.seed, max(1, size // args.pages_per_host), size)
                runs[size].append(crawl_once(spec, Path(tmp)))
                print(f"  run {i + 1}/{args.repeat}: {size} pages: {runs[size][-1]['rate']} pages/s", file=sys.stderr,
                      flush=True)
    result = {"benchmark": "crawl_costs", "pages_per_host": args.pages_per_host, "repeat": args.repeat,
              "sizes": [median_run(runs[size]) for size in args.sizes], "machine": machine()}
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_table(result)


if __name__ == "__main__":
    main()
