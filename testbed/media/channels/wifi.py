"""The 802.11 channel: a radio segment's frames through ns-3's 802.11 ad hoc devices on one
shared channel, emulated in real time by ns-3 in a process of its own (ns3_process.py).

Each member's radio interface (wlan0 unless named) is a veth whose other end stays in the
machine's namespace, on no bridge; the ns-3 process reads and writes that end through an
AF_PACKET socket, one ns-3 node per member. So a member's frames meet carrier sense, backoff,
collisions, hidden terminals, the basic rate for broadcasts (no retries) and ACKs and retries for
unicasts, the MAC queue (its delay and drops), and the propagation's range, shadowing and
fading, all in ns-3 (YansWifiChannel and YansWifiPhy), with ns-3's randomness seeded from the
scenario's seed. The member's interface takes its ns-3 device's MAC address; checksums are
computed by the member's kernel (no offload), so what crosses the air is the frame the member
sent.

Positions come from the radio medium's ticks (same mobility, traces and `move` as on the kernel
medium); partitions drop the other groups' frames where ns-3 hands them to a member (they still
took the air, as on a real partitioned radio). The run directory's manifest records, per member,
what happened to its frames (sent, received, lost to interference, dropped by reason, retried,
queueing delay) and the simulator's lag behind the wall clock, which the fidelity monitor judges.
With time dilation k, ns-3's simulated time runs k times slower than the wall clock, so that a
dilated run's 802.11 timings are the virtual-time ones (and its lag is in virtual time too).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from typing import Any, Dict, FrozenSet, Iterable, List, Optional, Tuple

import numpy as np

from ...errors import CapabilityError, TestbedError
from ..base import Build
from ...names import ENV_LAB, NODE_TABLE
from ...shaping import Port
from ...radio.spec import RadioSegment
from ...radio.wifi import NOISE_FIGURE_DB, PREAMBLE_SNR_DB, STANDARDS
from .base import Channel

#: the ns-3 process: loading ns-3 and compiling the glue (about 10-20 s on these machines)
LOAD_TIMEOUT_S = 180.0
BUILD_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 60.0
#: how often the simulation reads the control pipe (positions, partitions) and samples its lag
CONTROL_MS = 10.0
#: the most members the channel carried faithfully at each time dilation on a 2-core machine, under
#: DEECo's MANET workload (P = 0.5, 1000-byte knowledge every 5 s, SUMO mobility at the thesis's
#: density): benchmarks/radio.py --wifi (benchmarks/results/radio.json, 2026-12-01). 200 members at
#: k = 1 were degraded (the agents' event loops lagged 50 ms, the simulator 16 ms); the largest size
#: measured is 200, so above it nothing is known
FAITHFUL_MEMBERS = {1.0: 60, 2.0: 200, 4.0: 200}
MEASURED_UP_TO = 200
#: ns-3's WifiMacQueue drops a frame that waited longer than this (its default, set explicitly)
QUEUE_MAX_DELAY_MS = 500
LOG_FILE = "ns3.log"
STATS_FILE = "wifi.json"


def capacity_warnings(members: int, dilation: float, cores: int) -> List[str]:
    """What a lab of `members` on the wifi channel at this dilation should know beforehand: more
    members than the benchmark found faithful on 2 cores (benchmarks/radio.py --wifi)."""
    measured = [k for k in sorted(FAITHFUL_MEMBERS) if k <= dilation]
    limit = FAITHFUL_MEMBERS[measured[-1]] if measured else FAITHFUL_MEMBERS[min(FAITHFUL_MEMBERS)]
    if cores > 2:  # more cores than the benchmark's: its limits are lower bounds
        return []
    if members > MEASURED_UP_TO and limit == MEASURED_UP_TO:
        return [f"{members} members on the 802.11 channel: the benchmark (2 cores, DEECo's MANET workload) "
                f"measured up to {MEASURED_UP_TO}; watch the run's fidelity (wifi_lag_ms, loop_lag_ms)"]
    if members > limit:
        better = [k for k in sorted(FAITHFUL_MEMBERS) if FAITHFUL_MEMBERS[k] >= members]
        hint = f", or run at time_dilation {better[0]:g}, where it did" if better else ""
        at = measured[-1] if measured else min(FAITHFUL_MEMBERS)
        return [f"{members} members on the 802.11 channel at time_dilation {dilation:g}: on 2 cores the benchmark "
                f"(DEECo's MANET workload, benchmarks/radio.py --wifi) stayed faithful up to {limit} members at "
                f"time_dilation {at:g}; watch the run's fidelity verdict (wifi_lag_ms, loop_lag_ms){hint}"]
    return []


def _die_with_parent() -> None:  # pragma: no cover (runs in the child)
    import ctypes

    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    os.setsid()


class WifiChannel(Channel):
    name = "wifi"

    def __init__(self, medium, segments: Dict[str, Tuple[int, RadioSegment]]) -> None:
        super().__init__(medium, segments)
        self._host_end: Dict[Tuple[str, str], str] = {}      # (segment, node) → veth end on the machine
        self._member_end: Dict[Tuple[str, str], Port] = {}   # (segment, node) → its radio interface
        self._index: Dict[Tuple[str, str], int] = {}         # (segment, node) → ns-3 member index
        self._sent: Dict[int, Tuple[float, float, float]] = {}
        self._process: Optional[subprocess.Popen] = None
        self._log = None
        self._macs: Dict[str, str] = {}
        self._stats: Dict[str, Any] = {}
        self._error = ""
        self._warnings: List[str] = []
        self._write_lock = threading.Lock()
        self._directory = os.path.join(medium.workdir, "radio") if medium.workdir else None

    # -- before anything is created ---------------------------------------------------------------

    def check(self, accepted: Iterable[str]) -> FrozenSet[str]:
        source = self.medium.topo.source
        if importlib.util.find_spec("ns3") is None:
            raise CapabilityError(f"{source}: channel: wifi needs ns-3's Python bindings (pip install 'ns3>=3.44,<3.45'; "
                                  f"setup.sh installs them)")
        if shutil.which("ethtool") is None:
            raise CapabilityError(f"{source}: channel: wifi needs ethtool to turn the members' checksum and "
                                  f"segmentation offloads off (apt-get install ethtool; setup.sh installs it)")
        self._warnings = capacity_warnings(sum(len(s.members) for _, s in self.segments.values()),
                                           self.medium.time_dilation, os.cpu_count() or 1)
        return frozenset()

    def warnings(self) -> List[str]:
        return list(self._warnings)

    # -- build ------------------------------------------------------------------------------------

    def add(self, build: Build) -> None:
        """The members' veth pairs, their far ends left on the machine; and the ns-3 process,
        started now so that it loads ns-3 while the lab is built."""
        index = 0
        for name, (number, segment) in self.segments.items():
            bridge = self.names.radio_bridge(number)  # names only: no bridge is made
            for k, (node, interface) in enumerate(segment.members.items(), start=1):
                host = self.names.port(bridge, k)
                pid = build.hosts[node].pid
                build.batch.append(f"link add name {interface} netns {pid} type veth peer name {host}")
                build.batch.append(f"link set dev {host} up")
                self._host_end[(name, node)] = host
                self._member_end[(name, node)] = Port(device=interface, netns_pid=pid, table=NODE_TABLE)
                self._index[(name, node)] = index
                index += 1
        self._launch()

    def _launch(self) -> None:
        env = dict(os.environ)
        env[ENV_LAB] = self.names.lab
        env.setdefault("PYTHONUNBUFFERED", "1")
        if self._directory is not None:
            os.makedirs(self._directory, exist_ok=True)
            self._log = open(os.path.join(self._directory, LOG_FILE), "ab")
        self._process = subprocess.Popen([sys.executable, "-m", "testbed.media.channels.ns3_process"],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=self._log if self._log is not None else subprocess.DEVNULL,
                                         env=env, preexec_fn=_die_with_parent)

    def _answer(self, key: str, timeout: float) -> Dict[str, Any]:
        """The ns-3 process's next message, which must have `key`."""
        proc = self._process
        result: Dict[str, Any] = {}

        def read() -> None:
            line = proc.stdout.readline()
            if line:
                try:
                    result.update(json.loads(line))
                except ValueError:
                    result["garbled"] = line.decode(errors="replace")[:200]

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(timeout)
        if key not in result:
            status = proc.poll()
            why = (f"exited with status {status}" if status is not None else
                   f"did not answer within {timeout:g} s" if reader.is_alive() else f"answered {result}")
            raise TestbedError(f"the wifi channel's ns-3 process {why} (waiting for '{key}'){self._log_tail()}")
        return result

    def _log_tail(self) -> str:
        if self._directory is None:
            return ""
        try:
            with open(os.path.join(self._directory, LOG_FILE), "rb") as handle:
                lines = [ln for ln in handle.read().decode(errors="replace").splitlines()
                         if ln.strip() and "materialize" not in ln]
        except OSError:
            return ""
        return (": " + " | ".join(lines[-5:])) if lines else ""

    # -- start ------------------------------------------------------------------------------------

    def start(self) -> None:
        for host in self._host_end.values():
            path = f"/proc/sys/net/ipv6/conf/{host}/disable_ipv6"
            if os.path.exists(path):
                with open(path, "w") as handle:
                    handle.write("1")
            Port(device=host, netns_pid=None, table=NODE_TABLE).run(["ethtool", "-K", host, "gro", "off"])
        for port in self._member_end.values():
            port.run(["ethtool", "-K", port.device, "tx", "off", "tso", "off", "gso", "off", "gro", "off"])
        self._answer("loaded", LOAD_TIMEOUT_S)
        segments = []
        for name, (_, segment) in self.segments.items():
            wifi = segment.wifi
            propagation = wifi.propagation
            spec = {"model": propagation.model, "tx_power": propagation.tx_power_dbm,
                    "sensitivity": propagation.sensitivity_dbm, "sigma": propagation.sigma_db,
                    "exponent": propagation.exponent, "reference_loss": propagation.reference_loss_db,
                    "reference_distance": propagation.reference_distance_m, "height": propagation.height_m,
                    "fading": {"m": propagation.nakagami_m} if propagation.fading == "nakagami" else None}
            segments.append({"name": name, "ns3_standard": STANDARDS[wifi.standard][0],
                             "data_mode": wifi.mode(wifi.data_rate_mbit), "basic_mode": wifi.mode(wifi.basic_rate_mbit),
                             "frequency_hz": wifi.frequency_hz, "range_m": segment.range_m,
                             "queue": segment.queue_frames, "queue_max_delay_ms": QUEUE_MAX_DELAY_MS,
                             "noise_figure_db": NOISE_FIGURE_DB, "preamble_snr_db": PREAMBLE_SNR_DB,
                             "propagation": spec,
                             "members": [{"key": f"{name}/{node}", "device": self._host_end[(name, node)],
                                          "position": list(self.medium.position(node))}
                                         for node in segment.members]})
        if self._directory is None:  # a lab without a run directory: the statistics go to a scratch one
            import tempfile

            self._directory = tempfile.mkdtemp(prefix=f"testbed-{self.names.lab}-wifi-")
        self._stats_path = stats_path = os.path.join(self._directory, STATS_FILE)
        config = {"segments": segments, "seed": self.medium.seed, "stats_path": stats_path,
                  "time_dilation": self.medium.time_dilation, "control_ms": CONTROL_MS}
        self._write(json.dumps(config) + "\n")
        ready = self._answer("ready", BUILD_TIMEOUT_S)
        self._macs = ready["macs"]
        for (name, node), port in self._member_end.items():
            port.run(["ip", "link", "set", "dev", port.device, "address", self._macs[f"{name}/{node}"]])

    def _write(self, text: str) -> None:
        with self._write_lock:
            proc = self._process
            if proc is None or proc.stdin is None or proc.stdin.closed:
                return
            try:
                proc.stdin.write(text.encode())
                proc.stdin.flush()
            except (BrokenPipeError, ValueError):
                self._error = self._error or f"the ns-3 process went away{self._exit_status()}{self._log_tail()}"

    def _exit_status(self) -> str:
        status = self._process.poll() if self._process is not None else None
        return f" (exit status {status})" if status is not None else ""

    # -- while running ----------------------------------------------------------------------------

    def apply(self, t: float, ticks: List[Tuple[str, List[str], np.ndarray, np.ndarray]]) -> None:
        proc = self._process
        if proc is not None and proc.poll() is not None and not self._error:
            # the channel is gone: no frame crosses any more; the ticker stops and says why
            self._error = f"the ns-3 process exited with status {proc.returncode}{self._log_tail()}"
            raise TestbedError(f"the 802.11 channel's {self._error}")
        lines = []
        for name, members, positions, _ in ticks:
            for node, point in zip(members, positions.tolist()):
                index = self._index[(name, node)]
                point = (point[0], point[1], point[2])
                if self._sent.get(index) != point:
                    lines.append(f"P {index} {point[0]!r} {point[1]!r} {point[2]!r}\n")
                    self._sent[index] = point
        if lines and self._process is not None:
            self._write("".join(lines))

    def partition(self, blocked: Dict[Tuple[str, str], List[str]]) -> None:
        lines = []
        for (name, node), index in self._index.items():
            interface = self.segments[name][1].members[node]
            lines.append(f"B {index} {' '.join(blocked.get((node, interface), []))}\n")
        self._write("".join(lines))

    # -- the end ----------------------------------------------------------------------------------

    def finish(self) -> None:
        proc = self._process
        if proc is None or self._stats:
            return
        self._write("Q\n")
        try:
            self._answer("done", STOP_TIMEOUT_S)
            with open(self._stats_path) as handle:
                self._stats = json.load(handle)
        except (TestbedError, OSError, ValueError) as exc:
            self._error = self._error or f"wifi channel statistics lost: {exc}"
        self._stop()

    def _stop(self) -> None:
        proc = self._process
        if proc is None:
            return
        try:
            if proc.stdin is not None:
                proc.stdin.close()
        except OSError:
            pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        if self._log is not None:
            self._log.close()
            self._log = None

    def teardown(self) -> None:
        proc = self._process
        if proc is not None and proc.poll() is None:
            proc.kill()
        self._stop()

    @property
    def error(self) -> str:
        return self._error

    def manifest(self, segment: str) -> Dict[str, Any]:
        _, spec = self.segments[segment]
        out: Dict[str, Any] = {"mac_queue_max_delay_ms": QUEUE_MAX_DELAY_MS,
                               "macs": {node: self._macs.get(f"{segment}/{node}") for node in spec.members},
                               "ports": {node: self._host_end.get((segment, node)) for node in spec.members}}
        if self._stats:
            members = self._stats.get("members", {})
            out["wifi_statistics"] = {node: members.get(f"{segment}/{node}") for node in spec.members}
            out["realtime_lag_ms"] = self._stats.get("lag_ms")
            out["ns3_seed"] = self._stats.get("ns3_seed")
            out["ns3_run"] = self._stats.get("ns3_run")
        return out
