"""DEECo gossip (agents/deeco/): knowledge publishing, probabilistic rebroadcast, the communication
boundary, IP gossip, groupers and push-pull, after Kováč's thesis (/work/shared/papers/
deeco-gossip-manet.txt, chapters 5 to 8). Two roles: `deeco-node` (agents/deeco/node.py) and
`deeco-grouper` (agents/deeco/grouper.py)."""
