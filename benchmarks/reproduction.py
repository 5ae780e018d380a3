"""The tables of docs/REPRODUCTION.md, generated from the results files under benchmarks/results/:
our values with their seeds and 95% intervals beside the papers', and the expected shapes'
verdicts with the intervals they rest on. Nothing in those tables is typed by hand.

    python benchmarks/reproduction.py            # rewrite the generated blocks of docs/REPRODUCTION.md
    python benchmarks/reproduction.py --check    # exit 1, showing the difference, when they are stale

A block of the document is delimited by

    <!-- generated: NAME -->
    ...
    <!-- end generated -->

where NAME is a block's name: a function of the results that returns Markdown, registered by one
module per paper (PAPERS: repro_abc.py, repro_deeco.py, repro_causal.py; their cells and tables
are repro_common.py's). The results files are written by benchmarks/abc_paper.py,
deeco_thesis.py, causal_paper.py and dilation.py (`--rejudge` judges their stored runs again with
the current shapes), abc_model.py, abc_hops.py, deeco_flood.py and deeco_ages.py.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import os
import re
import sys
from typing import Callable, Dict, List, Optional, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from repro_common import ROOT  # noqa: E402

#: the modules whose BLOCKS make the document's generated blocks, one per paper
PAPERS = ("repro_abc", "repro_deeco", "repro_causal")


def blocks() -> Dict[str, Callable[[], str]]:
    """Every paper module's blocks by name; a name two modules claim is refused."""
    out: Dict[str, Callable[[], str]] = {}
    for name in PAPERS:
        for key, make in importlib.import_module(name).BLOCKS.items():
            if key in out:
                raise ValueError(f"generated block {key!r} is registered twice (benchmarks/{name}.py)")
            out[key] = make
    return out


DOC = os.path.join(ROOT, "docs", "REPRODUCTION.md")
BLOCK = re.compile(r"(<!-- generated: (?P<name>[\w/.-]+) -->\n)(?P<body>.*?)(<!-- end generated -->)", re.S)


def render(text: str) -> Tuple[str, List[str]]:
    """The document with every generated block rewritten; and the names of blocks it has that
    no paper module registers."""
    unknown = []
    known = blocks()

    def one(match: "re.Match[str]") -> str:
        name = match.group("name")
        if name not in known:
            unknown.append(name)
            return match.group(0)
        return f"{match.group(1)}{known[name]().rstrip()}\n{match.group(4)}"

    return BLOCK.sub(one, text), unknown


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only say whether the document is up to date")
    args = parser.parse_args(argv)
    with open(DOC) as fh:
        text = fh.read()
    new, unknown = render(text)
    if unknown:
        print(f"{DOC}: unknown generated blocks: {', '.join(unknown)}", file=sys.stderr)
        return 2
    if args.check:
        if new != text:
            sys.stdout.writelines(difflib.unified_diff(text.splitlines(True), new.splitlines(True), DOC, "generated"))
            return 1
        return 0
    if new != text:
        with open(DOC, "w") as fh:
            fh.write(new)
        print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
