"""`partition`: split the nodes into groups between which nothing crosses, until `heal`.

The nodes a partition does not name form one more group. It drops in the lab's bridge table,
on the way to each node (testbed.partition)."""

from __future__ import annotations

from typing import Dict, List

from .base import FaultAction, node_ref


class Partition(FaultAction):
    name = "partition"
    summary = "split the nodes into groups that cannot reach each other (unnamed nodes: one more group)"
    target = "lab"
    inverse = "heal"
    fields = {"groups": "a list of groups of nodes, [[NODE, ...], [NODE, ...]], each node in one group"}
    field_schemas = {"groups": {"type": "array", "minItems": 1,
                                "items": {"type": "array", "items": {"type": "string"}, "minItems": 1}}}

    def parse(self, reader, entry, path, topology):
        path = path + ("groups",)
        value = entry.get("groups")
        if not isinstance(value, list) or len(value) < 1:
            raise reader.fail(path, "expected a list of groups of nodes", "[[NODE, ...], [NODE, ...]]")
        seen: Dict[str, int] = {}
        groups: List[List[str]] = []
        for i, group in enumerate(value):
            if not isinstance(group, list) or not group:
                raise reader.fail(path + (i,), "expected a non-empty list of nodes")
            names = []
            for j, node in enumerate(group):
                name = node_ref(reader, node, path + (i, j), topology)
                if name in seen:
                    raise reader.fail(path + (i, j), f"node {name!r} is already in group {seen[name] + 1}",
                                      "each node in one group")
                seen[name] = i
                names.append(name)
            groups.append(names)
        rest = [n for n in topology.nodes if n not in seen]
        if rest:
            groups.append(rest)  # the nodes not named form one more group
        if len(groups) < 2:
            raise reader.fail(path, "a partition needs at least two groups", "two or more groups of nodes")
        return {"groups": groups}

    def apply(self, nemesis, planned):
        nemesis.lab.partition(planned.params["groups"])
        nemesis.partitioned = True
        return {"groups": planned.params["groups"]}
