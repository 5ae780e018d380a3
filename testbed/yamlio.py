"""YAML loading that remembers where every value came from.

PyYAML forgets line numbers once it builds Python objects and silently keeps the last of two
duplicate keys. Validation messages must name the line, and a duplicate key is almost always a
mistake, so documents are composed into nodes and converted here, keeping a map from each value's
path (a tuple of keys and list indexes) to its 1-based line.
"""

from __future__ import annotations

from typing import Any, Dict, Tuple

import yaml

from .errors import ValidationError

Path = Tuple[Any, ...]


class Located:
    """Plain data plus the line of every path inside it."""

    def __init__(self, data: Any, lines: Dict[Path, int], file: str) -> None:
        self.data = data
        self.lines = lines
        self.file = file

    def line(self, path: Path) -> int | None:
        """The line of `path`, or of its nearest ancestor that has one."""
        path = tuple(path)
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return self.lines.get(())


def _convert(node: yaml.Node, path: Path, lines: Dict[Path, int], file: str) -> Any:
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        result: Dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = _convert(key_node, path + ("<key>",), {}, file)
            if isinstance(key, (list, dict)):
                raise ValidationError(file, dotted(path) or "(top level)", "a key must be a plain value",
                                      line=key_node.start_mark.line + 1)
            if key in result:
                raise ValidationError(file, dotted(path + (key,)), "duplicate key",
                                      "each key once per mapping", line=key_node.start_mark.line + 1)
            result[key] = _convert(value_node, path + (key,), lines, file)
            lines[path + (key,)] = key_node.start_mark.line + 1
        return result
    if isinstance(node, yaml.SequenceNode):
        return [_convert(item, path + (i,), lines, file) for i, item in enumerate(node.value)]
    return _scalar(node)


_scalar_loader = yaml.SafeLoader("")


def _scalar(node: yaml.Node) -> Any:
    return _scalar_loader.construct_object(node, deep=True)


def dotted(path: Path) -> str:
    """`('links', 3, 'loss')` as `links[3].loss`, the way messages name a field."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out



def load_text(text: str, file: str) -> Located:
    """Parse one YAML document; syntax errors become ValidationErrors with the line."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        problem = exc.problem or str(exc)
        raise ValidationError(file, "", f"YAML syntax error: {problem}", line=line) from None
    except yaml.YAMLError as exc:
        raise ValidationError(file, "", f"YAML syntax error: {exc}") from None
    if root is None:
        raise ValidationError(file, "", "the file is empty", "a YAML mapping", line=1)
    lines: Dict[Path, int] = {}
    try:
        data = _convert(root, (), lines, file)
    except yaml.constructor.ConstructorError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else None
        raise ValidationError(file, "", f"YAML value error: {exc.problem}", line=line) from None
    return Located(data, lines, file)


def load_file(path: str) -> Located:
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        raise ValidationError(path, "", "no such file") from None
    except IsADirectoryError:
        raise ValidationError(path, "", "is a directory, not a YAML file") from None
    except UnicodeDecodeError as exc:
        raise ValidationError(path, "", f"not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise ValidationError(path, "", f"cannot read: {exc.strerror}") from None
    return load_text(text, path)
