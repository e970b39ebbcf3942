#!/usr/bin/env python3
"""Doxygen input filter for the kp package's .py and .pyi files (docs.sh
sets it as FILTER_PATTERNS): gives Doxygen the API as Python documents it.

    docs-python-filter.py FILE

Python documents a module or class attribute with a string right after it
(PEP 257's attribute docstrings, which nanobind's stub generator writes for
enum values, and the package uses for its constants). Doxygen reads
docstrings of functions and classes only, takes the annotation of
`name: T = value` for a second variable named T, and takes names it meets
in function bodies for members. So:

- for every assignment at module or class level, a docstring after it
  becomes a `##` comment before it, and an annotation is dropped
  (`name: T = value` becomes `name = value`, `name: T` becomes
  `name = ...`);
- `Class.name = function` (a method added to a class, as kp.llm adds
  Model.stream) without a docstring of its own gets the function's, as
  "Class.name(parameters): docstring", on one line that takes the place of
  a blank line before the assignment;
- function bodies are left out (the signature and docstring stay).

The file keeps its number of lines (but for an added method with no blank
line before it), so that Doxygen's messages point at the right line of the
source.
"""

import ast
import inspect
import re
import sys

# Characters Doxygen would read as markup in a comment: escaped, so that the
# text shows as the docstring says it.
MARKUP = re.compile(r"([\\@<>&#%$])")


def is_docstring(node):
    return (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str))


def attribute_docs(body):
    """(assignment, its docstring text or None) for the assignments of a
    body, and the same for the bodies of its classes."""
    for index, node in enumerate(body):
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            following = body[index + 1] if index + 1 < len(body) else None
            yield node, following if is_docstring(following) else None
        elif isinstance(node, ast.ClassDef):
            yield from attribute_docs(node.body)


def functions(body):
    """The functions of a body and of its classes (not nested ones)."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node
        elif isinstance(node, ast.ClassDef):
            yield from functions(node.body)


def added_method_doc(node, module_functions):
    """"Class.name(parameters): docstring" for `Class.name = function`."""
    if not (isinstance(node, ast.Assign) and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Attribute)
            and isinstance(node.targets[0].value, ast.Name)
            and isinstance(node.value, ast.Name)):
        return None
    function = module_functions.get(node.value.id)
    doc = ast.get_docstring(function) if function else None
    if not doc:
        return None
    parameters = ast.unparse(function.args).split(", ", 1)  # without self
    signature = parameters[1] if len(parameters) > 1 else ""
    target = node.targets[0]
    return f"{target.value.id}.{target.attr}({signature}): {doc}"


def assignment_lines(node, lines):
    """The assignment's source lines, without an annotation (no more lines
    than it had)."""
    original = lines[node.lineno - 1:node.end_lineno]
    if not isinstance(node, ast.AnnAssign) or not isinstance(node.target, ast.Name):
        return original
    indent = " " * node.col_offset
    if node.value is None:
        return [f"{indent}{node.target.id} = ..."]
    # The value as written, from its first line to its last.
    value = lines[node.value.lineno - 1:node.value.end_lineno]
    value[-1] = value[-1][:node.value.end_col_offset]
    value[0] = value[0][node.value.col_offset:]
    return [f"{indent}{node.target.id} = {value[0]}"] + value[1:]


def comment_lines(text, indent):
    text = inspect.cleandoc(text)
    escaped = [MARKUP.sub(r"\\\1", line) for line in text.splitlines()] or [""]
    return [f"{indent}## {escaped[0]}"] + [f"{indent}# {line}" for line in escaped[1:]]


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: docs-python-filter.py FILE")
    with open(sys.argv[1], encoding="utf-8") as source:
        text = source.read()
    lines = text.splitlines()
    try:
        tree = ast.parse(text)
    except SyntaxError:
        sys.stdout.write(text)  # Doxygen reports what it cannot read
        return
    # Replacements by first line: (last line, new lines).
    edits = {}
    module_functions = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
    for node, doc in attribute_docs(tree.body):
        new = assignment_lines(node, lines)
        last = node.end_lineno
        first = node.lineno
        if doc is not None:
            new = comment_lines(doc.value.value, " " * node.col_offset) + new
            last = doc.end_lineno
        else:
            text = added_method_doc(node, module_functions)
            if text is not None:
                words = (line.lstrip("#").strip() for line in comment_lines(text, ""))
                new = ["## " + " ".join(words)] + new
                if first > 1 and not lines[first - 2].strip() and first - 1 not in edits:
                    first -= 1  # the comment takes the blank line's place
        # Blank lines in place of what went, so the line count stays.
        new += [""] * (last - first + 1 - len(new))
        edits[first] = (last, new)
    for function in functions(tree.body):
        body = function.body[1:] if is_docstring(function.body[0]) else function.body
        if body:
            first, last = body[0].lineno, function.end_lineno
            indent = " " * body[0].col_offset
            edits[first] = (last, [f"{indent}..."] + [""] * (last - first))
    out = []
    number = 1
    while number <= len(lines):
        if number in edits:
            last, new = edits[number]
            out.extend(new)
            number = last + 1
        else:
            out.append(lines[number - 1])
            number += 1
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
