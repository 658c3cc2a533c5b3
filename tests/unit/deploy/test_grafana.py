"""deploy/grafana: the dashboard reads only metrics the code exports, shows every one, and ships as a ConfigMap."""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY

from cli.stack.layout import SERVICES
from tests.unit.deploy.manifests import ROOT, TARGETS, of_kind, render

DASHBOARD = ROOT / "deploy" / "grafana" / "trawl-dashboard.json"
METRIC = re.compile(r"\btrawl_[a-z_]+\b")
SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}


@pytest.fixture(scope="module")
def dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return loaded


def exported_metrics() -> dict[str, set[str]]:
    """Family name -> the sample names Prometheus scrapes, for every trawl_* metric the services define."""
    importlib.import_module("libs.common.metrics")
    for service in SERVICES:
        importlib.import_module(f"services.{service}.main")  # imports the modules that define their metrics
    return {m.name: {m.name + suffix for suffix in SUFFIXES.get(m.type, ("",))}
            for m in REGISTRY.collect() if m.name.startswith("trawl_")}


def expressions(dashboard: dict[str, Any]) -> list[str]:
    return [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]


def test_every_panel_queries_the_chosen_prometheus(dashboard: dict[str, Any]) -> None:
    assert dashboard["uid"] == "trawl-crawl"
    (variable,) = dashboard["templating"]["list"]
    assert (variable["name"], variable["type"], variable["query"]) == ("datasource", "datasource", "prometheus")
    panels = [p for p in dashboard["panels"] if p["type"] != "row"]
    assert len({p["id"] for p in dashboard["panels"]}) == len(dashboard["panels"])
    for panel in panels:
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
        assert panel["targets"] and all(t["expr"].strip() for t in panel["targets"]), panel["title"]
        grid = panel["gridPos"]
        assert grid["x"] >= 0 and grid["x"] + grid["w"] <= 24, panel["title"]


def test_the_dashboard_reads_only_exported_metrics_and_shows_them_all(dashboard: dict[str, Any]) -> None:
    exported = exported_metrics()
    scraped = set().union(*exported.values())
    used = {name for expr in expressions(dashboard) for name in METRIC.findall(expr)}
    assert not used - scraped, f"the dashboard reads metrics no service exports: {sorted(used - scraped)}"
    missing = [family for family, samples in exported.items() if not samples & used]
    assert not missing, f"exported but on no panel: {sorted(missing)}"


def test_production_ships_the_dashboard_for_grafanas_sidecar() -> None:
    docs = render(TARGETS["production"])
    config = of_kind(docs, "ConfigMap")["trawl-grafana-dashboard"]
    assert config["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(config["data"][Path(DASHBOARD).name]) == json.loads(DASHBOARD.read_text())
