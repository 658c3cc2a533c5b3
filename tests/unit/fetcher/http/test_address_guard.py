"""The SSRF guard: private, loopback, link-local and multicast targets refused after resolution."""

from __future__ import annotations

import time

import pytest
from aiohttp import web

from services.fetcher.http.address_guard import AddressPolicy, special_purpose


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1", "loopback"),
        ("::1", "loopback"),
        ("10.1.2.3", "private"),
        ("172.16.0.9", "private"),
        ("192.168.1.1", "private"),
        ("169.254.169.254", "link-local"),
        ("fe80::1", "link-local"),
        ("224.0.0.1", "multicast"),
        ("ff02::1", "multicast"),
        ("0.0.0.0", "unspecified"),
        ("::ffff:127.0.0.1", "loopback"),
        ("100.64.0.1", "not global"),
        ("93.184.216.34", None),
        ("2606:4700::1111", None),
    ],
)
def test_special_purpose_addresses(address: str, reason: str | None) -> None:
    assert special_purpose(address) == reason


def test_allow_list_of_networks_and_names() -> None:
    policy = AddressPolicy.parse(["127.0.0.0/8", "::1", "*.test", "intranet.example"])
    assert policy.refusal("127.0.0.5") is None
    assert policy.refusal("::1") is None
    assert policy.refusal("10.0.0.1") == "private"
    assert policy.name_allowed("site-001.test") and policy.name_allowed("WWW.Site.TEST.")
    assert policy.name_allowed("intranet.example")
    assert not policy.name_allowed("test") and not policy.name_allowed("other.example")
    with pytest.raises(ValueError, match="neither a network nor a host name"):
        AddressPolicy.parse(["bad entry/"])


async def test_loopback_targets_are_refused_unless_allow_listed(serve, text_app, make_fetcher) -> None:
    server = await serve(text_app({"/": (200, "text/html", "inside")}))
    guarded = await make_fetcher(address_policy=AddressPolicy())
    refused = await guarded.fetch(server.url("/"))
    assert refused.error.startswith("blocked_address:127.0.0.1")
    assert server.requests == []
    allowed = await make_fetcher(address_policy=AddressPolicy.parse(["127.0.0.0/8"]))
    assert (await allowed.fetch(server.url("/"))).body == b"inside"


async def test_a_name_resolving_to_loopback_is_refused_after_resolution(serve, text_app, make_fetcher) -> None:
    server = await serve(text_app({"/": (200, "text/html", "inside")}))
    guarded = await make_fetcher(address_policy=AddressPolicy(), host_map={"innocent.test": "127.0.0.1"})
    refused = await guarded.fetch(f"http://innocent.test:{server.port}/")
    assert refused.error.startswith("blocked_address:innocent.test -> 127.0.0.1 (loopback)")
    assert server.requests == []
    by_name = await make_fetcher(address_policy=AddressPolicy.parse(["*.test"]),
                                 host_map={"innocent.test": "127.0.0.1"})
    assert (await by_name.fetch(f"http://innocent.test:{server.port}/")).body == b"inside"


async def test_a_redirect_to_the_metadata_address_is_refused_before_it_is_requested(serve, make_fetcher) -> None:
    async def bounce(request: web.Request) -> web.Response:
        raise web.HTTPFound("http://169.254.169.254/latest/meta-data/")

    app = web.Application()
    app.router.add_get("/", bounce)
    server = await serve(app)
    fetcher = await make_fetcher(address_policy=AddressPolicy.parse(["127.0.0.1/32"]))
    response = await fetcher.fetch(server.url("/"))
    assert response.error.startswith("blocked_address:169.254.169.254 (link-local)")
    assert response.redirect_chain == [server.url("/")]


async def test_proxy_mode_checks_the_targets_own_resolution(serve, text_app, make_fetcher, forward_proxy) -> None:
    proxy, routes = forward_proxy
    origin = await serve(text_app({"/": (200, "text/html", "via proxy")}))
    for name in ("mapped.test", "unknown.test", "listed.test"):
        routes[name] = origin.port
    # The proxy itself is on loopback and always allowed; targets are judged by their own address.
    lenient = await make_fetcher(proxy=proxy.origin, address_policy=AddressPolicy.parse(["listed.test"]),
                                 host_map={"mapped.test": "10.0.0.7"})
    mapped = await lenient.fetch(f"http://mapped.test:{origin.port}/")
    assert mapped.error.startswith("blocked_address:mapped.test -> 10.0.0.7 (private)")
    literal = await lenient.fetch("http://10.0.0.8/")
    assert literal.error.startswith("blocked_address:10.0.0.8")
    # A name that does not resolve here is left to the proxy unless the guard is strict.
    assert (await lenient.fetch(f"http://unknown.test:{origin.port}/")).body == b"via proxy"
    strict = await make_fetcher(proxy=proxy.origin, address_policy=AddressPolicy.parse(["listed.test"]),
                                proxy_unresolved=False)
    assert (await strict.fetch(f"http://unknown.test:{origin.port}/")).error.startswith("dns_error:unknown.test")
    assert (await strict.fetch(f"http://listed.test:{origin.port}/")).body == b"via proxy"
    assert len(proxy.requests) == 2


async def test_known_verdicts_come_from_the_cache_until_they_expire(monkeypatch: pytest.MonkeyPatch) -> None:
    from services.fetcher.http import address_guard

    guard = address_guard.TargetGuard(AddressPolicy.parse([]), None, ttl=10.0)
    assert guard.known("127.0.0.1") == (False, None)
    refusal = await guard.check("127.0.0.1")
    assert refusal is not None and refusal.startswith("blocked_address")
    assert guard.known("127.0.0.1") == (True, refusal)
    assert await guard.check("example.test") is None
    assert guard.known("example.test") == (True, None)  # allowed, and known to be
    now = time.monotonic()
    monkeypatch.setattr(time, "monotonic", lambda: now + 11)  # the clock the guard's cache reads
    assert guard.known("127.0.0.1") == (False, None)
