"""Causal cluster consistency (Gidenstam et al., ../shared/papers/causal-cluster-consistency.txt):
the gossip layer (prcast.py) and the causality layer over it (causality.py), both without I/O so
that the roles that wire them to the agent runtime and the in-memory tests run the same code.
docs/CAUSAL-READING.md gives the algorithms as recovered from the paper and the readings chosen."""
