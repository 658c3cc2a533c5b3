"""A generic gRPC client that knows nothing but an address: grpc_requests, types from server reflection.

Run as a script, in a process that imports nothing of Trawl (no generated stub or message
class), the way an operator's tool (grpcurl, Postman, grpc_requests) meets a server:

    python tests/integration/common/reflection_probe.py ADDRESS [--token T] [SERVICE/METHOD=JSON ...]

It lists every service the server reflects with its methods, then makes each call (with
``authorization: Bearer T`` when a token is given) and prints one JSON object:
``{"services": {service: [method, ...]}, "calls": [{"call", "code", "response"|"details"}],
"trawl_modules": [...]}``, the last the modules of Trawl it imported: none.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import grpc
from grpc_requests import Client


def probe(address: str, token: str | None, calls: list[str]) -> dict[str, Any]:
    client = Client(address)
    services = {name: sorted(client.get_methods_meta(name)) for name in client.service_names}
    metadata = [("authorization", f"Bearer {token}")] if token else None
    made = []
    for spec in calls:
        target, _, body = spec.partition("=")
        service, _, method = target.rpartition("/")
        try:
            response = client.request(service, method, json.loads(body or "{}"), metadata=metadata, timeout=10)
            made.append({"call": target, "code": "OK", "response": response})
        except grpc.RpcError as exc:
            made.append({"call": target, "code": exc.code().name, "details": exc.details()})
    trawl = sorted(m for m in sys.modules if m.split(".")[0] in ("libs", "services", "cli", "tests"))
    return {"services": services, "calls": made, "trawl_modules": trawl}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("address")
    parser.add_argument("--token")
    parser.add_argument("calls", nargs="*", help="SERVICE/METHOD=JSON")
    args = parser.parse_args(argv)
    print(json.dumps(probe(args.address, args.token, args.calls)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
