"""The radio medium's pure parts: mobility models and trace files (mobility), which say where
each node of a radio segment is at every moment of model time, deterministically and without
touching the machine.
"""
