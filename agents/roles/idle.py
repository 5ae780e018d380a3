"""The `idle` role: the node runs its image's (or its own) command and no testbed agent.

Useful for bringing up a network to explore by hand (`testbed up`, `testbed exec`) and for
images that carry their own software.
"""

NAME = "idle"
ROLE = None  # no agent runs for this role
