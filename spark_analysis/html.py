"""Small HTML helpers the report and the protocol analyses' sections share."""

from __future__ import annotations

import html
from typing import List


def fmt(v) -> str:
    """A value as a table cell shows it: numbers to four significant digits, none as a dash."""
    if v is None:
        return "–"
    if isinstance(v, float):
        if v != v:
            return "–"
        return f"{v:.4g}" if abs(v) < 1e6 else f"{v:.3e}"
    return html.escape(str(v))


def table(headers: List[str], rows: List[list], cls: str = "") -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{fmt(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def escape(text) -> str:
    return html.escape(str(text))
