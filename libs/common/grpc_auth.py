"""Bearer-token authentication of Trawl's gRPC servers: every call but health and reflection needs a token.

One token guards every Trawl gRPC API (the scheduler's ``AdminService``, the link base's
``LinkbaseService``): the admin token, ``TRAWL_ADMIN_TOKEN`` or ``TRAWL_ADMIN_TOKEN_FILE``.
A caller sends ``authorization: Bearer <token>`` metadata (:func:`bearer_metadata`, or
:class:`BearerTokenCallInterceptor` on a channel). The server holds the valid tokens
(several, so that a new token can be rolled out before the old one is withdrawn) and
compares them in constant time; a call without a valid token is refused with
UNAUTHENTICATED, and no token, given or expected, is ever logged. A server with no token
configured refuses every protected call (it fails closed) and says so once at start.

Health and reflection stay open, so that probes and generic clients can list the services
and check them without a secret.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, cast

import grpc

from libs.common.settings import SettingsError, setting

log = logging.getLogger(__name__)
Req = TypeVar("Req")
Resp = TypeVar("Resp")

OPEN_PREFIXES: tuple[str, ...] = (
    "/grpc.health.v1.Health/",
    "/grpc.reflection.v1alpha.ServerReflection/",
    "/grpc.reflection.v1.ServerReflection/",
)
METADATA_KEY = "authorization"
SCHEME = "bearer"


@dataclass(frozen=True)
class AdminAuthSettings:
    token: str = setting(
        "TRAWL_ADMIN_TOKEN",
        "",
        "Bearer token of every Trawl gRPC API: the scheduler's admin API and the link base's API (prefer"
        " TRAWL_ADMIN_TOKEN_FILE). With neither set, every call but health and reflection is refused.",
    )
    token_file: str = setting(
        "TRAWL_ADMIN_TOKEN_FILE",
        "",
        "File holding the bearer token of the gRPC APIs (one valid token per line, so a new one can be added"
        " before the old one is removed); read at start.",
    )


def load_tokens(settings: AdminAuthSettings) -> tuple[str, ...]:
    """The valid tokens the settings name: the env value and every non-empty line of the file."""
    tokens = [settings.token.strip()] if settings.token.strip() else []
    if settings.token_file:
        path = Path(settings.token_file)
        try:
            text = path.read_text()
        except OSError as exc:
            raise SettingsError(
                f"TRAWL_ADMIN_TOKEN_FILE={settings.token_file!r} cannot be read: {exc.strerror}"
            ) from exc
        tokens += [line.strip() for line in text.splitlines() if line.strip()]
    return tuple(dict.fromkeys(tokens))


def bearer_metadata(token: str) -> tuple[tuple[str, str], ...]:
    """The call metadata a client sends with ``token``."""
    return ((METADATA_KEY, f"Bearer {token}"),)


def token_of(metadata: Sequence[tuple[str, Any]] | None) -> str | None:
    """The bearer token in a call's metadata, or None."""
    for key, value in metadata or ():
        if key.lower() != METADATA_KEY:
            continue
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
        scheme, _, token = text.strip().partition(" ")
        if scheme.lower() == SCHEME and token.strip():
            return token.strip()
    return None


def token_valid(given: str | None, valid: Sequence[str]) -> bool:
    """Constant-time check of ``given`` against every valid token (all are compared, always)."""
    if given is None:
        return False
    candidate = given.encode()
    matched = False
    for token in valid:
        matched |= hmac.compare_digest(candidate, token.encode())
    return matched


def _refusing_handler(handler: grpc.RpcMethodHandler[Req, Resp], details: str) -> grpc.RpcMethodHandler[Req, Resp]:
    """A handler of the same kind as ``handler`` that refuses the call."""

    async def refuse(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, details)

    codec: dict[str, Any] = {
        "request_deserializer": handler.request_deserializer,
        "response_serializer": handler.response_serializer,
    }
    if handler.request_streaming and handler.response_streaming:
        made: Any = grpc.stream_stream_rpc_method_handler(refuse, **codec)
    elif handler.request_streaming:
        made = grpc.stream_unary_rpc_method_handler(refuse, **codec)
    elif handler.response_streaming:
        made = grpc.unary_stream_rpc_method_handler(refuse, **codec)
    else:
        made = grpc.unary_unary_rpc_method_handler(refuse, **codec)
    return cast("grpc.RpcMethodHandler[Req, Resp]", made)


class BearerTokenInterceptor(grpc.aio.ServerInterceptor):
    """Refuses every call outside ``open_prefixes`` that does not carry one of ``tokens``."""

    def __init__(self, tokens: Sequence[str], open_prefixes: Sequence[str] = OPEN_PREFIXES) -> None:
        self._tokens = tuple(t for t in tokens if t)
        self._open = tuple(open_prefixes)
        self.refused = 0

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Req, Resp] | None]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Req, Resp] | None:
        handler = await continuation(handler_call_details)
        method = handler_call_details.method
        if handler is None or method.startswith(self._open):
            return handler
        given = token_of(handler_call_details.invocation_metadata)
        if token_valid(given, self._tokens):
            return handler
        self.refused += 1
        reason = "missing bearer token" if given is None else "invalid bearer token"
        if not self._tokens:
            reason = "no admin token is configured on the server: every call but health and reflection is refused"
        log.warning("refused %s: %s", method, reason)
        return _refusing_handler(handler, reason)


class BearerTokenCallInterceptor(grpc.aio.UnaryUnaryClientInterceptor):
    """Adds ``authorization: Bearer <token>`` to every unary call of an aio channel.

    ``grpc.aio.insecure_channel(address, interceptors=[BearerTokenCallInterceptor(token)])``
    gives a channel whose stubs need no metadata argument.
    """

    def __init__(self, token: str) -> None:
        self._metadata = bearer_metadata(token)

    async def intercept_unary_unary(
        self,
        continuation: Callable[[grpc.aio.ClientCallDetails, Any], Any],
        client_call_details: grpc.aio.ClientCallDetails,
        request: Any,
    ) -> Any:
        metadata = grpc.aio.Metadata(*(client_call_details.metadata or ()))
        for key, value in self._metadata:
            metadata.add(key, value)
        details = grpc.aio.ClientCallDetails(
            client_call_details.method, client_call_details.timeout, metadata,
            client_call_details.credentials, client_call_details.wait_for_ready,
        )
        return await continuation(details, request)


def admin_interceptors(env: Mapping[str, str]) -> list[grpc.aio.ServerInterceptor]:
    """The interceptor guarding a Trawl gRPC server, from ``TRAWL_ADMIN_TOKEN[_FILE]`` (read by factories)."""
    from libs.common.settings import load_settings

    tokens = load_tokens(load_settings(AdminAuthSettings, env))
    if not tokens:
        log.warning("no admin token configured (TRAWL_ADMIN_TOKEN or TRAWL_ADMIN_TOKEN_FILE): every call but"
                    " health and reflection is refused")
    return [BearerTokenInterceptor(tokens)]
