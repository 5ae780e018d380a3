"""What this machine can emulate, found by trying it rather than assuming it.

Each kernel feature is probed inside a throwaway network namespace (`unshare --net`), so a probe
never touches the machine's own interfaces and leaves nothing behind. `testbed doctor` prints the
result; the network builder uses it to choose a shaping backend per link property and to refuse
clearly what cannot be emulated.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
from dataclasses import asdict, dataclass, field
from typing import Dict, List, Optional

from .model import IMPAIRMENTS


@dataclass
class Check:
    name: str
    ok: bool
    detail: str = ""
    required: bool = False


@dataclass
class Capabilities:
    checks: Dict[str, Check] = field(default_factory=dict)
    #: impairment → backend that emulates it here, or None
    backends: Dict[str, Optional[str]] = field(default_factory=dict)

    def has(self, name: str) -> bool:
        check = self.checks.get(name)
        return bool(check and check.ok)

    @property
    def problems(self) -> List[str]:
        return [f"{c.name}: {c.detail}" for c in self.checks.values() if c.required and not c.ok]

    @property
    def ready(self) -> bool:
        return not self.problems

    def missing_feature(self, impairment: str) -> str:
        """What the kernel lacks for an impairment, in words a user can search for."""
        if impairment in ("delay", "jitter", "corruption", "reordering"):
            return "the kernel's netem queueing discipline (sch_netem)"
        if impairment == "loss":
            return "netem (sch_netem) or nftables (bridge family, numgen)"
        if impairment == "duplication":
            return "netem (sch_netem) or the nftables netdev egress hook with dup"
        return "tc htb/tbf or netem"

    def to_dict(self) -> Dict[str, object]:
        return {
            "ready": self.ready,
            "problems": self.problems,
            "checks": {name: asdict(check) for name, check in self.checks.items()},
            "link_properties": dict(self.backends),
        }


def _run(args: List[str], timeout: float = 15.0, stdin: Optional[str] = None) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(args, input=stdin, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        return subprocess.CompletedProcess(args, 127, "", f"{args[0]}: not found")
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(args, 124, "", f"{args[0]}: timed out after {timeout:g}s")


def _in_scratch_netns(script: str) -> subprocess.CompletedProcess:
    """Run a shell script in a new, anonymous network namespace that dies with it."""
    return _run(["unshare", "--net", "sh", "-ec", script])


def _first_line(text: str) -> str:
    text = text.strip()
    return text.splitlines()[0] if text else ""


def probe_netem() -> Check:
    res = _in_scratch_netns("ip link set lo up; tc qdisc add dev lo root netem delay 1ms loss 1%")
    return Check("netem", res.returncode == 0,
                 "tc qdisc netem works" if res.returncode == 0 else
                 f"sch_netem missing: {_first_line(res.stderr) or 'tc failed'}")


def probe_tc(kind: str, args: str) -> Check:
    res = _in_scratch_netns(f"ip link set lo up; tc qdisc add dev lo root {args}")
    return Check(f"tc {kind}", res.returncode == 0,
                 f"tc qdisc {kind} works" if res.returncode == 0 else _first_line(res.stderr) or "tc failed")


def probe_nftables() -> Check:
    version = _run(["nft", "--version"])
    if version.returncode != 0:
        return Check("nftables", False, "nft not found (apt-get install nftables)")
    # Loss and partitions drop in a lab's bridge table (see testbed/shaping): probe exactly that.
    script = (
        "nft -f - <<'EOF'\n"
        "table bridge tbprobe { chain cables { type filter hook forward priority 0; "
        "iifname \"tbprobe0\" numgen random mod 1000000 < 50000 drop; }; }\n"
        "EOF"
    )
    res = _in_scratch_netns(script)
    return Check("nftables", res.returncode == 0,
                 f"{version.stdout.strip()}, random drop in the bridge forward hook" if res.returncode == 0
                 else f"{version.stdout.strip()}: {_first_line(res.stderr)}")


def probe_nft_dup() -> Check:
    script = (
        "ip link set lo up; nft -f - <<'EOF'\n"
        "table netdev tbprobe { chain eg { type filter hook egress device \"lo\" priority 0; "
        "meta mark 0x7e57 accept; numgen random mod 100 < 5 meta mark set 0x7e57 dup to \"lo\"; }; }\n"
        "EOF"
    )
    res = _in_scratch_netns(script)
    return Check("nftables dup", res.returncode == 0,
                 "netdev egress hook with dup" if res.returncode == 0 else _first_line(res.stderr))


def probe_openvswitch() -> Check:
    module = os.path.isdir("/sys/module/openvswitch") or _run(["modprobe", "-n", "openvswitch"]).returncode == 0
    tools = shutil.which("ovs-vsctl") is not None
    if module and tools:
        return Check("openvswitch", True, "kernel module and ovs-vsctl present")
    missing = []
    if not module:
        missing.append("kernel module openvswitch")
    if not tools:
        missing.append("ovs-vsctl (apt-get install openvswitch-switch)")
    return Check("openvswitch", False, "missing " + " and ".join(missing))


def probe_docker() -> Check:
    from .dockerd import EngineUnavailable, version as engine_version

    try:
        version = engine_version(timeout=5)
    except EngineUnavailable as exc:
        return Check("docker", False, f"{exc}; the process runtime works without it", required=True)
    return Check("docker", True, f"engine {version.get('Version')} (API {version.get('ApiVersion')})", required=True)


def probe_mininet() -> Check:
    spec = importlib.util.find_spec("mininet")
    mnexec = shutil.which("mnexec")
    if spec is None or mnexec is None:
        missing = [what for what, ok in (("the mininet Python module", spec), ("mnexec", mnexec)) if not ok]
        return Check("mininet", False, "missing " + " and ".join(missing) + " (apt-get install mininet)",
                     required=True)
    try:
        import mininet.net
        version = getattr(mininet.net, "VERSION", "?")
    except Exception as exc:
        return Check("mininet", False, f"import failed: {exc}", required=True)
    return Check("mininet", True, f"{version}, mnexec at {mnexec}", required=True)


def probe_linux_bridge() -> Check:
    brctl = shutil.which("brctl")
    return Check("linux bridge", brctl is not None,
                 "brctl present" if brctl else "brctl missing (apt-get install bridge-utils)", required=True)


def probe_java() -> Check:
    res = _run(["java", "-version"])
    if res.returncode != 0:
        return Check("java", False, "no Java runtime (Spark needs Java 17 or later)")
    match = re.search(r'version "([^"]+)"', res.stderr + res.stdout)
    return Check("java", True, match.group(1) if match else _first_line(res.stderr))


def probe_pyspark() -> Check:
    if importlib.util.find_spec("pyspark") is None:
        return Check("pyspark", False, "not installed (pip install pyspark)")
    try:
        return Check("pyspark", True, importlib.metadata.version("pyspark"))
    except importlib.metadata.PackageNotFoundError:
        return Check("pyspark", True, "installed")


def probe_cgroups() -> Check:
    """Which resource limits the process runtime can apply (the docker runtime's are the engine's)."""
    from .runtimes.cgroups import Cgroups

    groups = Cgroups()
    can = groups.available()
    have = [limit for limit, ok in can.items() if ok]
    version = "v2" if groups.v2 else "v1"
    if len(have) == len(can):
        return Check("control groups", True, f"cgroup {version}: process nodes get memory, pids and cpus limits")
    return Check("control groups", False, f"cgroup {version}: process nodes can get "
                 f"{', '.join(have) or 'no'} limits, not {', '.join(k for k, ok in can.items() if not ok)}")


def probe_root() -> Check:
    ok = os.geteuid() == 0
    return Check("root", ok, "running as root" if ok else "namespaces, bridges and containers need root (sudo)",
                 required=True)


def _backends(checks: Dict[str, Check]) -> Dict[str, Optional[str]]:
    netem = checks["netem"].ok
    nft = checks["nftables"].ok
    backends: Dict[str, Optional[str]] = {}
    for impairment in IMPAIRMENTS:
        if netem:
            backends[impairment] = "netem"
        elif impairment == "loss":
            backends[impairment] = "nftables" if nft else None
        elif impairment == "duplication":
            backends[impairment] = "nftables" if checks["nftables dup"].ok else None
        elif impairment == "bandwidth":
            backends[impairment] = "tbf" if checks["tc tbf"].ok else None
        else:
            backends[impairment] = None
    return backends


@functools.lru_cache(maxsize=1)
def detect() -> Capabilities:
    """Probe the machine once per process."""
    checks = [
        probe_root(), probe_mininet(), probe_linux_bridge(), probe_docker(), probe_netem(),
        probe_tc("htb", "handle 1: htb default 1"), probe_tc("tbf", "tbf rate 10mbit burst 32kbit latency 50ms"),
        probe_nftables(), probe_nft_dup(), probe_openvswitch(), probe_java(), probe_pyspark(), probe_cgroups(),
    ]
    by_name = {check.name: check for check in checks}
    return Capabilities(checks=by_name, backends=_backends(by_name))
