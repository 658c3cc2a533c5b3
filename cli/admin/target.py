"""Which admin API a command talks to, with which token, and how its failures are shown.

With ``--admin ADDRESS`` (or ``TRAWL_ADMIN_ADDRESS``) the token is ``TRAWL_ADMIN_TOKEN`` or
the first line of ``TRAWL_ADMIN_TOKEN_FILE``; without it, the local stack's scheduler and the
token ``trawl up`` wrote into the stack's home. ``TRAWL_ADMIN_TLS=true`` speaks TLS, verified
against ``TRAWL_ADMIN_TLS_CA_FILE`` (else the system's roots).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import grpc
import typer

from cli.admin_client import AdminClient
from cli.output import console
from cli.stack.layout import StackSettings, StackState, state_path
from cli.stack.local_stack import admin_token
from libs.common.grpc_auth import AdminAuthSettings, load_tokens
from libs.common.settings import SettingsError, load_settings, setting

ADMIN_OPTION = typer.Option(
    "", "--admin", envvar="TRAWL_ADMIN_ADDRESS", help="host:port of the admin API (default: the local stack's)."
)
JSON_OPTION = typer.Option(False, "--json", help="Print one JSON object.")


@dataclass(frozen=True)
class AdminTlsSettings:
    tls: bool = setting("TRAWL_ADMIN_TLS", False, "Talk to the admin API over TLS.")
    ca_file: str = setting("TRAWL_ADMIN_TLS_CA_FILE", "", "PEM CA that signed the admin API's certificate.")
    server_name: str = setting(
        "TRAWL_ADMIN_TLS_SERVER_NAME", "", "Name expected in the admin API's certificate, if not the address's host."
    )


@dataclass(frozen=True)
class AdminTarget:
    address: str
    token: str | None
    tls: AdminTlsSettings

    def client(self, timeout: float = 10.0) -> AdminClient:
        return AdminClient(self.address, timeout, token=self.token, tls=self.tls.tls,
                           ca_file=self.tls.ca_file or None, server_name=self.tls.server_name or None)


def _fail(message: str, code: int = 1) -> typer.Exit:
    console.print(f"[red]{message}[/red]")
    return typer.Exit(code)


def _env_token() -> str | None:
    tokens = load_tokens(load_settings(AdminAuthSettings, os.environ))
    return tokens[0] if tokens else None


def resolve(address: str) -> AdminTarget:
    """The admin API named by ``address``, or the local stack's."""
    try:
        tls = load_settings(AdminTlsSettings, os.environ)
        if address:
            return AdminTarget(address, _env_token(), tls)
        stack = load_settings(StackSettings, os.environ)
    except SettingsError as exc:
        raise _fail(str(exc), 2) from exc
    state = StackState.load(state_path(stack))
    if state is None:
        raise _fail(f"no local stack in {stack.root}; run `trawl up` first, or name an admin API with --admin")
    return AdminTarget(f"127.0.0.1:{state.grpc_ports['scheduler']}", admin_token(stack) or _env_token(), tls)


@contextmanager
def session(address: str, timeout: float = 10.0) -> Iterator[AdminClient]:
    """A client of the admin API; an error it answers becomes a clear message and exit code 1."""
    target = resolve(address)
    try:
        with target.client(timeout) as client:
            yield client
    except grpc.RpcError as exc:
        code = exc.code() if isinstance(exc, grpc.Call) else None
        details = exc.details() if isinstance(exc, grpc.Call) else str(exc)
        if code == grpc.StatusCode.UNAUTHENTICATED:
            hint = "set TRAWL_ADMIN_TOKEN or TRAWL_ADMIN_TOKEN_FILE" if address else "the local stack's token"
            raise _fail(f"the admin API at {target.address} refused the call: {details} ({hint})") from exc
        if code == grpc.StatusCode.UNAVAILABLE:
            raise _fail(f"cannot reach the admin API at {target.address}: {details}") from exc
        name = code.name if code is not None else "error"
        raise _fail(f"the admin API at {target.address} answered {name}: {details}") from exc
