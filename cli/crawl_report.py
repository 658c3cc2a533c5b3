"""The summary of a crawl of the simulated web: what was fetched, and whether it was right.

Everything is judged from outside the crawler where possible (what the crawler holds is read
through the read views its services publish, `v_*`): coverage against the
simulated web's ground truth, politeness and robots.txt compliance from the web server's
own request log, importance against the true PageRank of the simulated graph.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from scipy.stats import spearmanr

from cli.output import console
from libs.common.urls import normalize_url
from libs.simweb import SimWeb
from libs.simweb.log_checks import max_concurrency_per_host, min_gap_per_host, robots_violations
from libs.simweb.request_log import RequestRecord

GAP_TOLERANCE = 0.005  # seconds: timer granularity of the server's own clock


def _scalar(conn: psycopg.Connection[Any], sql: str) -> int:
    row = conn.execute(sql.encode()).fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def politeness_check(log: Sequence[RequestRecord], web: SimWeb, min_delay: float) -> dict[str, Any]:
    concurrency = max_concurrency_per_host(log)
    gaps = min_gap_per_host(log)
    too_close = {
        host: round(gap, 4)
        for host, gap in gaps.items()
        if gap + GAP_TOLERANCE < max(min_delay, web.crawl_delay(host) or 0.0)
    }
    return {
        "requests": len(log),
        "hosts_with_two_in_flight": sorted(h for h, n in concurrency.items() if n > 1),
        "hosts_with_gap_below_delay": too_close,
        "robots_violations": [r.url for r in robots_violations(log, web)][:20],
        "ok": not too_close and all(n <= 1 for n in concurrency.values()) and not robots_violations(log, web),
    }


def fetch_order_correlation(conn: psycopg.Connection[Any], web: SimWeb) -> float:
    """Spearman correlation of fetch order with true PageRank (1: best pages first; random: ~0)."""
    truth = {normalize_url(u): r for u, r in web.pagerank().items()}
    rows = conn.execute(
        "SELECT url, fetch_seq FROM scheduler.v_frontier_v1 WHERE status = 'fetched' AND fetch_seq IS NOT NULL"
    ).fetchall()
    pairs = [(seq, truth[url]) for url, seq in rows if url in truth]
    if len(pairs) < 3:
        return 0.0
    rho = spearmanr([-seq for seq, _ in pairs], [rank for _, rank in pairs]).statistic
    return float(rho)


def crawl_report(conn: psycopg.Connection[Any], web: SimWeb, log: Sequence[RequestRecord],
                 crawl_seconds: float, min_delay: float) -> dict[str, Any]:
    fetched = _scalar(conn, "SELECT count(*) FROM scheduler.v_frontier_v1 WHERE status = 'fetched'")
    reachable = {normalize_url(u) for u in web.reachable(web.home_pages())}
    fetched_urls = {r[0] for r in conn.execute("SELECT url FROM scheduler.v_frontier_v1 WHERE status = 'fetched'")}
    truth = web.pagerank()
    top = conn.execute(
        "SELECT url, (history + cash) FROM importance.v_pages_v1 ORDER BY history + cash DESC LIMIT 10"
    ).fetchall()
    duplicates, links, bad_links = conn.execute(
        "SELECT duplicates, links, bad_links FROM linkbase.v_counts_v1"
    ).fetchone() or (0, 0, 0)
    rank_of = {normalize_url(u): i + 1 for i, (u, _) in enumerate(sorted(truth.items(), key=lambda kv: -kv[1]))}
    return {
        "pages_fetched": fetched,
        "pages_reachable_and_allowed": len(reachable),
        "missed": len(reachable - fetched_urls),
        "pages_per_second": round(fetched / crawl_seconds, 1) if crawl_seconds else 0.0,
        "crawl_seconds": round(crawl_seconds, 1),
        "duplicates": int(duplicates),
        "hosts": _scalar(conn, "SELECT count(*) FROM scheduler.v_hosts_v1"),
        "robots_blocked": _scalar(conn, "SELECT count(*) FROM scheduler.v_frontier_v1 WHERE status = 'blocked'"),
        "failed": _scalar(conn, "SELECT count(*) FROM scheduler.v_frontier_v1 WHERE status = 'failed'"),
        "links": int(links),
        "bad_links": int(bad_links),
        "top_pages": [
            {"url": url, "importance_cash": round(float(score), 4), "true_pagerank_rank": rank_of.get(url)}
            for url, score in top
        ],
        "fetch_order_vs_pagerank_spearman": round(fetch_order_correlation(conn, web), 3),
        "politeness": politeness_check(log, web, min_delay),
    }


def print_report(report: dict[str, Any]) -> None:
    from rich.table import Table

    table = Table(title="Crawl summary")
    table.add_column("measure")
    table.add_column("value", justify="right")
    for key in ("pages_fetched", "pages_reachable_and_allowed", "missed", "duplicates", "hosts", "robots_blocked",
                "failed", "links", "bad_links", "crawl_seconds", "pages_per_second",
                "fetch_order_vs_pagerank_spearman", "total_seconds"):
        table.add_row(key.replace("_", " "), str(report.get(key, "")))
    polite = report["politeness"]
    table.add_row("requests seen by the web", str(polite["requests"]))
    table.add_row("politeness and robots.txt", "respected" if polite["ok"] else f"VIOLATED: {polite}")
    console.print(table)
    top = Table(title="Top 10 pages by importance (OPIC cash + history)")
    top.add_column("url")
    top.add_column("importance", justify="right")
    top.add_column("true PageRank rank", justify="right")
    for row in report["top_pages"]:
        top.add_row(row["url"], str(row["importance_cash"]), str(row["true_pagerank_rank"]))
    console.print(top)
