"""The testbed: YAML topologies and scenarios become Mininet networks of real containers."""

__version__ = "0.1.0"

#: Every object the testbed creates on the machine carries this prefix (interface and bridge
#: names, nftables tables) or the Docker label below, so that `testbed clean` can find all of
#: it and nothing else.
NAME_PREFIX = "tb"
LABEL_LAB = "org.testbed.lab"
LABEL_NODE = "org.testbed.node"
ENV_LAB = "TESTBED_LAB"
