"""Regenerates the Python code for ``proto/`` into ``libs/common/wire/``.

Run ``python -m libs.common.wire.codegen`` after editing a ``.proto`` file.
``--check`` regenerates into a temporary folder and exits 1 when the committed
code differs (a test runs this, so stale generated code fails the suite).

protoc writes imports as ``from trawl.v1 import x_pb2``; they are rewritten to
the package's real location so that the generated code lives in one shared place.
"""

from __future__ import annotations

import argparse
import filecmp
import re
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PROTO_DIR = ROOT / "proto"
OUT_DIR = Path(__file__).resolve().parent / "trawl"
_IMPORT = re.compile(r"^from trawl\.v1 import ", re.MULTILINE)
_PACKAGE = "libs.common.wire.trawl.v1"


def proto_files() -> list[Path]:
    return sorted(PROTO_DIR.rglob("*.proto"))


def generate(out_root: Path) -> None:
    from grpc_tools import protoc  # dev dependency, imported only here

    out_root.mkdir(parents=True, exist_ok=True)
    files = [str(p.relative_to(PROTO_DIR)) for p in proto_files()]
    include = Path(protoc.__file__).parent / "_proto"
    bindir = Path(sys.executable).parent
    args = [
        "protoc",
        f"-I{PROTO_DIR}",
        f"-I{include}",
        f"--python_out={out_root}",
        f"--grpc_python_out={out_root}",
        f"--plugin=protoc-gen-mypy={bindir / 'protoc-gen-mypy'}",
        f"--plugin=protoc-gen-mypy_grpc={bindir / 'protoc-gen-mypy_grpc'}",
        f"--mypy_out={out_root}",
        f"--mypy_grpc_out={out_root}",
        *files,
    ]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed")
    for path in (out_root / "trawl").rglob("*.py*"):
        text = path.read_text()
        path.write_text(_IMPORT.sub(f"from {_PACKAGE} import ", text))
    for folder in [out_root / "trawl", *(p for p in (out_root / "trawl").rglob("*") if p.is_dir())]:
        (folder / "__init__.py").touch()


def _same_tree(a: Path, b: Path) -> list[str]:
    diffs: list[str] = []
    names_a = {p.relative_to(a) for p in a.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    names_b = {p.relative_to(b) for p in b.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    diffs += [f"missing: {n}" for n in sorted(names_a - names_b)]
    diffs += [f"extra: {n}" for n in sorted(names_b - names_a)]
    for name in sorted(names_a & names_b):
        if not filecmp.cmp(a / name, b / name, shallow=False):
            diffs.append(f"differs: {name}")
    return diffs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail if the committed code is stale")
    args = parser.parse_args(argv)
    if args.check:
        with tempfile.TemporaryDirectory() as tmp:
            generate(Path(tmp))
            diffs = _same_tree(Path(tmp) / "trawl", OUT_DIR)
        if diffs:
            print("generated code is stale; run: python -m libs.common.wire.codegen", file=sys.stderr)
            print("\n".join(diffs), file=sys.stderr)
            return 1
        print("generated code is current")
        return 0
    if OUT_DIR.exists():
        shutil.rmtree(OUT_DIR)
    generate(OUT_DIR.parent)
    print(f"generated {len(proto_files())} proto files into {OUT_DIR}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
