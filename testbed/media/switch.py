"""Switches: each topology switch is a Linux bridge in the machine's namespace (`tb<lab id>s<n>`),
or an Open vSwitch bridge where a switch asks for `type: ovs` and the machine has OVS."""

from __future__ import annotations

from typing import FrozenSet, Iterable

from ..errors import CapabilityError
from .base import Build, Medium

#: bridge names have room for three digits (interface names are at most 15 bytes)
MAX_SWITCHES = 999


class Switches(Medium):
    name = "switches"

    def check(self, accepted: Iterable[str]) -> FrozenSet[str]:
        caps = self.capabilities
        ovs = [name for name, sw in self.topo.switches.items() if sw.type == "ovs"]
        if ovs and not caps.has("openvswitch"):
            raise CapabilityError(f"{self.topo.source}: switch(es) {', '.join(ovs)} ask for Open vSwitch, which this "
                                  f"machine cannot run ({caps.checks['openvswitch'].detail}); use type: bridge")
        if len(self.topo.switches) > MAX_SWITCHES:
            raise CapabilityError(f"{self.topo.source}: {len(self.topo.switches)} switches; at most {MAX_SWITCHES} "
                                  "per lab")
        return frozenset()

    def add(self, build: Build) -> None:
        wired = [(name, sw) for name, sw in self.topo.switches.items() if sw.type != "radio"]
        for index, (name, switch) in enumerate(wired, start=1):
            device = self.names.bridge(index)
            build.bridges[name] = device
            build.add_bridge(device, stp=switch.stp, ovs=switch.type == "ovs")
