"""A service's tables are its own: others read only the read views its migrations create.

Each service with migrations owns the PostgreSQL schema of its name (``libs/common/db/migrations.py``).
Every SQL string in a service (Python string literals, f-string pieces included, and its migrations)
is scanned for another service's schema: the relation named there must be one of that owner's
read views (``<schema>.v_<what>_v<version>``), and the owner's migrations must create it. Docstrings
are prose and are not scanned.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SERVICES = ROOT / "services"
OWNERS = sorted(p.parent.name for p in SERVICES.glob("*/migrations") if p.is_dir())
_READ_VIEW = re.compile(r"v_[a-z0-9_]+_v[0-9]+")
_COMMENT = re.compile(r"--[^\n]*")
_CREATED_VIEW = re.compile(
    r"\b(?:CREATE(?:\s+OR\s+REPLACE)?\s+VIEW\s+(\w+)\.(\w+)|ALTER\s+VIEW\s+(\w+)\.\w+\s+RENAME\s+TO\s+(\w+))",
    re.IGNORECASE,
)


def _reference(schemas: list[str]) -> re.Pattern[str]:
    """``schema.relation`` of one of ``schemas``, not part of a dotted name (``services.linkbase.rows``)."""
    return re.compile(rf"(?<![\w.])({'|'.join(schemas)})\.(\w*)")


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def sql_texts(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every string that may hold SQL in a Python or SQL file (f-string pieces joined by a gap)."""
    source = path.read_text(encoding="utf-8")
    if path.suffix == ".sql":
        return [(1, source)]
    tree = ast.parse(source)
    skip = _docstrings(tree)
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            pieces = [v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else "\x00"
                      for v in node.values]
            out.append((node.lineno, "".join(pieces)))
            skip.update(id(v) for v in node.values)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            out.append((node.lineno, node.value))
    return out


def back_doors(texts: list[tuple[int, str]], own_schema: str, views: dict[str, set[str]]) -> list[str]:
    """The references in ``texts`` to another service's schema other than through a read view it publishes."""
    others = [s for s in views if s != own_schema]
    found = []
    for line, text in texts:
        code = _COMMENT.sub("", text)
        for match in _reference(others).finditer(code):
            schema, relation = match.group(1), match.group(2)
            if not relation and not code.startswith("\x00", match.end()):
                continue  # prose ("... for the scheduler."), not a relation
            if not _READ_VIEW.fullmatch(relation) or relation not in views[schema]:
                found.append(f"line {line}: {schema}.{relation or '<computed>'}")
    return found


def published_views() -> dict[str, set[str]]:
    """Schema -> the read views its owner's migrations create (renamed ones by their new name)."""
    views: dict[str, set[str]] = {schema: set() for schema in OWNERS}
    for schema in OWNERS:
        for migration in sorted((SERVICES / schema / "migrations").glob("*.sql")):
            for match in _CREATED_VIEW.finditer(migration.read_text(encoding="utf-8")):
                owner, name = (match.group(1), match.group(2)) if match.group(1) else (match.group(3), match.group(4))
                if owner == schema and _READ_VIEW.fullmatch(name):
                    views[schema].add(name)
    return views


def test_every_schema_owner_is_a_service_and_publishes_its_views_by_name() -> None:
    assert {"linkbase", "importance", "scheduler", "dedup"} <= set(OWNERS)
    views = published_views()
    assert {"v_urls_v1", "v_fetch_history_v1", "v_page_versions_v1", "v_published_pages_v1",
            "v_revealed_children_v1"} <= views["linkbase"]
    assert "v_pages_v1" in views["importance"]


@pytest.mark.parametrize("service", sorted(p.name for p in SERVICES.iterdir() if (p / "__init__.py").exists()))
def test_a_service_reads_other_services_only_through_their_read_views(service: str) -> None:
    views = published_views()
    found: list[str] = []
    for path in sorted((SERVICES / service).rglob("*")):
        if path.suffix in (".py", ".sql") and "_pb2" not in path.name:
            found.extend(f"{path.relative_to(ROOT)} {ref}" for ref in back_doors(sql_texts(path), service, views))
    assert found == [], "another service's tables read directly:\n" + "\n".join(found)


def test_the_command_line_reads_services_only_through_their_read_views() -> None:
    """Operators' tools (``cli/``) own no schema: what they read of a service is one of its read views."""
    views = published_views()
    found: list[str] = []
    for path in sorted((ROOT / "cli").rglob("*.py")):
        found.extend(f"{path.relative_to(ROOT)} {ref}" for ref in back_doors(sql_texts(path), "", views))
    assert found == [], "a service's tables read directly:\n" + "\n".join(found)
    assert {"v_frontier_v1", "v_hosts_v1"} <= views["scheduler"]
    assert "v_counts_v1" in views["linkbase"]


def test_a_back_door_is_found(tmp_path: Path) -> None:
    views = {"scheduler": set(), "linkbase": {"v_urls_v1"}, "importance": {"v_pages_v1"}}
    source = '''
"""Reads ``linkbase.urls`` (a docstring: prose, not scanned)."""
OK = "SELECT u.url FROM linkbase.v_urls_v1 u JOIN scheduler.frontier f USING (url_fp)"
TABLE = "SELECT url FROM linkbase.urls"
UNPUBLISHED = "SELECT * FROM importance.v_secret_v1"
NOT_VERSIONED = "SELECT * FROM importance.v_pages"
def f(table: str) -> str:
    return f"SELECT * FROM linkbase.{table}"
NAMES = "services.linkbase.rows trawl.importance-updates, written for the linkbase."
COMMENTED = """
-- the link base's old table, linkbase.urls, is not read here
SELECT 1"""
'''
    path = tmp_path / "sample.py"
    path.write_text(source, encoding="utf-8")
    found = back_doors(sql_texts(path), "scheduler", views)
    assert found == ["line 4: linkbase.urls", "line 5: importance.v_secret_v1", "line 6: importance.v_pages",
                     "line 8: linkbase.<computed>"]
