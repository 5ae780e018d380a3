"""The testbed: YAML topologies and scenarios become Mininet networks of real containers.

The names of everything it creates on the machine are in `testbed.names`; its Python API, for
scripts that build labs and run scenarios, is `testbed.api` (docs/API.md)."""

__version__ = "0.1.0"
