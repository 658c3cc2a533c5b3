"""A small synchronous client of the scheduler's admin API.

Every call carries the admin bearer token (``authorization: Bearer <token>``); with ``tls``
the channel is TLS, verified against ``ca_file`` (or the system's roots). Answers are plain
dicts (JSON-ready: field names as in the proto, 64-bit numbers as ints, enums by name, an
unset optional field as None).
"""

from __future__ import annotations

from pathlib import Path
from types import TracebackType
from typing import Any

import grpc
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from libs.common.grpc_auth import bearer_metadata
from libs.common.wire import admin as admin_pb
from libs.common.wire import admin_grpc


def as_dict(message: Message) -> dict[str, Any]:
    """``message`` as a dict: every field, repeated ones as lists, optional ones None when unset."""
    out: dict[str, Any] = {}
    for field in message.DESCRIPTOR.fields:
        value = getattr(message, field.name)
        repeated = field.is_repeated
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            if repeated:
                out[field.name] = [as_dict(v) for v in value]
            else:
                out[field.name] = as_dict(value) if message.HasField(field.name) else None
            continue
        if not repeated and field.has_presence and not message.HasField(field.name):
            out[field.name] = None
            continue
        if field.type == FieldDescriptor.TYPE_ENUM and field.enum_type is not None:
            name_of = field.enum_type.values_by_number
            out[field.name] = [name_of[v].name if v in name_of else v for v in value] if repeated else (
                name_of[value].name if value in name_of else value)
        else:
            out[field.name] = list(value) if repeated else value
    return out


class AdminClient:
    def __init__(
        self,
        address: str,
        timeout: float = 10.0,
        *,
        token: str | None = None,
        tls: bool = False,
        ca_file: str | None = None,
        server_name: str | None = None,
    ) -> None:
        if tls:
            roots = Path(ca_file).read_bytes() if ca_file else None
            options = [("grpc.ssl_target_name_override", server_name)] if server_name else []
            self._channel = grpc.secure_channel(address, grpc.ssl_channel_credentials(roots), options=options)
        else:
            self._channel = grpc.insecure_channel(address)
        self._stub = admin_grpc.AdminServiceStub(self._channel)
        self._timeout = timeout
        self._metadata = bearer_metadata(token) if token else ()

    def __enter__(self) -> AdminClient:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self._channel.close()

    def _call(self, method: str, request: Message, timeout: float | None = None) -> Any:
        return getattr(self._stub, method)(request, timeout=timeout or self._timeout, metadata=self._metadata)

    # -- seeds and sites --------------------------------------------------------------------

    def add_seeds(self, urls: list[str]) -> dict[str, Any]:
        reply = self._call("AddSeeds", admin_pb.AddSeedsRequest(urls=urls))
        return {
            "accepted": reply.accepted,
            "already_known": reply.already_known,
            "rejected": [{"url": r.url, "reason": r.reason} for r in reply.rejected],
        }

    def remove_seeds(self, urls: list[str]) -> dict[str, Any]:
        return as_dict(self._call("RemoveSeeds", admin_pb.RemoveSeedsRequest(urls=urls)))

    def list_seeds(self, limit: int = 100, host: str = "") -> dict[str, Any]:
        return as_dict(self._call("ListSeeds", admin_pb.ListSeedsRequest(limit=limit, host=host)))

    def add_sites(self, start_urls: list[str]) -> dict[str, Any]:
        return as_dict(self._call("AddSites", admin_pb.AddCrawlSitesRequest(start_urls=start_urls)))

    def remove_sites(self, hosts: list[str]) -> dict[str, Any]:
        return as_dict(self._call("RemoveSites", admin_pb.RemoveCrawlSitesRequest(hosts=hosts)))

    def list_sites(self) -> dict[str, Any]:
        return as_dict(self._call("ListSites", admin_pb.ListCrawlSitesRequest()))

    # -- pause, resume, drain -----------------------------------------------------------------

    def pause(self, paused: bool) -> bool:
        return bool(self.set_paused(paused)["paused"])

    def set_paused(self, paused: bool) -> dict[str, Any]:
        if paused:
            return as_dict(self._call("PauseCrawl", admin_pb.PauseCrawlRequest()))
        return as_dict(self._call("ResumeCrawl", admin_pb.ResumeCrawlRequest()))

    def drain(self, wait_seconds: float) -> dict[str, Any]:
        request = admin_pb.DrainCrawlRequest(wait_seconds=wait_seconds)
        return as_dict(self._call("DrainCrawl", request, timeout=self._timeout + max(wait_seconds, 0.0)))

    # -- host policies --------------------------------------------------------------------------

    def set_host_policy(self, host: str, replace: bool = False, **fields: Any) -> dict[str, Any]:
        """Sets the named policy fields (``min_delay_seconds``, ``max_concurrency``, ``budget``,
        ``blocked_until_ms``, ``partition_groups``, ``note``); None leaves a field out."""
        policy = admin_pb.HostPolicy(host=host, **{k: v for k, v in fields.items() if v is not None})
        return as_dict(self._call("SetHostPolicy", admin_pb.SetHostPolicyRequest(policy=policy, replace=replace)))

    def host_policies(self, hosts: list[str] | None = None) -> dict[str, Any]:
        return as_dict(self._call("ListHostPolicies", admin_pb.ListHostPoliciesRequest(hosts=hosts or [])))

    def clear_host_policies(self, hosts: list[str]) -> dict[str, Any]:
        return as_dict(self._call("ClearHostPolicies", admin_pb.ClearHostPoliciesRequest(hosts=hosts)))

    # -- reports --------------------------------------------------------------------------------

    def explain_url(self, url: str) -> dict[str, Any]:
        """How the URL's next fetch was planned (freshness), as a plain dict."""
        from google.protobuf.json_format import MessageToDict

        reply = self._call("ExplainUrl", admin_pb.ExplainUrlRequest(url=url))
        return dict(MessageToDict(reply, preserving_proto_field_name=True))

    def lookup_url(self, url: str, history_limit: int = 20) -> dict[str, Any]:
        return as_dict(self._call("LookupUrl", admin_pb.LookupUrlRequest(url=url, history_limit=history_limit)))

    def top_pages(self, limit: int = 20, host: str = "") -> dict[str, Any]:
        return as_dict(self._call("GetTopPages", admin_pb.GetTopPagesRequest(limit=limit, host=host)))

    def stats(self) -> dict[str, Any]:
        reply = self._call("GetCrawlStats", admin_pb.GetCrawlStatsRequest())
        return {
            "paused": reply.paused,
            "frontier": {c.status: c.count for c in reply.frontier},
            "in_flight": reply.in_flight,
            "hosts": reply.hosts,
            "fetched": reply.fetched_total,
            "failed": reply.failed_total,
            "robots_blocked": reply.robots_blocked_total,
            "queued_ready": reply.queued_ready,
        }

    def host_stats(self, hosts: list[str] | None = None, limit: int = 20, order_by: str = "") -> dict[str, Any]:
        request = admin_pb.GetHostStatsRequest(hosts=hosts or [], limit=limit, order_by=order_by)
        return as_dict(self._call("GetHostStats", request))

    def topic_stats(self) -> dict[str, Any]:
        return as_dict(self._call("GetTopicStats", admin_pb.GetTopicStatsRequest(), timeout=self._timeout + 20))

    # -- crawl goal -------------------------------------------------------------------------------

    def crawl_goal(self) -> dict[str, Any]:
        return as_dict(self._call("GetCrawlGoal", admin_pb.GetCrawlGoalRequest()))

    def set_crawl_goal(
        self, policy: str = "", goal: str = "", sites: list[str] | None = None, budget: int = 0, step: int = 0,
        parallel: int = 0, reset: bool = False,
    ) -> dict[str, Any]:
        spec = admin_pb.CrawlGoal(policy=policy, goal=goal, sites=sites or [], budget=budget, step=step,
                                  parallel=parallel)
        return as_dict(self._call("SetCrawlGoal", admin_pb.SetCrawlGoalRequest(goal=spec, reset=reset)))
