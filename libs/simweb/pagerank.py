"""PageRank by power iteration, the ground truth importance scores are checked against."""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def pagerank(
    graph: Mapping[str, Sequence[str]],
    damping: float = 0.85,
    tolerance: float = 1e-10,
    max_iterations: int = 500,
) -> dict[str, float]:
    """Scores of the nodes of ``graph`` (node -> out-neighbours), summing to 1.

    Out-neighbours that are not nodes of the graph are ignored and repeated ones
    count once; a node left with no out-neighbours (dangling) spreads its score
    uniformly over all nodes. Iterates until the L1 change is below ``tolerance``.
    """
    if not 0.0 <= damping < 1.0:
        raise ValueError(f"damping must be in [0, 1), got {damping}")
    nodes = list(graph)
    n = len(nodes)
    if n == 0:
        return {}
    position = {node: i for i, node in enumerate(nodes)}
    adjacency: list[list[int]] = []
    for node in nodes:
        adjacency.append(sorted({position[t] for t in graph[node] if t in position}))
    rank = [1.0 / n] * n
    for _ in range(max_iterations):
        dangling = sum(rank[i] for i in range(n) if not adjacency[i])
        base = (1.0 - damping) / n + damping * dangling / n
        new = [base] * n
        for source, targets in enumerate(adjacency):
            if targets:
                share = damping * rank[source] / len(targets)
                for target in targets:
                    new[target] += share
        change = sum(abs(a - b) for a, b in zip(new, rank, strict=True))
        rank = new
        if change < tolerance:
            break
    return {node: rank[i] for i, node in enumerate(nodes)}
