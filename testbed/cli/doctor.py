"""`testbed doctor`: what this machine can emulate, and whether the testbed can run."""

from __future__ import annotations

import json


def register(sub) -> None:
    p = sub.add_parser("doctor", help="say what this machine can emulate")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(run=run)


def run(args) -> int:
    from ..capabilities import detect
    from ..images import BASE_IMAGE, base_source

    caps = detect()
    report = caps.to_dict()
    if caps.has("docker"):
        try:
            from ..dockerd import client

            report["base_image"] = {"image": BASE_IMAGE, "source": base_source(client())}
        except Exception:
            report["base_image"] = {"image": BASE_IMAGE, "source": None}
    if args.json:
        print(json.dumps(report, indent=2))
        return 0 if caps.ready else 1
    print("Machine")
    for check in caps.checks.values():
        mark = "ok " if check.ok else ("!! " if check.required else "-- ")
        print(f"  {mark} {check.name:<14} {check.detail}")
    base = report.get("base_image")
    if base:
        print(f"  {'ok ' if base['source'] else '-- '} {'base image':<14} "
              f"{base['image']}: {base['source'] or 'not built yet (testbed images build)'}")
    print("Link properties (backend)")
    for impairment, backend in caps.backends.items():
        shown = backend or f"not emulated here: needs {caps.missing_feature(impairment)}"
        print(f"  {impairment:<12} {shown}")
    if caps.ready:
        print("Ready: the testbed can run on this machine.")
        return 0
    print("Not ready:")
    for problem in caps.problems:
        print(f"  {problem}")
    return 1
