"""The generated wire code is current, and a stale tree is detected."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from libs.common.wire import codegen

ROOT = Path(__file__).resolve().parents[3]


def test_committed_generated_code_is_current() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "libs.common.wire.codegen", "--check"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "current" in done.stdout


def test_codegen_knows_where_the_protos_and_the_code_are() -> None:
    assert codegen.ROOT == ROOT
    assert {p.name for p in codegen.proto_files()} >= {"messages.proto", "admin.proto", "linkbase.proto"}
    assert (codegen.OUT_DIR / "v1" / "messages_pb2.py").is_file()


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_identical_trees_have_no_differences(tmp_path: Path) -> None:
    files = {"v1/__init__.py": "", "v1/a_pb2.py": "A = 1\n", "v1/a_pb2.pyi": "A: int\n"}
    assert codegen._same_tree(_tree(tmp_path / "new", files), _tree(tmp_path / "old", files)) == []


def test_a_changed_file_is_reported(tmp_path: Path) -> None:
    files = {"v1/__init__.py": "", "v1/a_pb2.py": "A = 1\n", "v1/b_pb2.py": "B = 1\n"}
    new = _tree(tmp_path / "new", files)
    old = _tree(tmp_path / "old", {**files, "v1/a_pb2.py": "A = 2\n"})
    assert codegen._same_tree(new, old) == ["differs: v1/a_pb2.py"]


def test_missing_and_extra_files_are_reported_and_caches_ignored(tmp_path: Path) -> None:
    new = _tree(tmp_path / "new", {"v1/a_pb2.py": "A = 1\n", "v1/c_pb2.py": "C = 1\n"})
    old = _tree(tmp_path / "old", {"v1/a_pb2.py": "A = 1\n", "v1/gone_pb2.py": "G = 1\n",
                                   "v1/__pycache__/a_pb2.cpython-311.pyc": "x"})
    assert codegen._same_tree(new, old) == ["missing: v1/c_pb2.py", "extra: v1/gone_pb2.py"]
