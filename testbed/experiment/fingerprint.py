"""What makes a run the same run again, and, when it is not, why.

A run's fingerprint is made of parts, kept apart in the ledger so that a stale run can be told
in words:

- `scenario`: the scenario's data with the point's overrides (not its comments or layout);
- `topology`: the topology file's data (an inline topology is in the scenario);
- `files`: the content of every other file the run reads (the radio segments' mobility traces);
- `seed`, and `accept`: the impairments accepted without emulation (--accept-unemulated);
- `code`: the digest of the code that makes a run (testbed.provenance: the orchestrator, the
  agents, the capture and the image recipes, by syntax tree, so comments do not count);
- `images`: the id of every container image the run's nodes use other than the agent image, and
  of the agent image's base (the agent image itself is rebuilt from agents/ when that changes,
  which `code` covers); None when the Docker engine does not answer, and then not compared.

Image ids are this machine's: a run on a remote host is judged by the images here.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any, Dict, List, Optional, Tuple

from .. import provenance
from ..yamlio import load_file
from .model import Point

#: the parts compared, in the order the reasons name them
PARTS = ("scenario", "topology", "files", "seed", "accept", "code", "images")


def _hash(data: Any) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16]


def file_sha256(path: str) -> Optional[str]:
    """A file's whole sha256 (hex), None when it cannot be read."""
    try:
        with open(path, "rb") as fh:
            return hashlib.sha256(fh.read()).hexdigest()
    except OSError:
        return None


def _file_hash(path: str) -> Optional[str]:
    digest = file_sha256(path)
    return digest[:16] if digest else None


def point_inputs(point: Point) -> Dict[str, Any]:
    """The parts of a point's fingerprint that its files make: the same for every seed."""
    from ..scenario import apply_overrides, load_scenario

    doc = load_file(point.scenario.file)
    apply_overrides(doc, point.overrides)
    data = dict(doc.data) if isinstance(doc.data, dict) else doc.data
    if isinstance(data, dict):
        data.pop("seed", None)  # every run is given its seed
    topo = data.get("topology") if isinstance(data, dict) else None
    topo_data: Any = None
    if isinstance(topo, str):
        here = os.path.dirname(os.path.abspath(point.scenario.file))
        full = topo if os.path.isabs(topo) else os.path.join(here, topo)
        topo_data = load_file(full).data
    files: Dict[str, Optional[str]] = {}
    images: List[str] = []
    try:
        scenario = load_scenario(point.scenario.file, overrides=point.overrides)
    except Exception:  # a point that no longer loads is refused when the experiment is read
        scenario = None
    if scenario is not None:
        for what, path in scenario.files():
            if what not in ("scenario", "topology"):
                files[f"{what}: {os.path.basename(path)}"] = _file_hash(path)
        from ..runtimes import node_images

        images = node_images(scenario.topology.nodes.values())
    return {"scenario": _hash(data), "topology": _hash(topo_data), "files": files, "image_names": images}


def image_ids(names: List[str]) -> Optional[Dict[str, Optional[str]]]:
    """{image: its id here} for the images the runs use (the agent image by its base's id); None
    when the Docker engine does not answer."""
    if not names:
        return {}
    from .. import dockerd
    from ..images import AGENT_IMAGE, BASE_IMAGE

    try:
        client = dockerd.client(timeout=10)
    except Exception:
        return None
    out: Dict[str, Optional[str]] = {}
    for name in sorted(set(names)):
        key = BASE_IMAGE if name == AGENT_IMAGE else name
        try:
            out[key] = dockerd.image_id(client, key)
        except Exception:
            return None
    return out


def parts(inputs: Dict[str, Any], seed: int, accept: Tuple[str, ...], code: str,
          images: Optional[Dict[str, Optional[str]]]) -> Dict[str, Any]:
    mine = None
    if images is not None:
        from ..images import AGENT_IMAGE, BASE_IMAGE

        wanted = {BASE_IMAGE if n == AGENT_IMAGE else n for n in inputs["image_names"]}
        mine = {k: v for k, v in images.items() if k in wanted}
    return {"scenario": inputs["scenario"], "topology": inputs["topology"], "files": dict(inputs["files"]),
            "seed": seed, "accept": sorted(accept), "code": code, "images": mine}


def digest(p: Dict[str, Any]) -> str:
    """One string for the parts (the ledger's `fingerprint`); images left out, as they are
    compared only when known."""
    return _hash({k: v for k, v in p.items() if k != "images"})


def only_the_code_differs(old: Optional[Dict[str, Any]], new: Dict[str, Any]) -> bool:
    """Whether a run made with the parts `old` differs from `new` in its code alone (images
    compared only where both are known)."""
    if not old or old.get("code") == new["code"]:
        return False
    same = all(old.get(k) == new[k] for k in ("scenario", "topology", "files", "seed"))
    same = same and old.get("accept", []) == new["accept"]
    if old.get("images") is not None and new["images"] is not None:
        same = same and old["images"] == new["images"]
    return same


def stale_reasons(old: Optional[Dict[str, Any]], new: Dict[str, Any],
                  code_files: Dict[str, Dict[str, str]]) -> List[str]:
    """Why a run made with the parts `old` is not the run `new` would make; [] when it is.
    `code_files` maps code digests to their files' hashes (the ledger keeps them), to name the
    files that changed."""
    if not old:
        return ["made before the ledger recorded what a run depends on (its code, files and images)"]
    out = []
    for name in ("scenario", "topology"):
        if old.get(name) != new[name]:
            out.append(f"the {name} changed")
    before, after = old.get("files") or {}, new["files"]
    for what in sorted(set(before) | set(after)):
        if before.get(what) != after.get(what):
            out.append(f"{what} " + ("changed" if what in before and what in after else
                                     "is new" if what in after else "is no longer read"))
    if old.get("accept", []) != new["accept"]:
        out.append(f"accepted unemulated impairments: {', '.join(old.get('accept') or []) or 'none'} before, "
                   f"{', '.join(new['accept']) or 'none'} now")
    if old.get("code") != new["code"]:
        changed = provenance.changed_files(code_files.get(old.get("code") or ""), code_files.get(new["code"], {}))
        shown = ", ".join(changed[:4]) + (f" and {len(changed) - 4} more" if len(changed) > 4 else "")
        out.append(f"the code changed ({shown})" if changed else "the code changed")
    if old.get("images") is not None and new["images"] is not None:
        for name in sorted(set(old["images"]) | set(new["images"])):
            a, b = old["images"].get(name), new["images"].get(name)
            if a != b:
                out.append(f"image {name} is another ({(a or 'absent')[:19]} before, {(b or 'absent')[:19]} now)")
    return out
