"""Radio channels: what carries a radio segment's frames between its members, behind one
interface (testbed.media.channels.base.Channel). They are registered here by name (a segment's
`channel` field) and implemented under testbed/media/channels/: they build things, and this
floor only names them. The radio medium (testbed.media.radio) keeps positions, mobility, ticks
and records for every segment and hands each segment to its channel:

- `kernel` (the default): the members' frames cross a Linux bridge whose nftables forward hook
  lets through the copies that range and loss allow, each sender serialised by its own queue;
  fast, but with no shared channel (no carrier sense, collisions or contention);
- `wifi`: every member's frames go through its own ns-3 node's 802.11 ad hoc device on one
  shared channel per segment, in real time, in a process of their own.

A new channel is one module under testbed/media/channels/ with a `Channel` class and one line
here.
"""

from __future__ import annotations

import importlib
from typing import Dict, Type

#: channel name → "module:Class"
_CHANNELS: Dict[str, str] = {
    "kernel": "testbed.media.channels.kernel:KernelChannel",
    "wifi": "testbed.media.channels.wifi:WifiChannel",
}
DEFAULT = "kernel"


def channel_names():
    return tuple(_CHANNELS)


def channel_class(name: str) -> Type:
    module_name, _, attr = _CHANNELS[name].partition(":")
    return getattr(importlib.import_module(module_name), attr)
