"""Media: the layer-2 things a lab's nodes are joined by, behind one interface (`media.base.Medium`).

- `switches`: each topology switch as a Linux bridge (or an Open vSwitch bridge);
- `cables`: each topology link as a veth cable through a bridge port in the machine's namespace,
  where its shaping (loss, duplication, bandwidth, or netem) and partitions act;
- `radio`: each radio segment as a bridge whose forward hook lets through only the copies of a
  frame that the members' positions, range and loss model allow, with airtime and mobility.

The lab builds every registered medium in this order (a cable into a switch needs the switch's
bridge) and otherwise knows nothing of their details; a new medium (the radio segment) is one
module and one line here (the radio segment is).
"""

from __future__ import annotations

import importlib
from typing import List, Tuple, Type

#: (name, "module:Class"), in build order
_MEDIA: List[Tuple[str, str]] = [
    ("switches", "testbed.media.switch:Switches"),
    ("cables", "testbed.media.cable:Cables"),
    ("radio", "testbed.media.radio:Radio"),
]


def medium_classes() -> List[Tuple[str, Type]]:
    """The registered media, in build order."""
    out = []
    for name, ref in _MEDIA:
        module_name, _, attr = ref.partition(":")
        out.append((name, getattr(importlib.import_module(module_name), attr)))
    return out
