"""A maximum one-to-one matching of minimum cost between two sides (predictions and gold).

Scoring aligns entities, relations and facts one to one: as many pairs as possible and,
among those, the cheapest (the cost says how good a pair is, e.g. 0 for an exact name and 2
for an alias). The candidate pairs are few and form small independent components, so each
component is solved on its own by successive shortest augmenting paths. Written here rather
than taken from a graph library: networkx is not a dependency, and the sparse, tiny,
integer-cost problems need no more than this.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

__all__ = ["min_cost_matching"]


def min_cost_matching(n_left: int, n_right: int, costs: Mapping[tuple[int, int], int]) -> dict[int, int]:
    """A maximum-cardinality bipartite matching of minimum total cost, left -> right.

    Successive shortest augmenting paths (Bellman-Ford, since reversed matched edges
    have negative cost): each augmentation adds one pair at the least extra cost, so the
    final matching is of maximum size and, among those, of minimum cost. Ties are broken
    by index, so the result is deterministic.
    """
    matching: dict[int, int] = {}
    for component in _components(costs):
        if len(component) == 1:  # the common case: one candidate pair, nothing to choose
            [(left, right)] = component
            matching[left] = right
            continue
        lefts = sorted({left for left, _ in component})
        rights = sorted({right for _, right in component})
        left_index = {left: i for i, left in enumerate(lefts)}
        right_index = {right: i for i, right in enumerate(rights)}
        local = {(left_index[left], right_index[right]): costs[(left, right)] for left, right in component}
        for left, right in _solve(len(lefts), len(rights), local).items():
            matching[lefts[left]] = rights[right]
    return matching


def _components(costs: Mapping[tuple[int, int], int]) -> list[list[tuple[int, int]]]:
    """Candidate pairs grouped into connected components (independent sub-problems)."""
    parent: dict[tuple[str, int], tuple[str, int]] = {}

    def find(node: tuple[str, int]) -> tuple[str, int]:
        parent.setdefault(node, node)
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    for left, right in costs:
        parent[find(("l", left))] = find(("r", right))
    groups: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for pair in sorted(costs):
        groups.setdefault(find(("l", pair[0])), []).append(pair)
    return list(groups.values())


def _solve(n_left: int, n_right: int, costs: Mapping[tuple[int, int], int]) -> dict[int, int]:
    """Successive shortest augmenting paths on one component."""
    adjacency: dict[int, list[tuple[int, int]]] = {}
    for (left, right), cost in sorted(costs.items()):
        adjacency.setdefault(left, []).append((right, cost))
    match_left: dict[int, int] = {}
    match_right: dict[int, int] = {}
    while True:
        path = _shortest_augmenting_path(n_left, n_right, adjacency, costs, match_left, match_right)
        if path is None:
            return match_left
        for left, right in path:
            match_left[left] = right
            match_right[right] = left


def _shortest_augmenting_path(
    n_left: int,
    n_right: int,
    adjacency: Mapping[int, list[tuple[int, int]]],
    costs: Mapping[tuple[int, int], int],
    match_left: Mapping[int, int],
    match_right: Mapping[int, int],
) -> list[tuple[int, int]] | None:
    """The cheapest path from a free left node to a free right node, as the pairs it matches."""
    dist_left = [0.0 if left not in match_left else math.inf for left in range(n_left)]
    dist_right = [math.inf] * n_right
    came_from: list[int] = [-1] * n_right  # right -> the left node it was reached from
    changed = True
    while changed:
        changed = False
        for left in range(n_left):
            if dist_left[left] == math.inf:
                continue
            for right, cost in adjacency.get(left, ()):
                if match_left.get(left) == right:
                    continue
                if dist_left[left] + cost < dist_right[right]:
                    dist_right[right] = dist_left[left] + cost
                    came_from[right] = left
                    changed = True
        for right, left in match_right.items():
            candidate = dist_right[right] - costs[(left, right)]
            if candidate < dist_left[left]:
                dist_left[left] = candidate
                changed = True
    ends = [r for r in range(n_right) if r not in match_right and dist_right[r] < math.inf]
    if not ends:
        return None
    right = min(ends, key=lambda r: (dist_right[r], r))
    pairs: list[tuple[int, int]] = []
    while True:
        left = came_from[right]
        pairs.append((left, right))
        if left not in match_left:
            return pairs
        right = match_left[left]
