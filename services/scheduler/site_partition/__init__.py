"""Splitting a large site across fetchers by path (seed 004).

``paths`` (a URL's path), ``graph`` (a site's link graph), ``planner`` (key paths, groups,
seeds), ``simulate`` (N crawlers on a graph, and the paper's figures), ``synthetic``
(generated graphs with the paper's path structure), ``keying`` (the scheduler's hook).
"""
