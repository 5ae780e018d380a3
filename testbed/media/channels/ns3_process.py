"""The ns-3 process of the wifi channel: `python -m testbed.media.channels.ns3_process`.

It runs on the machine (in its network namespace), started by testbed.media.channels.wifi:
1. it loads ns-3 and compiles the per-frame glue (ns3_glue.cpp), then writes `{"loaded": true}`;
2. it reads one JSON line on stdin: the segments, their members' veth ends on the machine, the
   standard, rates, propagation, queue, initial positions, the seed, the time dilation and where
   to write the statistics;
3. it builds one ns-3 node per member with an 802.11 ad hoc device on its segment's shared
   YansWifiChannel and an FdNetDevice on an AF_PACKET socket bound to the member's veth end,
   writes `{"ready": true, "macs": {...}}` (the member's interface takes its wifi device's
   address) and runs the simulator in real time, or k times slower with time dilation k
   (DilatedRealtimeSimulatorImpl in the glue);
4. from then on stdin is the control pipe read by the glue (positions, partitions, stop);
   at `Q` or the end of stdin it stops, writes the statistics file and `{"done": true}`.

The Python interpreter does not run while ns-3 does (cppyy keeps the GIL), hence the glue.
"""

from __future__ import annotations

import json
import os
import socket
import sys

#: SOL_PACKET and PACKET_IGNORE_OUTGOING (linux/if_packet.h): without it the socket reads back
#: the frames ns-3 writes towards the member
SOL_PACKET = 263
PACKET_IGNORE_OUTGOING = 23
ETH_P_ALL = 3
NS3_SEED = 1


def _say(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def _propagation(ns, spec: dict, range_m: float, frequency_hz: float):
    """The segment's chain of ns-3 loss models: path loss, shadowing, fading, then the range."""
    chain = []
    model = spec["model"]
    if model == "log-distance":
        loss = ns.CreateObject[ns.LogDistancePropagationLossModel]()
        loss.SetAttribute("Exponent", ns.DoubleValue(spec["exponent"]))
        loss.SetAttribute("ReferenceDistance", ns.DoubleValue(spec["reference_distance"]))
        loss.SetAttribute("ReferenceLoss", ns.DoubleValue(spec["reference_loss"]))
        chain.append(loss)
    elif model == "friis":
        loss = ns.CreateObject[ns.FriisPropagationLossModel]()
        loss.SetAttribute("Frequency", ns.DoubleValue(frequency_hz))
        chain.append(loss)
    elif model == "two-ray":
        loss = ns.CreateObject[ns.TwoRayGroundPropagationLossModel]()
        loss.SetAttribute("Frequency", ns.DoubleValue(frequency_hz))
        loss.SetAttribute("HeightAboveZ", ns.DoubleValue(spec["height"]))
        chain.append(loss)
    if spec.get("sigma"):
        shadowing = ns.CreateObject[ns.RandomPropagationLossModel]()
        normal = ns.CreateObject[ns.NormalRandomVariable]()
        normal.SetAttribute("Mean", ns.DoubleValue(0.0))
        normal.SetAttribute("Variance", ns.DoubleValue(spec["sigma"] ** 2))
        shadowing.SetAttribute("Variable", ns.PointerValue(normal))
        chain.append(shadowing)
    fading = spec.get("fading")
    if fading:
        nakagami = ns.CreateObject[ns.NakagamiPropagationLossModel]()
        for key in ("m0", "m1", "m2"):
            nakagami.SetAttribute(key, ns.DoubleValue(fading["m"]))
        chain.append(nakagami)
    cut = ns.CreateObject[ns.RangePropagationLossModel]()
    cut.SetAttribute("MaxRange", ns.DoubleValue(range_m))
    chain.append(cut)
    for first, second in zip(chain, chain[1:]):
        first.SetNext(second)
    return chain


#: the ns-3 modules the channel uses: loading only these (not the 40 of `from ns import ns`)
#: halves the process's start (7 s against 15 on these machines)
MODULES = ("core", "network", "mobility", "propagation", "wifi", "fd-net-device")


def load_ns3():
    """ns-3's C++ namespace through cppyy, with the channel's modules only."""
    import glob
    import importlib.util
    import re

    import cppyy
    import libcppyy

    spec = importlib.util.find_spec("ns3")  # the wheel's files: lib/, include/ (the `ns` package loads them all)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("ns-3's Python bindings are not installed (pip install 'ns3>=3.44,<3.45')")
    prefix = list(spec.submodule_search_locations)[0]
    libcppyy.AddSmartPtrType("Ptr")
    libraries = {}
    for directory in (os.path.join(prefix, "lib"), os.path.join(prefix, "lib64")):
        if os.path.isdir(directory):
            cppyy.add_library_path(directory)
            for path in glob.glob(os.path.join(directory, "libns3*.so")):
                match = re.match(r"libns3[.\d]*-(.+?)(-default|-optimized|-debug)?\.so$", os.path.basename(path))
                if match:
                    libraries[match.group(1)] = path
    cppyy.add_include_path(os.path.join(prefix, "include"))
    for module in MODULES:
        cppyy.include(f"ns3/{module}-module.h")
    for module in MODULES:
        if module not in libraries:
            raise SystemExit(f"ns-3's {module} library is not in {prefix}")
        cppyy.load_library(libraries[module])
    return cppyy.gbl.ns3


def main() -> int:
    import cppyy

    ns = load_ns3()
    glue = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ns3_glue.cpp")
    with open(glue) as handle:
        cppyy.cppdef(handle.read())
    tb = cppyy.gbl.tbwifi
    _say({"loaded": True})
    line = sys.stdin.readline()
    if not line:
        return 0
    config = json.loads(line)

    dilation = float(config.get("time_dilation", 1.0))
    if dilation == 1.0:
        ns.GlobalValue.Bind("SimulatorImplementationType", ns.StringValue("ns3::RealtimeSimulatorImpl"))
    else:  # simulated time runs `dilation` times slower than the wall clock (before any Simulator call)
        tb.UseDilation(dilation)
    ns.GlobalValue.Bind("ChecksumEnabled", ns.BooleanValue(True))
    ns.RngSeedManager.SetSeed(NS3_SEED)
    ns.RngSeedManager.SetRun(max(int(config["seed"]), 1))

    macs = {}
    index = 0
    keep = []  # the Python side's references to ns-3 objects, for the run's length
    stream = 1
    for segment in config["segments"]:
        ns.Config.SetDefault("ns3::WifiMacQueue::MaxSize", ns.StringValue(f"{segment['queue']}p"))
        ns.Config.SetDefault("ns3::WifiMacQueue::MaxDelay", ns.StringValue(f"{segment['queue_max_delay_ms']}ms"))
        members = segment["members"]
        nodes = ns.NodeContainer()
        nodes.Create(len(members))
        wifi = ns.WifiHelper()
        wifi.SetStandard(getattr(ns, segment["ns3_standard"]))
        wifi.SetRemoteStationManager("ns3::ConstantRateWifiManager",
                                     "DataMode", ns.StringValue(segment["data_mode"]),
                                     "ControlMode", ns.StringValue(segment["basic_mode"]),
                                     "NonUnicastMode", ns.StringValue(segment["basic_mode"]))
        channel = ns.CreateObject[ns.YansWifiChannel]()
        chain = _propagation(ns, segment["propagation"], segment["range_m"], segment["frequency_hz"])
        channel.SetPropagationLossModel(chain[0])
        channel.SetPropagationDelayModel(ns.CreateObject[ns.ConstantSpeedPropagationDelayModel]())
        phy = ns.YansWifiPhyHelper()
        phy.SetChannel(channel)
        propagation = segment["propagation"]
        phy.Set("TxPowerStart", ns.DoubleValue(propagation["tx_power"]))
        phy.Set("TxPowerEnd", ns.DoubleValue(propagation["tx_power"]))
        phy.Set("RxSensitivity", ns.DoubleValue(propagation["sensitivity"]))
        # ns-3 detects a preamble only from MinimumRssi and counts a detected frame as a busy
        # medium only from CcaSensitivity (both -82 dBm by default): the sensitivity is both, so
        # that it is the reception threshold and carrier sense reaches as far. The noise figure and
        # preamble detection's SNR are set from the values the expected delivery's threshold uses
        # (testbed/radio/wifi.py: WifiSpec.threshold_dbm), not left to ns-3's defaults
        ns.Config.SetDefault("ns3::ThresholdPreambleDetectionModel::MinimumRssi",
                             ns.DoubleValue(propagation["sensitivity"]))
        ns.Config.SetDefault("ns3::ThresholdPreambleDetectionModel::Threshold",
                             ns.DoubleValue(segment["preamble_snr_db"]))
        phy.Set("CcaSensitivity", ns.DoubleValue(propagation["sensitivity"]))
        phy.Set("RxNoiseFigure", ns.DoubleValue(segment["noise_figure_db"]))
        mac = ns.WifiMacHelper()
        mac.SetType("ns3::AdhocWifiMac")
        devices = wifi.Install(phy, mac, nodes)
        stream += wifi.AssignStreams(devices, stream)
        for model in chain:
            stream += model.AssignStreams(stream)
        mobility = ns.MobilityHelper()
        mobility.SetMobilityModel("ns3::ConstantPositionMobilityModel")
        mobility.Install(nodes)
        for i, member in enumerate(members):
            node = nodes.Get(i)
            x, y, z = member["position"]
            node.GetObject[ns.MobilityModel]().SetPosition(ns.Vector(x, y, z))
            sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
            sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
            sock.bind((member["device"], 0))
            fd = ns.CreateObject[ns.FdNetDevice]()
            fd.SetFileDescriptor(os.dup(sock.fileno()))  # the device owns and closes its copy
            sock.close()
            node.AddDevice(fd)
            device = cppyy.gbl.ns3.DynamicCast[ns.WifiNetDevice](devices.Get(i))
            address = ns.Mac48Address.ConvertFrom(device.GetAddress())
            fd.SetAddress(address.ConvertTo())
            if node.GetId() != index:
                raise RuntimeError(f"ns-3 node {node.GetId()} is member {index}")
            tb.Join(index, fd, device)
            macs[member["key"]] = str(address)
            index += 1
        keep += [nodes, devices, channel, chain, wifi, phy, mac, mobility]

    tb.StartControl(sys.stdin.fileno(), float(config.get("control_ms", 10.0)))
    _say({"ready": True, "macs": macs})
    ns.Simulator.Run()

    stats = {"members": {}, "lag_ms": json.loads(str(tb.LagJson())), "ns3_seed": NS3_SEED,
             "ns3_run": max(int(config["seed"]), 1), "simulated_s": ns.Simulator.Now().GetSeconds()}
    index = 0
    for segment in config["segments"]:
        for member in segment["members"]:
            stats["members"][member["key"]] = json.loads(str(tb.MemberJson(index)))
            index += 1
    with open(config["stats_path"] + ".tmp", "w") as handle:
        json.dump(stats, handle)
    os.replace(config["stats_path"] + ".tmp", config["stats_path"])
    _say({"done": True})
    ns.Simulator.Destroy()
    return 0


if __name__ == "__main__":
    sys.exit(main())
