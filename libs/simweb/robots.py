"""robots.txt for simulated hosts: the file served and the rules it states.

The simulated web knows its robots rules as :class:`~libs.simweb.model.RobotsGroup`
values and answers ``allowed`` from them directly (RFC 9309 semantics: the group
naming the crawler's product token wins over ``*``; the longest matching rule
decides, ``Allow`` winning ties; a 404 file allows everything; a 5xx file
disallows everything). The served text is rendered from the same values, and a
test cross-checks it against the fetcher's own robots.txt matcher.
"""

from __future__ import annotations

from libs.simweb.model import PRIVATE_PREFIX, HostSpec, RobotsGroup, RobotsVariant

BLOCKED_AGENT = "badbot"
"""Every served robots.txt shuts this agent out, so per-agent groups are exercised."""


def groups_for(variant: RobotsVariant, crawl_delay: float | None) -> tuple[RobotsGroup, ...]:
    """The robots groups of a host with the given variant (empty when no file is served)."""
    if variant in ("missing", "unavailable"):
        return ()
    blocked = RobotsGroup(agents=(BLOCKED_AGENT,), disallow=("/",))
    if variant == "disallow_private":
        return (RobotsGroup(agents=("*",), disallow=(PRIVATE_PREFIX,)), blocked)
    if variant == "crawl_delay":
        return (RobotsGroup(agents=("*",), crawl_delay=crawl_delay), blocked)
    return (RobotsGroup(agents=("*",)), blocked)


def render(host: HostSpec) -> str:
    """The robots.txt body served for ``host`` (meaningful only when its status is 200)."""
    lines = [f"# robots.txt for {host.name}"]
    for group in host.robots_groups:
        lines.extend(f"User-agent: {agent}" for agent in group.agents)
        if group.crawl_delay is not None:
            lines.append(f"Crawl-delay: {group.crawl_delay:g}")
        lines.extend(f"Allow: {path}" for path in group.allow)
        lines.extend(f"Disallow: {path}" for path in group.disallow)
        if not group.allow and not group.disallow:
            lines.append("Disallow:")
        lines.append("")
    return "\n".join(lines)


def _group_for(groups: tuple[RobotsGroup, ...], user_agent: str) -> RobotsGroup | None:
    token = user_agent.lower()
    for group in groups:
        if any(agent.lower() == token for agent in group.agents):
            return group
    for group in groups:
        if "*" in group.agents:
            return group
    return None


def allows(host: HostSpec, path: str, user_agent: str) -> bool:
    """Whether ``user_agent`` (a product token such as ``trawl``) may fetch ``path`` on ``host``."""
    if path == "/robots.txt":
        return True
    if host.robots_status >= 500:
        return False
    if host.robots_status >= 400:
        return True
    group = _group_for(host.robots_groups, user_agent)
    if group is None:
        return True
    best_allow = max((len(rule) for rule in group.allow if path.startswith(rule)), default=-1)
    best_disallow = max((len(rule) for rule in group.disallow if path.startswith(rule)), default=-1)
    return best_allow >= best_disallow


def crawl_delay(host: HostSpec, user_agent: str) -> float | None:
    """The Crawl-delay that applies to ``user_agent`` on ``host``, if any."""
    group = _group_for(host.robots_groups, user_agent)
    return None if group is None else group.crawl_delay
