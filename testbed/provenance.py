"""Which code made a run, and which code analysed it: a digest of the product's sources.

`testbed experiment` reuses a run only when the code that would make it again is the code that
made it, so the digest must change with any change to what a run does and with nothing else:

- the *run code* is everything a run executes: the orchestrator (testbed/, but for the
  experiment layer, which only decides which runs to make and judges them), the agents (agents/,
  also baked into the agent image), the capture (collect/) and the image recipes (images/);
- the *analysis code* is spark_analysis/: a change there asks for the runs to be analysed again,
  not made again.

A Python file counts by its syntax tree without docstrings, so an edit of comments, docstrings or
layout changes no digest; other files count byte for byte. Each digest comes with its files'
own hashes, so that a ledger can say which files changed between two digests.
"""

from __future__ import annotations

import ast
import hashlib
import os
from typing import Dict, Iterable, List, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: (directory relative to the checkout, paths under it left out)
RUN_CODE: Tuple[Tuple[str, Tuple[str, ...]], ...] = (
    ("testbed", ("testbed/experiment", "testbed/cli/experiment.py")),
    ("agents", ()), ("collect", ()), ("images", ()))
ANALYSIS_CODE: Tuple[Tuple[str, Tuple[str, ...]], ...] = (("spark_analysis", ()),)

_SKIP_DIRS = {"__pycache__", ".pytest_cache", ".hypothesis"}
_SKIP_SUFFIXES = (".pyc", ".pyo", ".so", ".o", ".swp", "~")

_cache: Dict[Tuple, Tuple[str, Dict[str, str]]] = {}


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return tree


def file_hash(path: str) -> str:
    """A file's hash: its syntax tree without docstrings for Python that parses, else its bytes."""
    with open(path, "rb") as fh:
        data = fh.read()
    if path.endswith(".py"):
        try:
            tree = _strip_docstrings(ast.parse(data, filename=path))
            data = b"ast:" + ast.dump(tree, include_attributes=False).encode()
        except (SyntaxError, ValueError):
            pass  # a file that does not parse counts byte for byte
    return hashlib.sha256(data).hexdigest()[:16]


def _files(root: str, parts: Iterable[Tuple[str, Tuple[str, ...]]]) -> List[str]:
    out = []
    for top, leave_out in parts:
        base = os.path.join(root, top)
        for dirpath, dirnames, filenames in os.walk(base):
            rel_dir = os.path.relpath(dirpath, root).replace(os.sep, "/")
            dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.startswith(".")
                                 and f"{rel_dir}/{d}" not in leave_out)
            for name in sorted(filenames):
                rel = f"{rel_dir}/{name}"
                if name.startswith(".") or name.endswith(_SKIP_SUFFIXES) or rel in leave_out:
                    continue
                out.append(rel)
    return out


def digest(parts: Iterable[Tuple[str, Tuple[str, ...]]] = RUN_CODE, root: str = ROOT,
           cached: bool = True) -> Tuple[str, Dict[str, str]]:
    """(the digest, {file relative to the checkout: its hash}) of the code under `parts`."""
    parts = tuple(parts)
    key = (parts, root)
    if cached and key in _cache:
        return _cache[key]
    files = {rel: file_hash(os.path.join(root, rel)) for rel in _files(root, parts)}
    whole = hashlib.sha256("".join(f"{rel}\0{h}\n" for rel, h in sorted(files.items())).encode()).hexdigest()[:16]
    _cache[key] = (whole, files)
    return whole, files


def run_code() -> str:
    return digest(RUN_CODE)[0]


def analysis_code() -> str:
    return digest(ANALYSIS_CODE)[0]


def changed_files(before: Optional[Dict[str, str]], after: Dict[str, str]) -> List[str]:
    """The files added, removed or changed from one digest's file table to another's."""
    if before is None:
        return []
    return sorted(f for f in set(before) | set(after) if before.get(f) != after.get(f))
