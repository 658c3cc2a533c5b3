"""Generated wire contracts (protobuf messages and gRPC stubs) of package trawl.v1.

Regenerate with ``python -m libs.common.wire.codegen``; never edit ``trawl/`` by hand.
"""

from __future__ import annotations

from libs.common.wire.trawl.v1 import admin_pb2 as admin
from libs.common.wire.trawl.v1 import admin_pb2_grpc as admin_grpc
from libs.common.wire.trawl.v1 import linkbase_pb2 as linkbase
from libs.common.wire.trawl.v1 import linkbase_pb2_grpc as linkbase_grpc
from libs.common.wire.trawl.v1 import messages_pb2 as messages

__all__ = ["admin", "admin_grpc", "linkbase", "linkbase_grpc", "messages"]
