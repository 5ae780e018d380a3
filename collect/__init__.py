"""Packet capture and collection of logs into run directories (arrives with the scenarios issue)."""
