"""The agent's optional speed-ups: uvloop for the event loop and orjson for the event log's JSON.

Each is used when it can be imported, and the standard library's asyncio loop and json encoder
otherwise: the agent behaves the same either way (the event log's lines parse to the same objects,
timers never fire before their time), only at a different cost. The agent image carries both,
copied from the testbed's own Python environment (testbed/images.py); a `process` node's agent
uses that environment directly. The agent's `started` event names what it used (`loop`, `json`),
so every run says what it measured; benchmarks/agent_cost.py measures what each one saves.

TESTBED_AGENT_SPEEDUPS in a node's environment chooses: unset or "all" for every one available,
"none" for the standard library only, or a comma-separated list of the names to use ("orjson").
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any, Callable, Dict, Optional

#: what can be asked for in TESTBED_AGENT_SPEEDUPS
NAMES = ("uvloop", "orjson")
ENV = "TESTBED_AGENT_SPEEDUPS"


def wanted(value: Optional[str] = None) -> frozenset:
    """The speed-ups TESTBED_AGENT_SPEEDUPS asks for (the environment's value when not given)."""
    value = os.environ.get(ENV, "all") if value is None else value
    value = value.strip().lower()
    if value in ("", "all"):
        return frozenset(NAMES)
    if value == "none":
        return frozenset()
    return frozenset(name.strip() for name in value.split(",") if name.strip() in NAMES)


def _stdlib_dumps() -> Callable[[Any], bytes]:
    # json.dumps with separators builds a new encoder on every call; this one is made once
    encoder = json.JSONEncoder(separators=(",", ":"))
    return lambda obj: encoder.encode(obj).encode()


def json_encoder(use: frozenset) -> "tuple[Callable[[Any], bytes], str]":
    """(dumps: object → compact JSON bytes, name of the encoder used)."""
    stdlib = _stdlib_dumps()
    if "orjson" in use:
        try:
            import orjson
        except ImportError:
            pass
        else:
            fast, option = orjson.dumps, orjson.OPT_NON_STR_KEYS

            def dumps(obj: Any) -> bytes:
                try:
                    return fast(obj, option=option)
                except TypeError:  # what orjson does not encode (an integer past 64 bits): as json does
                    return stdlib(obj)

            return dumps, f"orjson {getattr(orjson, '__version__', '')}".strip()
    return stdlib, "json"


def event_loop(use: frozenset) -> "tuple[Callable[[], asyncio.AbstractEventLoop], str, float]":
    """(a factory of the event loop to run the agent on, its name, its timers' granularity in
    seconds: libuv counts time in whole milliseconds, so a uvloop timer may fire up to a
    millisecond before the time asked, which agents/clock.py makes up for)."""
    if "uvloop" in use:
        try:
            import uvloop
        except ImportError:
            pass
        else:
            return uvloop.new_event_loop, f"uvloop {getattr(uvloop, '__version__', '')}".strip(), 0.001
    return asyncio.new_event_loop, "asyncio", 0.0


def describe(use: Optional[frozenset] = None) -> Dict[str, str]:
    """{"loop": ..., "json": ...}: what an agent started now would use."""
    use = wanted() if use is None else use
    return {"loop": event_loop(use)[1], "json": json_encoder(use)[1]}
