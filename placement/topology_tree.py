"""The Topology CR as KAI's topology plugin builds it (KAI@v0.17.0 plugins/topology initializeTopologyTree).

A node with a value for every level is a member; its domain at level i is the values of levels 0..i
joined by "." (a rack is inside its zone). Every member node is also in the synthetic root domain.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from placement.model import Node, Topology
    from placement.nodes import NodeState

__all__ = ["ROOT", "Domain", "TopologyError", "TopologyTree"]

ROOT = "root"


class TopologyError(Exception):
    """A constraint KAI cannot evaluate (a level the topology lacks, preferred above required): KAI logs it
    and the (sub)group is not placed; the message says which."""


class Domain:
    __slots__ = ("allocatable", "children", "free", "id", "level", "nodes", "parent", "version")

    def __init__(self, level: str, domain_id: str) -> None:
        self.level = level
        self.id = domain_id
        self.nodes: list[str] = []
        self.children: list[Domain] = []
        self.parent: Domain | None = None
        self.allocatable = -1
        self.free: list[float] = []
        self.version = 0  # a leaf's: bumped whenever one of its nodes changes (NodeState.watchers)


class TopologyTree:
    """One Topology CR over the session's nodes (initializeTopologyTree)."""

    def __init__(self, spec: Topology, nodes: Sequence[Node]) -> None:
        self.name = spec.name
        self.levels = [level.node_label for level in spec.levels]
        self.aliases = {level.alias: level.node_label for level in spec.levels if level.alias}
        self.root = Domain(ROOT, ROOT)
        self.by_level: dict[str, dict[str, Domain]] = {level: {} for level in self.levels}
        self.by_level[ROOT] = {ROOT: self.root}
        self.member: dict[str, list[str]] = {}
        # Per leaf domain: (its version, free vector, pods per batch shape), filled by Fit; attach() empties it.
        self.cache: dict[str, tuple[int, list[float], dict[tuple[float, ...], int]]] = {}
        self.common: dict[str, tuple[Sequence[NodeState], Domain, set[str]]] = {}
        for node in nodes:
            values = [node.labels.get(level) for level in self.levels]
            if any(v is None for v in values):
                continue  # isNodePartOfTopology: a node lacking any level's label is outside
            self.member[node.name] = [v or "" for v in values]
            child: Domain | None = None
            for i in range(len(self.levels) - 1, -1, -1):
                domain_id = ".".join(self.member[node.name][: i + 1])
                domain = self.by_level[self.levels[i]].get(domain_id)
                if domain is None:
                    domain = self.by_level[self.levels[i]][domain_id] = Domain(self.levels[i], domain_id)
                domain.nodes.append(node.name)
                if child is not None and child.parent is None:
                    child.parent = domain
                    domain.children.append(child)
                child = domain
            if child is not None and child.parent is None:
                child.parent = self.root
                self.root.children.append(child)
            self.root.nodes.append(node.name)

    def attach(self, nodes: dict[str, NodeState]) -> None:
        """Watch a cycle's fresh node objects: each leaf domain's version moves with its nodes'."""
        self.cache = {}
        for level in self.by_level.values():
            for domain in level.values():
                if not domain.children and domain is not self.root:
                    for name in domain.nodes:
                        nodes[name].watchers.append(domain)

    def resolve(self, level: str | None) -> str:
        """A constraint's level: an alias stands for its node label; anything else passes unchanged."""
        if not level:
            return ""
        return self.aliases.get(level, level)

    def domain_of(self, node: str, level: str) -> str | None:
        """The id of `node`'s domain at `level`, None when the node is not a member."""
        values = self.member.get(node)
        if values is None or level not in self.levels:
            return None
        return ".".join(values[: self.levels.index(level) + 1])

    def relevant_levels(self, required: str, preferred: str) -> list[str]:
        """calculateRelevantDomainLevels: from the preferred (or required) level up to the required one
        (or up to the root), lowest first."""
        if not required and not preferred:
            raise TopologyError("no topology levels are set")
        for name, level in (("required", required), ("preferred", preferred)):
            # KAI's levels end in the synthetic "root" (job_filtering.go:403-407), which a constraint may name.
            if level and level not in self.levels and level != ROOT:
                raise TopologyError(f"topology {self.name} has no level {level!r} ({name})")
        walk = [*reversed(self.levels), ROOT]
        out: list[str] = []
        started = False
        for level in walk:
            if level in (preferred, required):
                started = True
            if started:
                out.append(level)
            if required and level == required:
                break
        if preferred and preferred not in out:
            raise TopologyError(f"preferred level {preferred} is above required level {required}")
        return out
