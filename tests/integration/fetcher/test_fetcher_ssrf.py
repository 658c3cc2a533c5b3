"""The SSRF guard with the default configuration: no private, loopback or link-local target is ever requested.

The fetcher service runs on the real broker with nothing allow-listed
(``TRAWL_FETCHER_SSRF_ALLOW`` empty, its default) in its two ways of reaching
the web:

* ``proxy``: through an HTTP forward proxy (the simulated web), so that a target
  that slipped through would reach the proxy and be in its request log, whatever
  address it names (169.254.169.254 or 10.0.0.5 included); the only host the web
  may see is the open redirector, which the static host map puts on a public
  address;
* ``direct``: connecting itself, the redirector allow-listed by name (it lives on
  127.0.0.1); here only targets on this machine are tried, so that a failure
  could not send a packet anywhere else.

Every target is requested as is (spelled as an attacker would: decimal, octal,
hex and short IPv4, IPv4-mapped IPv6, trailing dots, user info, names the
resolver maps to internal addresses) and through the redirector. Each must end
``INVALID_URL`` with a ``blocked_address`` error, final (not retryable), and
nothing but the redirector may appear in the web's request log.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import quote

import pytest

from libs.common.wire import messages as pb
from libs.simweb import SimWebConfig, build_web
from libs.simweb.hostile import hostile_host
from tests.integration.fetcher.fetcher_rig import FetcherRig

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

PUBLIC_ADDRESS = "93.184.216.34"
"""Where the host map puts the redirector in proxy mode: a public address, never connected to (the proxy is)."""
REDIRECTOR = hostile_host("ssrf")
RESOLVER_MAP = {
    "internal.test": "127.0.0.1",
    "internal6.test": "::1",
    "mapped.test": "::ffff:127.0.0.1",
    "zero.test": "0.0.0.0",
    "metadata.test": "169.254.169.254",
    "private.test": "10.0.0.5",
    "cgnat.test": "100.64.0.1",
}
ON_THIS_MACHINE = [
    "http://localhost:{port}/", "http://LOCALHOST.:{port}/", "http://127.0.0.1:{port}/", "http://127.0.0.1.:{port}/",
    "http://127.1:{port}/", "http://127.0.1:{port}/", "http://2130706433:{port}/", "http://0x7f000001:{port}/",
    "http://0x7f.0.0.1:{port}/", "http://0177.0.0.1:{port}/", "http://017700000001:{port}/",
    "http://127.255.255.254:{port}/", "http://[::1]:{port}/", "http://[0:0:0:0:0:0:0:1]:{port}/",
    "http://[::ffff:127.0.0.1]:{port}/", "http://[::ffff:7f00:1]:{port}/", "http://0.0.0.0:{port}/",
    "http://0:{port}/", "http://[::]:{port}/", "http://public.example@127.0.0.1:{port}/",
    "http://internal.test:{port}/", "http://internal6.test:{port}/", "http://mapped.test:{port}/",
    "http://zero.test:{port}/",
]
ELSEWHERE = [
    "http://169.254.169.254/latest/meta-data/", "http://[::ffff:169.254.169.254]/latest/meta-data/",
    "http://2852039166/latest/meta-data/", "http://10.0.0.5/", "http://172.16.0.1/", "http://192.168.1.1/",
    "http://100.64.0.1/", "http://[fe80::1]/", "http://[fd00::1]/", "http://224.0.0.1/", "http://198.18.0.1/",
    "http://metadata.test/latest/meta-data/", "http://private.test/", "http://cgnat.test/",
]


class SsrfRig(FetcherRig):
    """A fetcher with the default SSRF configuration, reaching the web directly or through the proxy."""

    def __init__(self, bootstrap: str, folder: Path, mode: str) -> None:
        web = build_web(SimWebConfig(seed=3, hosts=2, pages=10, hub_host_ratio=0.0))
        super().__init__(bootstrap, web, folder)
        self.mode = mode

    def env(self) -> dict[str, str]:
        env = super().env()
        del env["TRAWL_FETCHER_WARC_DIR"]
        mapped = dict(RESOLVER_MAP)
        if self.mode == "proxy":
            env["TRAWL_FETCHER_PROXY"] = self.server.url
            env["TRAWL_FETCHER_SSRF_ALLOW"] = ""
            mapped[REDIRECTOR] = PUBLIC_ADDRESS
        else:
            env["TRAWL_FETCHER_SSRF_ALLOW"] = REDIRECTOR
            mapped[REDIRECTOR] = "127.0.0.1"
        env["TRAWL_FETCHER_HOST_MAP"] = ",".join(f"{host}={address}" for host, address in mapped.items())
        return env

    def targets(self) -> list[str]:
        spelled = [t.format(port=self.port) for t in ON_THIS_MACHINE]
        return spelled + (ELSEWHERE if self.mode == "proxy" else [])


@pytest.fixture(scope="module", params=["proxy", "direct"])
async def rig(
    request: pytest.FixtureRequest, kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[SsrfRig]:
    running = SsrfRig(kafka_bootstrap, tmp_path_factory.mktemp("ssrf"), request.param)
    await running.start()
    yield running
    await running.stop()


def _assert_blocked(outcome: pb.FetchOutcome) -> None:
    assert pb.FetchStatus.Name(outcome.status) == "FETCH_STATUS_INVALID_URL", (outcome.url, outcome.error)
    assert outcome.error.startswith("blocked_address:"), (outcome.url, outcome.error)
    assert not outcome.retryable


async def test_internal_targets_are_refused_as_requested_and_after_a_redirect(rig: SsrfRig) -> None:
    targets = rig.targets()
    bounces = [f"http://{REDIRECTOR}:{rig.port}/r?to={quote(target, safe='')}" for target in targets]
    outcomes = await rig.fetch([*targets, *bounces], timeout=120)
    for url in [*targets, *bounces]:
        _assert_blocked(outcomes[url])
    assert {r.host for r in rig.server.request_log} == {REDIRECTOR}
    # the guard refuses internal targets, not everything: every bounce reached the redirector
    assert len([r for r in rig.server.request_log if r.path.startswith("/r?to=")]) == len(bounces)

