"""gRPC server bootstrap: the standard health service, reflection and the token guard on every server.

``start()`` returns the bound port (bind to port 0 in tests). ``stop()`` first marks every
service NOT_SERVING, then lets in-flight calls finish within the grace period.

Every server is guarded (``libs/common/grpc_auth.py``): a call to any method but health's and
reflection's needs the admin token. A server given no :class:`BearerTokenInterceptor` gets one
with no token, which refuses every such call, so a method registered on a server that was not
handed the token fails closed. :func:`grpc_server_from` is the factory services use: it reads
the token and the TLS settings.

TLS is a setting (:class:`GrpcTlsSettings`: a certificate chain and its key, PEM files);
with it the port serves TLS only, and clients (probes too) must speak TLS.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from libs.common.grpc_auth import BearerTokenInterceptor, admin_interceptors
from libs.common.settings import SettingsError, load_settings, setting

log = logging.getLogger(__name__)

Registrar = Callable[[grpc.aio.Server], None]


@dataclass(frozen=True)
class GrpcTlsSettings:
    cert_file: str = setting(
        "TRAWL_GRPC_TLS_CERT_FILE",
        "",
        "PEM certificate chain of the gRPC server; with the key the port serves TLS only, else plaintext.",
    )
    key_file: str = setting("TRAWL_GRPC_TLS_KEY_FILE", "", "PEM private key of TRAWL_GRPC_TLS_CERT_FILE.")


def server_credentials(settings: GrpcTlsSettings) -> grpc.ServerCredentials | None:
    """TLS credentials from the settings' files, or None for plaintext (neither file set)."""
    if not settings.cert_file and not settings.key_file:
        return None
    if not (settings.cert_file and settings.key_file):
        raise SettingsError("TLS needs both TRAWL_GRPC_TLS_CERT_FILE and TRAWL_GRPC_TLS_KEY_FILE")
    try:
        chain, key = Path(settings.cert_file).read_bytes(), Path(settings.key_file).read_bytes()
    except OSError as exc:
        raise SettingsError(f"cannot read the TLS certificate or key: {exc.filename}: {exc.strerror}") from exc
    return grpc.ssl_server_credentials([(key, chain)])


class GrpcServer:
    def __init__(
        self,
        address: str,
        *,
        service_names: Sequence[str] = (),
        registrars: Sequence[Registrar] = (),
        interceptors: Sequence[grpc.aio.ServerInterceptor] = (),
        credentials: grpc.ServerCredentials | None = None,
    ) -> None:
        self._address = address
        self._service_names = list(service_names)
        self._registrars = list(registrars)
        self._interceptors = list(interceptors)
        if not any(isinstance(i, BearerTokenInterceptor) for i in self._interceptors):
            self._interceptors.insert(0, BearerTokenInterceptor(()))  # fail closed: only health and reflection
        self._credentials = credentials
        self._server: grpc.aio.Server | None = None
        self._health = health.aio.HealthServicer()
        self.port = 0

    async def start(self) -> int:
        # gRPC sets SO_REUSEPORT by default, so a second process would silently share a taken
        # port (and answer the first one's health checks): refuse the address instead.
        server = grpc.aio.server(interceptors=self._interceptors, options=[("grpc.so_reuseport", 0)])
        for register in self._registrars:
            register(server)
        health_pb2_grpc.add_HealthServicer_to_server(self._health, server)
        names = [*self._service_names, health.SERVICE_NAME, reflection.SERVICE_NAME]
        reflection.enable_server_reflection(names, server)
        try:
            if self._credentials is None:
                self.port = server.add_insecure_port(self._address)
            else:
                self.port = server.add_secure_port(self._address, self._credentials)
        except RuntimeError as exc:  # recent grpcio raises instead of returning 0
            raise OSError(f"cannot bind gRPC server to {self._address}") from exc
        if self.port == 0:
            raise OSError(f"cannot bind gRPC server to {self._address}")
        await server.start()
        self._server = server
        await self.set_serving(True)
        log.info("gRPC listening on port %s%s", self.port, " (TLS)" if self._credentials else "")
        return self.port

    async def set_serving(self, serving: bool) -> None:
        status = health_pb2.HealthCheckResponse.SERVING if serving else health_pb2.HealthCheckResponse.NOT_SERVING
        for name in ["", *self._service_names]:
            await self._health.set(name, status)

    async def stop(self, grace: float = 5.0) -> None:
        if self._server is None:
            return
        await self.set_serving(False)
        await self._health.enter_graceful_shutdown()
        await self._server.stop(grace)
        self._server = None


def grpc_server_from(
    env: Mapping[str, str],
    address: str,
    *,
    service_names: Sequence[str] = (),
    registrars: Sequence[Registrar] = (),
) -> GrpcServer:
    """A service's gRPC server: guarded by the admin token, over TLS when configured (a factory: reads ``env``)."""
    return GrpcServer(
        address,
        service_names=service_names,
        registrars=registrars,
        interceptors=admin_interceptors(env),
        credentials=server_credentials(load_settings(GrpcTlsSettings, env)),
    )
