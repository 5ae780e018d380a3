"""The agent image and its base, built on the machine and cached.

The base is a public Python image when a registry answers, and otherwise a Debian root file
system bootstrapped offline (debootstrap from Debian's mirror, then `docker import`); which one
was used is recorded as a label on the base image and shown by `testbed doctor`. The agent image
is rebuilt only when its build context (Dockerfile, agents/ and the vendored speed-ups) or the
base changed.

The agent's speed-ups (uvloop and orjson, agents/speedups.py) come from the testbed's own Python
environment, where pyproject.toml installs them: their modules are copied into the image's
/opt/testbed/vendor, so that no registry and no pip is needed inside the image. Both bases run
CPython 3.11, and only modules built for it are copied; where they are missing the agent runs on
the standard library alone, and says so in its `started` event.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import tarfile
import tempfile
from typing import Callable, Optional, Tuple

from . import dockerd
from .errors import TestbedError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASE_IMAGE = "testbed/base:bookworm"
AGENT_IMAGE = "testbed/agent:latest"
STATIC_PROBE_IMAGE = "testbed/static-probe:latest"
PUBLIC_BASE = "python:3.11-slim-bookworm"
LABEL_SOURCE = "org.testbed.base.source"
LABEL_CONTEXT = "org.testbed.context"
DEBIAN_MIRROR = os.environ.get("TESTBED_DEBIAN_MIRROR", "http://deb.debian.org/debian")

Say = Callable[[str], None]


def _client(timeout: int = 600):
    c = dockerd.client()
    c.api.timeout = timeout
    return c


def base_source(docker_client) -> Optional[str]:
    image = dockerd.image(docker_client, BASE_IMAGE)
    if image is None:
        return None
    return (image.labels or {}).get(LABEL_SOURCE, "unknown")


def ensure_base(docker_client, say: Say, offline: bool = False) -> str:
    """Make sure BASE_IMAGE exists; return where it came from."""
    source = base_source(docker_client)
    if source:
        return source
    if not offline and os.environ.get("TESTBED_BASE") != "offline":
        say(f"trying the public base image {PUBLIC_BASE}")
        try:
            docker_client.images.pull(PUBLIC_BASE)
            # Re-label through a trivial build so the source is recorded on the image itself.
            dockerfile = f"FROM {PUBLIC_BASE}\nLABEL {LABEL_SOURCE}=registry:{PUBLIC_BASE}\n"
            _build_from_files(docker_client, {"Dockerfile": dockerfile.encode()}, BASE_IMAGE, {})
            return f"registry:{PUBLIC_BASE}"
        except Exception as exc:
            say(f"no registry reachable ({str(exc).splitlines()[0][:100]}); bootstrapping offline")
    _bootstrap_offline(say)
    return base_source(docker_client) or "debootstrap"


def _bootstrap_offline(say: Say) -> None:
    if shutil.which("debootstrap") is None:
        raise TestbedError("no registry is reachable and debootstrap is missing: apt-get install debootstrap")
    with tempfile.TemporaryDirectory(prefix="testbed-rootfs-", dir="/var/tmp") as rootfs:
        say(f"debootstrap bookworm from {DEBIAN_MIRROR} (about a minute)")
        res = subprocess.run(["debootstrap", "--variant=minbase", "--include=python3,python3-yaml",
                              "bookworm", rootfs, DEBIAN_MIRROR], capture_output=True, text=True)
        if res.returncode != 0:
            tail = "\n".join((res.stdout + res.stderr).strip().splitlines()[-5:])
            raise TestbedError(f"debootstrap failed:\n{tail}")
        for cache in ("var/cache/apt/archives", "var/lib/apt/lists"):
            shutil.rmtree(os.path.join(rootfs, cache), ignore_errors=True)
        say("importing the root file system as " + BASE_IMAGE)
        tar = subprocess.Popen(["tar", "-C", rootfs, "-c", "."], stdout=subprocess.PIPE)
        res = subprocess.run(["docker", "import", "--change", f"LABEL {LABEL_SOURCE}=debootstrap:bookworm",
                              "--change", 'CMD ["python3"]', "-", BASE_IMAGE], stdin=tar.stdout,
                             capture_output=True, text=True)
        tar.stdout.close()
        tar.wait()
        if res.returncode != 0:
            raise TestbedError(f"docker import failed: {res.stderr.strip()}")


#: the Python of both bases (python:3.11-slim and Debian bookworm's): extension modules built for
#: another are not copied
IMAGE_PYTHON_ABI = "cpython-311-"
#: the agent's optional speed-ups (agents/speedups.py), copied from this environment
VENDORED = ("uvloop", "orjson")


def vendored_files() -> dict:
    """{path in the build context: bytes} of the speed-ups' modules in this environment (their .py
    and extension modules), under vendor/; a package missing here, or built for another Python
    than the image's, is left out."""
    import importlib.util

    files = {"vendor/README": b"Python packages the agent uses when present (agents/speedups.py), "
                              b"copied from the testbed's environment by testbed/images.py.\n"}
    for name in VENDORED:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            continue
        package = list(spec.submodule_search_locations)[0]
        found = {}
        for dirpath, dirnames, filenames in os.walk(package):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            for filename in sorted(filenames):
                if filename.endswith(".py") or (filename.endswith(".so") and IMAGE_PYTHON_ABI in filename):
                    path = os.path.join(dirpath, filename)
                    found[os.path.join("vendor", name, os.path.relpath(path, package))] = open(path, "rb").read()
        if any(path.endswith(".so") for path in found):  # both are extension modules: none, no package
            files.update(found)
    return files


def _context_files(root: str = ROOT) -> dict:
    """The agent image's build context from a source tree: its Dockerfile, agents/, and the
    vendored speed-ups where that Dockerfile copies them (an older tree's does not)."""
    dockerfile = open(os.path.join(root, "images", "agent", "Dockerfile"), "rb").read()
    files = {"Dockerfile": dockerfile}
    if b"COPY vendor" in dockerfile:
        files.update(vendored_files())
    agents_dir = os.path.join(root, "agents")
    for dirpath, dirnames, filenames in os.walk(agents_dir):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for filename in sorted(filenames):
            if filename.endswith((".pyc", ".pyo")):
                continue
            path = os.path.join(dirpath, filename)
            files[os.path.relpath(path, root)] = open(path, "rb").read()
    return files


def _build_from_files(docker_client, files: dict, tag: str, labels: dict, buildargs: Optional[dict] = None) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, data in sorted(files.items()):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = 0
            info.mode = 0o755
            tar.addfile(info, io.BytesIO(data))
    buffer.seek(0)
    try:
        docker_client.images.build(fileobj=buffer, custom_context=True, tag=tag, labels=labels,
                                   buildargs=buildargs or {}, rm=True, forcerm=True)
    except Exception as exc:
        log = getattr(exc, "build_log", None)
        detail = "".join(chunk.get("stream", "") for chunk in log or [] if isinstance(chunk, dict))[-800:]
        raise TestbedError(f"building {tag} failed: {exc}\n{detail}") from None


def ensure_agent(docker_client, say: Say, force: bool = False, root: str = ROOT, tag: str = AGENT_IMAGE
                 ) -> Tuple[str, bool]:
    """Build the agent image (AGENT_IMAGE, from this tree) if its context or base changed; return
    (image id, built now?). `root` and `tag`: the agent of another source tree, under another
    name (benchmarks/agent_cost.py --baseline compares two commits' agents)."""
    base = docker_client.images.get(BASE_IMAGE)
    files = _context_files(root)
    digest = hashlib.sha256(base.id.encode())
    for name, data in sorted(files.items()):
        digest.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    context = digest.hexdigest()[:32]
    if not force:
        image = dockerd.image(docker_client, tag)
        if image is not None and (image.labels or {}).get(LABEL_CONTEXT) == context:
            return image.id, False
    say(f"building {tag}")
    _build_from_files(docker_client, files, tag, {LABEL_CONTEXT: context}, {"BASE": BASE_IMAGE})
    return docker_client.images.get(tag).id, True


def ensure_static_probe(docker_client, say: Say) -> str:
    """An image that holds one static binary and nothing else (for tests and demonstrations)."""
    source = os.path.join(ROOT, "images", "static-probe", "ifprobe.c")
    digest = hashlib.sha256(open(source, "rb").read()).hexdigest()[:32]
    image = dockerd.image(docker_client, STATIC_PROBE_IMAGE)
    if image is not None and (image.labels or {}).get(LABEL_CONTEXT) == digest:
        return image.id
    say(f"building {STATIC_PROBE_IMAGE}")
    with tempfile.TemporaryDirectory() as tmp:
        binary = os.path.join(tmp, "ifprobe")
        res = subprocess.run(["gcc", "-static", "-O2", "-o", binary, source], capture_output=True, text=True)
        if res.returncode != 0:
            raise TestbedError(f"compiling ifprobe failed: {res.stderr.strip()}")
        files = {"Dockerfile": b'FROM scratch\nCOPY ifprobe /ifprobe\nCMD ["/ifprobe"]\n',
                 "ifprobe": open(binary, "rb").read()}
        _build_from_files(docker_client, files, STATIC_PROBE_IMAGE, {LABEL_CONTEXT: digest})
    return docker_client.images.get(STATIC_PROBE_IMAGE).id


def build_directory(directory: str, tag: str, say: Say, force: bool = False) -> Tuple[str, bool]:
    """Build an image from a directory holding a Dockerfile (the legacy builder, which works where
    BuildKit is missing), FROM the testbed's base when the Dockerfile takes a BASE argument;
    skipped when neither the directory nor the base changed. (image id, built now?)"""
    if not os.path.isfile(os.path.join(directory, "Dockerfile")):
        raise TestbedError(f"{directory}: no Dockerfile there")
    docker_client = _client()
    ensure_base(docker_client, say)
    files = {}
    for dirpath, dirnames, filenames in os.walk(directory):
        dirnames[:] = sorted(d for d in dirnames if d not in ("__pycache__", ".git"))
        for filename in sorted(filenames):
            path = os.path.join(dirpath, filename)
            with open(path, "rb") as handle:
                files[os.path.relpath(path, directory)] = handle.read()
    digest = hashlib.sha256(docker_client.images.get(BASE_IMAGE).id.encode())
    for name, data in sorted(files.items()):
        digest.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    context = digest.hexdigest()[:32]
    image = dockerd.image(docker_client, tag)
    if not force and image is not None and (image.labels or {}).get(LABEL_CONTEXT) == context:
        return image.id, False
    say(f"building {tag} from {directory}")
    _build_from_files(docker_client, files, tag, {LABEL_CONTEXT: context}, {"BASE": BASE_IMAGE})
    return docker_client.images.get(tag).id, True


def build_all(say: Say, force: bool = False) -> dict:
    docker_client = _client()
    source = ensure_base(docker_client, say)
    image_id, built = ensure_agent(docker_client, say, force=force)
    return {"base": BASE_IMAGE, "base_source": source, "agent": AGENT_IMAGE, "agent_id": image_id, "built": built}
