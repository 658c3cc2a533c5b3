"""Container health check: asks a service's standard gRPC health service whether it serves.

    python -m cli.stack.healthcheck 127.0.0.1:50051 [--timeout SECONDS]

Exit status 0 when the answer is SERVING, 1 otherwise (NOT_SERVING, unreachable, timeout).
Used by docker-compose's ``healthcheck``; Kubernetes uses its native ``grpc`` probes instead.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from cli.stack import health


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cli.stack.healthcheck", description=__doc__.splitlines()[0])
    parser.add_argument("address", help="host:port of the service's gRPC server")
    parser.add_argument("--timeout", type=float, default=3.0, help="seconds to wait for the answer")
    args = parser.parse_args(argv)
    status = health.check(args.address, timeout=args.timeout)
    print(f"{args.address}: {status}")
    return 0 if status == "SERVING" else 1


if __name__ == "__main__":
    sys.exit(main())
