"""The unprivileged OS account that runs PostgreSQL when we are root.

``initdb`` and ``postgres`` refuse to run as root. When the caller is root, the
server runs as a system account (created on first use); otherwise it simply
runs as the caller.
"""

from __future__ import annotations

import logging
import os
import pwd
import shutil
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

from libs.localinfra.errors import LocalInfraError

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class OsUser:
    """The account a server runs as: its ids and whether we must switch to it."""

    name: str
    uid: int
    gid: int
    switch: bool

    @property
    def groups(self) -> frozenset[int]:
        """The account's primary and supplementary group ids."""
        return frozenset(os.getgrouplist(self.name, self.gid))

    def run_kwargs(self) -> dict[str, object]:
        """Keyword arguments for ``subprocess`` that run a child as this account."""
        if not self.switch:
            return {}
        return {"user": self.uid, "group": self.gid, "extra_groups": []}

    def can(self, path: Path, mode: int) -> bool:
        """True when this account has ``mode`` (a mix of R_OK, W_OK, X_OK) on ``path`` itself."""
        try:
            st = path.stat()
        except OSError:
            return False
        if self.uid == 0:
            return True
        if st.st_uid == self.uid:
            shift = 6
        elif st.st_gid in self.groups:
            shift = 3
        else:
            shift = 0
        granted = (stat.S_IMODE(st.st_mode) >> shift) & 0o7
        return granted & mode == mode

    def can_reach(self, path: Path) -> bool:
        """True when this account can traverse every directory above ``path``."""
        return all(self.can(parent, os.X_OK) for parent in path.resolve().parents)

    def chown(self, path: Path, recursive: bool = False) -> None:
        """Give ``path`` (and with ``recursive`` everything below it) to this account."""
        if not self.switch:
            return
        os.chown(path, self.uid, self.gid)
        if not recursive:
            return
        for root, dirs, files in os.walk(path):
            for name in dirs + files:
                os.chown(Path(root) / name, self.uid, self.gid, follow_symlinks=False)


def server_user(name: str) -> OsUser:
    """The account to run a server as: ``name`` (created if missing) when root, else the caller."""
    if os.geteuid() != 0:
        entry = pwd.getpwuid(os.geteuid())
        return OsUser(entry.pw_name, entry.pw_uid, entry.pw_gid, switch=False)
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        entry = _create_system_user(name)
    if entry.pw_uid == 0:
        raise LocalInfraError(f"OS user {name!r} is root; PostgreSQL refuses to run as root")
    return OsUser(entry.pw_name, entry.pw_uid, entry.pw_gid, switch=True)


def _create_system_user(name: str) -> pwd.struct_passwd:
    useradd = shutil.which("useradd") or "/usr/sbin/useradd"
    nologin = shutil.which("nologin") or "/usr/sbin/nologin"
    logger.info("creating system user %s", name)
    result = subprocess.run(
        [useradd, "--system", "--no-create-home", "--shell", nologin, name],
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        # A concurrent creator may have won the race; the account existing is all that matters.
        return pwd.getpwnam(name)
    except KeyError:
        raise LocalInfraError(f"could not create OS user {name!r}: {result.stderr.strip()}") from None
