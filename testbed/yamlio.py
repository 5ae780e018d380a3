"""YAML loading that remembers where every value came from.

PyYAML forgets line numbers once it builds Python objects and silently keeps the last of two
duplicate keys. Validation messages must name the line, and a duplicate key is almost always a
mistake, so documents are composed into nodes and converted here, keeping a map from each value's
path (a tuple of keys and list indexes) to its 1-based line.

Anchors and aliases (`defaults: &d {...}`, then `*d`) are expanded into copies, so a document is
bounded before it is converted: aliases that nest aliases can ask for exponentially many values
("billion laughs"), an alias inside its own anchor for infinitely many, and deep nesting would
exhaust Python's recursion. Each is refused with a ValidationError naming the line.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Set, Tuple

import yaml

from .errors import ValidationError

Path = Tuple[Any, ...]

#: The most values (mappings, lists, keys and scalars, an alias counting every value it repeats)
#: one document may hold once its aliases are expanded. The shipped topologies and scenarios hold
#: 33 to 123 values; the explicit form `testbed topo show` writes of a generated 4774-node tree
#: (near generators.MAX_NODES) holds 114,239 and takes several seconds to load. A million leaves
#: room for files well beyond that, and bounds what nested aliases can make the loader build
#: (about 1.5 s and 150 MB here for 900,000 values made by aliases).
MAX_VALUES = 1_000_000
#: The deepest nesting of mappings and lists, aliases expanded. The shipped files and explicit
#: forms nest at most 7 levels; composing and converting take a few Python frames per level.
MAX_DEPTH = 100
VALUES_ALLOWED = f"at most {MAX_VALUES:,} values after expanding aliases"
DEPTH_ALLOWED = f"at most {MAX_DEPTH} levels of nested mappings and lists, aliases expanded"


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


class _Alias:
    """An alias where it was written. PyYAML's composer puts the anchored node itself in its place,
    which loses the alias's line; the loader below wraps it in this instead."""

    __slots__ = ("node", "anchor", "start_mark")

    def __init__(self, node: yaml.Node, anchor: str, start_mark: yaml.Mark) -> None:
        self.node, self.anchor, self.start_mark = node, anchor, start_mark


class _Loader(yaml.SafeLoader):
    """SafeLoader whose composer keeps aliases' lines and refuses nesting beyond MAX_DEPTH before
    its recursion (a few Python frames per level) can run out of stack."""

    def __init__(self, text: str, file: str) -> None:
        super().__init__(text)
        self.file = file
        self.depth = 0

    def compose_node(self, parent: Optional[yaml.Node], index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            return _Alias(super().compose_node(parent, index), event.anchor, event.start_mark)
        if self.depth >= MAX_DEPTH:
            raise ValidationError(self.file, "", f"nested more than {MAX_DEPTH} levels deep", DEPTH_ALLOWED,
                                  line=self.peek_event().start_mark.line + 1)
        self.depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


def _line(node: Any) -> int:
    return node.start_mark.line + 1


def _check_size(root: Any, file: str) -> None:
    """Refuse an alias inside its own anchor, and a document that holds more than MAX_VALUES values
    or nests deeper than MAX_DEPTH once aliases are expanded, naming the line of the alias (or the
    value) that passes the bound.

    Walks the document once in order, without expanding: an anchored node is walked where it is
    defined (before any alias to it) and its size and depth are remembered for its aliases."""
    measured: Dict[int, Tuple[int, int]] = {}  # id of a walked node -> (values, levels), aliases expanded
    walking: Set[int] = set()  # ids of the nodes whose insides are being walked
    stack: List[List[Any]] = []  # [node, iterator over (label, child), total on entering, deepest below, label]
    total = 0

    def children(node: yaml.Node):
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                key_node = key.node if isinstance(key, _Alias) else key
                yield "<key>", key
                yield (key_node.value if isinstance(key_node, yaml.ScalarNode) else "<key>"), value
        elif isinstance(node, yaml.SequenceNode):
            yield from enumerate(node.value)

    def refuse(child: Any, label: Any, message: str, allowed: str) -> ValidationError:
        path = tuple(frame[4] for frame in stack[1:]) + ((label,) if stack else ())
        return ValidationError(file, dotted(path), message, allowed, _line(child))

    def enter(child: Any, label: Any) -> None:
        nonlocal total
        node = child.node if isinstance(child, _Alias) else child
        alias = f"alias *{child.anchor}" if isinstance(child, _Alias) else None
        if id(node) in walking:
            raise refuse(child, label, f"{alias} refers to a value that contains it (&{child.anchor} on line "
                         f"{_line(node)})", "an alias of a value defined before it, not around it; "
                         "aliases that refer to themselves are not allowed")
        if id(node) in measured or isinstance(node, yaml.ScalarNode):
            values, levels = measured.get(id(node), (1, 1))
            total += values
            if total > MAX_VALUES:
                raise refuse(child, label, f"{alias or 'this value'} takes the document beyond {MAX_VALUES:,} "
                             "values", VALUES_ALLOWED)
            if len(stack) + levels > MAX_DEPTH:
                raise refuse(child, label, f"{alias or 'this value'} nests the document more than {MAX_DEPTH} "
                             "levels deep", DEPTH_ALLOWED)
            if stack:
                stack[-1][3] = max(stack[-1][3], levels)
            return
        total += 1
        if total > MAX_VALUES:
            raise refuse(child, label, f"the document holds more than {MAX_VALUES:,} values", VALUES_ALLOWED)
        walking.add(id(node))
        stack.append([node, children(node), total - 1, 0, label])

    enter(root, None)
    while stack:
        frame = stack[-1]
        item = next(frame[1], None)
        if item is not None:
            enter(item[1], item[0])
            continue
        node, _, entered, deepest, _ = stack.pop()
        walking.discard(id(node))
        measured[id(node)] = (total - entered, deepest + 1)
        if stack:
            stack[-1][3] = max(stack[-1][3], deepest + 1)


def _convert(node: Any, path: Path, lines: Dict[Path, int], file: str, construct: yaml.SafeLoader) -> Any:
    if isinstance(node, _Alias):
        node = node.node
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        result: Dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = _convert(key_node, path + ("<key>",), {}, file, construct)
            key_node = key_node.node if isinstance(key_node, _Alias) else key_node
            if isinstance(key, (list, dict)):
                raise ValidationError(file, dotted(path) or "(top level)", "a key must be a plain value",
                                      line=key_node.start_mark.line + 1)
            if key in result:
                raise ValidationError(file, dotted(path + (key,)), "duplicate key",
                                      "each key once per mapping", line=key_node.start_mark.line + 1)
            result[key] = _convert(value_node, path + (key,), lines, file, construct)
            lines[path + (key,)] = key_node.start_mark.line + 1
        return result
    if isinstance(node, yaml.SequenceNode):
        return [_convert(item, path + (i,), lines, file, construct) for i, item in enumerate(node.value)]
    # one constructor per document: it remembers every node it constructed
    try:
        return construct.construct_object(node, deep=True)
    except (ValueError, KeyError, TypeError, OverflowError):  # e.g. !!int abc, 2001-02-30, !!bool maybe
        kind = node.tag.rsplit(":", 1)[-1]
        raise ValidationError(file, dotted(path), f"{node.value!r} is not a valid {kind}",
                              f"a valid {kind}, or the text in quotes", line=lines[path]) from None


def dotted(path: Path) -> str:
    """`('links', 3, 'loss')` as `links[3].loss`, the way messages name a field."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out



class _NotYAML(ValidationError):
    """A syntax error: the text is not YAML."""


def _load(text: str, file: str) -> Optional[Located]:
    """The located value of one YAML document, None if it holds none."""
    loader = _Loader(text, file)
    try:
        root = loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        problem = exc.problem or str(exc)
        raise _NotYAML(file, "", f"YAML syntax error: {problem}", line=line) from None
    except yaml.YAMLError as exc:
        raise _NotYAML(file, "", f"YAML syntax error: {exc}") from None
    finally:
        loader.dispose()
    if root is None:
        return None
    _check_size(root, file)
    lines: Dict[Path, int] = {}
    try:
        data = _convert(root, (), lines, file, yaml.SafeLoader(""))
    except yaml.constructor.ConstructorError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else None
        raise ValidationError(file, "", f"YAML value error: {exc.problem}", line=line) from None
    return Located(data, lines, file)


def load_text(text: str, file: str) -> Located:
    """Parse one YAML document; syntax errors become ValidationErrors with the line."""
    doc = _load(text, file)
    if doc is None:
        raise ValidationError(file, "", "the file is empty", "a YAML mapping", line=1)
    return doc


def load_value(text: str, file: str, text_if_not_yaml: bool = False) -> Any:
    """One YAML value given outside a file, such as the VALUE of `--set PATH=VALUE`, within the
    same bounds as a file. (yaml.safe_load has none: deep nesting ends in a RecursionError, and as
    it shares an alias's value instead of copying it, nested aliases or an alias inside its own
    anchor load at once and hang or fail later, when the value is written out as JSON.) Empty text
    is null; text that is not YAML is returned as it is if `text_if_not_yaml`, else refused like a
    file's syntax error."""
    try:
        doc = _load(text, file)
    except _NotYAML:
        if text_if_not_yaml:
            return text
        raise
    return None if doc is None else doc.data


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
