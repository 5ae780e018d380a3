"""`exec`: run a shell command inside the node (with the node's own tools), recording its exit
status and the end of its output."""

from __future__ import annotations

from .base import FaultAction

#: the longest a command may run before it is recorded as timed out
TIMEOUT_S = 30
#: how much of its output the manifest keeps (the end)
OUTPUT_KEPT = 2000


class Exec(FaultAction):
    name = "exec"
    summary = "run a shell command inside the node (its exit status and output are recorded)"
    target = "node"
    fields = {"command": "a non-empty command line, run with sh -c inside the node"}
    field_schemas = {"command": {"type": "string", "minLength": 1}}

    def parse(self, reader, entry, path, topology):
        command = entry.get("command")
        if not isinstance(command, str) or not command.strip():
            raise reader.fail(path + ("command",), "expected a command line", "a non-empty string")
        return {"command": command}

    def apply(self, nemesis, planned):
        code, output = nemesis.lab.exec_in_node(planned.node, planned.params["command"], timeout=TIMEOUT_S)
        if code is None:
            return {"exit_code": None, "output": f"timed out after {TIMEOUT_S} s"}
        return {"exit_code": code, "output": output[-OUTPUT_KEPT:]}
