"""Node runtimes: how a node's software runs, behind one interface (`runtimes.base.Runtime`).

- `docker`: a container (started without networking: its own empty network namespace) whose
  network namespace becomes the Mininet host.
- `process`: a plain process in a Mininet host, for machines without Docker.

Each runtime is one module registered here by name; the network builder talks only to the
common interface.
"""

from __future__ import annotations

import importlib
from typing import Dict, List

_RUNTIMES: Dict[str, str] = {
    "docker": "testbed.runtimes.docker:DockerRuntime",
    "process": "testbed.runtimes.process:ProcessRuntime",
}


#: the runtimes whose nodes run a container image (the node's `image`)
_RUN_IMAGES = {"docker"}


def node_images(nodes) -> List[str]:
    """The container images these nodes run, sorted, each once (a process node runs none)."""
    return sorted({node.image for node in nodes if node.runtime in _RUN_IMAGES})


def runtime_names() -> List[str]:
    return sorted(_RUNTIMES)


def runtime_class(name: str):
    module_name, _, attr = _RUNTIMES[name].partition(":")
    return getattr(importlib.import_module(module_name), attr)
