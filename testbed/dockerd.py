"""The Docker engine, reached through this module only.

Every other part of the testbed (the docker runtime, images, cleanup, the machine probe) asks
here for a client, for a lab's containers and for their removal, so that how the engine is
found, how long a call may take and what "the engine is down" looks like are decided once.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Dict, List, Optional, Tuple

from .errors import TestbedError
from .names import container_filter

# Parallel requests to dockerd. Creating the 186 containers of tree-3-5-5 on 2 cores took
# 30.7 s with 6 workers, 23.9 s with 12 and 28.9 s with 24 (contention inside dockerd).
WORKERS = 12


class EngineUnavailable(TestbedError):
    """The Docker SDK is missing or the engine does not answer."""


def client(timeout: int = 120):
    """A client of the running engine; EngineUnavailable (with what to do) when there is none."""
    try:
        import docker
    except ImportError:
        raise EngineUnavailable("the docker Python SDK is not installed (pip install docker)") from None
    try:
        c = docker.from_env(timeout=timeout, max_pool_size=WORKERS + 2)
        c.ping()
        return c
    except Exception as exc:  # the SDK raises several unrelated types for "no engine"
        raise EngineUnavailable(f"the Docker engine is not reachable ({_first_line(str(exc))[:160]}); start it with "
                                "./setup.sh (or dockerd), or use runtime: process") from None


def version(timeout: int = 5) -> Dict[str, str]:
    """The engine's version report (Version, ApiVersion, ...); EngineUnavailable when it is down."""
    c = client(timeout=timeout)
    try:
        return c.version()
    finally:
        c.close()


def lab_containers(docker_client, lab: Optional[str] = None, running: bool = False) -> List[str]:
    """Ids of one lab's containers, or of every lab's, running or not (`running`: only those the
    engine sees running; a paused one is not). Sparse: the list is not followed by an inspection
    of each container, which raises NotFound for one removed in between (a lab tearing down beside
    `testbed clean`)."""
    filters = {"label": container_filter(lab)}
    if running:
        filters["status"] = "running"
    found = docker_client.containers.list(all=not running, sparse=True, filters=filters)
    return [c.id for c in found]


#: passes over the containers a removal did not finish: the engine sometimes stalls past the
#: client's timeout while it tears down a large lab (one removal of 60 took over 120 s once)
REMOVE_PASSES = 3


def remove_containers(docker_client, ids: List[str], passes: int = REMOVE_PASSES) -> None:
    """Force-remove containers in parallel (SIGKILL, no grace period: the lab is going away).
    A removal that fails for another reason than "no such container" (a timeout, an engine error)
    is tried again in the next pass; the first error of the last pass is raised."""
    import docker.errors

    def remove(cid: str) -> Optional[Exception]:
        try:
            docker_client.api.remove_container(cid, force=True, v=True)
        except docker.errors.NotFound:
            pass
        except Exception as exc:  # the SDK raises requests' timeouts and its own APIError alike
            return exc
        return None

    left = list(ids)
    for _ in range(max(1, passes)):
        with ThreadPoolExecutor(max_workers=WORKERS) as pool:
            failed = [(cid, exc) for cid, exc in zip(left, pool.map(remove, left)) if exc is not None]
        if not failed:
            return
        left = [cid for cid, _ in failed]
    raise failed[0][1]


def image(docker_client, name: str):
    """A local image (the SDK's Image: id, labels), None when the machine does not have it."""
    import docker.errors

    try:
        return docker_client.images.get(name)
    except docker.errors.ImageNotFound:
        return None


def image_id(docker_client, name: str) -> Optional[str]:
    """The id of a local image, None when the machine does not have it."""
    found = image(docker_client, name)
    return found.id if found is not None else None


def processes(docker_client, container_id: str) -> Optional[List[Tuple[int, str]]]:
    """(machine pid, command line) of every process of a container, None when it is not running."""
    import docker.errors

    try:
        top = docker_client.api.top(container_id, ps_args="-o pid,args")
    except docker.errors.APIError:
        return None
    return [(int(pid), args) for pid, args in top.get("Processes") or []]


def not_found_errors() -> tuple:
    """The SDK's 'no such image/container' exception types, for callers that tell them apart."""
    import docker.errors

    return docker.errors.NotFound, docker.errors.ImageNotFound


def _first_line(text: str) -> str:
    text = text.strip()
    return text.splitlines()[0] if text else ""
