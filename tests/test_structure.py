"""The shape of the code that the issue tracker asked for, held by tests: no import cycles in the
orchestrator, runtime details only in the runtimes, the Docker engine reached through one module,
and no private names imported across modules. Pure: reads the source, runs nothing."""

from __future__ import annotations

import ast
import os
import re
from typing import Dict, List, Set

from .conftest import ROOT

PACKAGES = ("testbed", "agents", "collect", "spark_analysis")


def _modules(package: str) -> Dict[str, str]:
    """module name → file path, for every module of a package."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, package)):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        for filename in filenames:
            if filename.endswith(".py"):
                path = os.path.join(dirpath, filename)
                name = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
                found[name[:-len(".__init__")] if name.endswith(".__init__") else name] = path
    return found


def _imports(module: str, path: str, known: Dict[str, str]):
    """(imported module, imported names) of every import in a file, at any level (a function's
    import counts: a cycle through one is still a cycle)."""
    tree = ast.parse(open(path).read())
    package = module if path.endswith("__init__.py") else module.rsplit(".", 1)[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = parts[:len(parts) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            yield target, [alias.name for alias in node.names]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, []


def _graph(package: str) -> Dict[str, Set[str]]:
    mods = _modules(package)
    edges: Dict[str, Set[str]] = {m: set() for m in mods}
    for module, path in mods.items():
        for target, names in _imports(module, path, mods):
            for candidate in [target] + [f"{target}.{n}" for n in names]:
                if candidate in mods and candidate != module:
                    edges[module].add(candidate)
    return edges


def _cycles(edges: Dict[str, Set[str]]) -> List[List[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on: Set[str] = set()
    out: List[List[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_the_orchestrator_has_no_import_cycles():
    assert _cycles(_graph("testbed")) == []


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_runtime_names_are_compared_only_inside_the_runtimes():
    """Everything that differs between a container and a plain process lives in testbed/runtimes/."""
    pattern = re.compile(r"""(==|!=)\s*["'](docker|process)["']|["'](docker|process)["']\s*(==|!=)""")
    offenders = []
    for module, path in _modules("testbed").items():
        if module.startswith("testbed.runtimes"):
            continue
        for number, line in enumerate(open(path), start=1):
            if pattern.search(line):
                offenders.append(f"{os.path.relpath(path, ROOT)}:{number}: {line.strip()}")
    assert offenders == []


def test_the_docker_engine_is_reached_through_one_module():
    offenders = []
    for package in PACKAGES:
        for module, path in _modules(package).items():
            if module == "testbed.dockerd":
                continue
            for target, _ in _imports(module, path, {}):
                if target == "docker" or target.startswith("docker."):
                    offenders.append(f"{module} imports {target}")
    assert offenders == []


def test_no_private_name_is_imported_from_another_module():
    offenders = []
    for package in PACKAGES:
        for module, path in _modules(package).items():
            for target, names in _imports(module, path, {}):
                private = [n for n in names if n.startswith("_") and not n.startswith("__")]
                if private and target != module:
                    offenders.append(f"{module} imports {', '.join(private)} from {target}")
    assert offenders == []
