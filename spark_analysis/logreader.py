"""The agents' JSON-lines logs as an Arrow table, read in the task that owns the file.

One schema for every event (spark_analysis.inputs.event_schema is the same for Spark's own JSON
reader): the columns are the fields the event-log contract declares (agents/events.py: the common
fields, each kind of event's and each role's), integers as 64-bit integers, booleans as booleans
and everything else as text (a list or object as its JSON text). Fields an event does not have are
null; a field nobody declared is not read, and its name is reported (`read_log`'s third value).

The fast path is Arrow's C++ JSON reader, letting it infer each field's type (it then builds only
the columns a file has, much faster than filling every column of the schema). It wants one type
per field, and `to` is a name on one line and a list on another, so every list or object value is
first turned into a JSON string in the bytes themselves (a regular expression finds them). Arrow
refuses a whole file for a single line it cannot take (a line cut short by a node that died, a
number where another line has a name, a line that is not an object), and a file whose inferred
types Spark would read differently (a fraction, a date-like name) is refused here; such a file is
read line by line instead, with the rules of Spark's PERMISSIVE mode: a line that is not a JSON
object keeps only its text, in `_corrupt_record`; a line with a field of the wrong type keeps the
fields that fit and its text; both count as unreadable lines in the report.
"""

from __future__ import annotations

import io
import json
import re
from typing import List, Tuple

from agents.events import columns

CORRUPT = "_corrupt_record"
#: (field, "long" | "string" | "bool") of every column, the corrupt record's last
FIELDS: List[Tuple[str, str]] = columns() + [(CORRUPT, "string")]
DECLARED = frozenset(name for name, _ in FIELDS[:-1])
#: the kinds of event every run's results read in full, whichever engine reads the logs: the
#: roles' errors and the agents' fidelity windows (besides the protocol analyses' state events)
NOTABLE_KINDS = ("error", "fidelity")

# a list or object value, up to two levels of nesting, its strings skipped whole (a ] or } inside
# a name does not end it), never past the end of its line: it becomes a JSON string holding the same text
_STRING = rb'"(?:[^"\\\n]|\\.)*"'
_FLAT_LIST = rb'\[(?:[^\[\]{}"\n]|' + _STRING + rb')*\]'
_FLAT_OBJECT = rb'\{(?:[^\[\]{}"\n]|' + _STRING + rb')*\}'
_INNER = rb'(?:[^\[\]{}"\n]|' + _STRING + rb'|' + _FLAT_LIST + rb'|' + _FLAT_OBJECT + rb')*'
_VALUE = re.compile(rb'\[' + _INNER + rb'\]|\{' + _INNER + rb'\}')
_MAX_INT64 = (1 << 63) - 1


def arrow_schema():
    import pyarrow as pa

    types = {"long": pa.int64(), "string": pa.string(), "bool": pa.bool_()}
    return pa.schema([(name, types[t]) for name, t in FIELDS])


def stringify_nested(data: bytes) -> bytes:
    """The bytes with every list or object value written as a JSON string of the same text."""
    out, pos = [], 0
    view = memoryview(data)  # the unchanged stretches are copied once, by the join
    for at in _openings(data):
        if at < pos or data[at - 3:at - 2] == b"\\":  # inside a value, or an escaped quote
            continue
        value = _VALUE.match(data, at)
        if value is None:  # nested deeper than the pattern follows: Arrow will refuse the line
            continue
        out += [view[pos:at], b'"', value.group().replace(b"\\", b"\\\\").replace(b'"', b'\\"'), b'"']
        pos = value.end()
    if not out:
        return data
    out.append(view[pos:])
    return b"".join(out)


def _openings(data: bytes) -> List[int]:
    """Where a value opens with [ or { right after a name ('":[' or '":{'), in order: found with
    bytes.find, faster than a regular expression, which stops at every '":'."""
    found = []
    for needle in (b'":[', b'":{'):
        at = data.find(needle)
        while at >= 0:
            found.append(at + 2)
            at = data.find(needle, at + 3)
    return sorted(found)


def read_log(data: bytes):
    """(table, unreadable lines, undeclared fields) of one JSON-lines file's bytes; the fields
    no event-log declaration names are left out of the table, and listed (sorted)."""
    import pyarrow as pa
    import pyarrow.json as pj

    schema = arrow_schema()
    if not data or data.isspace():
        return schema.empty_table(), 0, []
    text = stringify_nested(data)
    try:
        # the reader infers each field's type: building only the columns a file has is faster
        # than filling all of the schema's; a type Spark would not take the same way sends the
        # file down the line-by-line path
        read = pj.read_json(io.BytesIO(text), read_options=pj.ReadOptions(use_threads=False, block_size=64 << 20),
                            parse_options=pj.ParseOptions(unexpected_field_behavior="infer"))
        columns = [_column(read, name, schema.field(name).type) for name in schema.names[:-1]]
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, _Refused):
        return read_lines(data)
    columns.append(pa.nulls(read.num_rows, pa.string()))
    return pa.Table.from_arrays(columns, schema=schema), 0, sorted(set(read.column_names) - DECLARED)


class _Refused(Exception):
    pass


def _column(table, name: str, want):
    """The table's column `name` as type `want`: absent or all null -> nulls; integers and
    booleans as text where a name belongs (as Spark keeps them); any other mismatch refused."""
    import pyarrow as pa

    if name not in table.column_names:
        return pa.nulls(table.num_rows, want)
    col = table.column(name)
    if col.type == want:
        return col
    if pa.types.is_null(col.type) or (pa.types.is_string(want) and (pa.types.is_int64(col.type)
                                                                    or pa.types.is_boolean(col.type))):
        return col.cast(want)
    raise _Refused(name)


def read_lines(data: bytes):
    """(table, unreadable lines, undeclared fields), line by line in Python: the path for a file
    Arrow refused."""
    import pyarrow as pa

    schema = arrow_schema()
    columns = {name: [] for name, _ in FIELDS}
    bad = 0
    undeclared = set()
    for raw in data.split(b"\n"):
        line = raw.strip()
        if not line:
            continue
        row, ok = _parse_line(line, undeclared)
        if not ok:
            bad += 1
            row[CORRUPT] = raw.rstrip(b"\r").decode("utf-8", "replace")
        for name in columns:
            columns[name].append(row.get(name))
    return pa.table({name: pa.array(values, schema.field(name).type) for name, values in columns.items()},
                    schema=schema), bad, sorted(undeclared)


def _parse_line(line: bytes, undeclared: set):
    try:
        obj = json.loads(line)
    except (ValueError, UnicodeDecodeError):
        return {}, False
    if not isinstance(obj, dict):
        return {}, False
    undeclared.update(k for k in obj if k not in DECLARED)
    row, ok = {}, True
    for name, kind in FIELDS[:-1]:
        if name not in obj or obj[name] is None:
            continue
        value = obj[name]
        if kind == "long":
            if isinstance(value, int) and not isinstance(value, bool) and -_MAX_INT64 - 1 <= value <= _MAX_INT64:
                row[name] = value
            else:
                ok = False
        elif kind == "bool":
            if isinstance(value, bool):
                row[name] = value
            else:
                ok = False
        else:
            row[name] = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    return row, ok
