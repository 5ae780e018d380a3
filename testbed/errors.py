"""Errors the testbed reports to its users, each with the exit code the CLI returns for it."""

from __future__ import annotations

from typing import Optional


class TestbedError(Exception):
    """A failure the user should read; the CLI prints it without a traceback."""

    exit_code = 1


class UsageError(TestbedError):
    """Bad input: a file, a field or a command-line argument is not what is allowed."""

    exit_code = 2


class ValidationError(UsageError):
    """One problem in an input file, located by file, line and field."""

    def __init__(self, file: str, field: str, message: str, allowed: Optional[str] = None,
                 line: Optional[int] = None) -> None:
        self.file = file
        self.field = field
        self.message = message
        self.allowed = allowed
        self.line = line
        super().__init__(str(self))

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        text = f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"
        if self.allowed:
            text += f" (allowed: {self.allowed})"
        return text


class CapabilityError(TestbedError):
    """The machine cannot emulate what was asked (a kernel feature or a tool is missing)."""

    exit_code = 3


class RemoteError(TestbedError):
    """A remote machine could not be reached, did not prove its identity (host key), refused the
    login, or the connection to it broke (`testbed remote`)."""

    exit_code = 4
