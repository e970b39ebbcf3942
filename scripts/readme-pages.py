#!/usr/bin/env python3
"""Turns the READMEs into pages of the documentation site, so that the user
guide and the READMEs are one text (scripts/docs.sh runs this).

    readme-pages.py OUT_DIR

README.md becomes one page per "## " section (page id readme_<slug>: the
GitHub anchor of the heading with '-' as '_'), python/README.md one page
(python_readme), docs/performance.md one page (performance). Headings get
Doxygen labels, and the READMEs' links to their own headings, to each other
and to the guide's pages (docs/guide/*.md) become @ref links; a link to any
other file of the repository becomes its path.

Every link is checked on the way: a link to a file that does not exist, or
to a heading that its file does not have, fails the build with the source
line (web addresses are not checked).
"""

import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent

# Broken links found while the pages are made: "file:line: message".
BROKEN = []

# source file -> (label prefix, split into one page per "## " section)
SOURCES = {
    "README.md": ("readme", True),
    "python/README.md": ("python_readme", False),
    "docs/performance.md": ("performance", False),
}


def github_anchor(title):
    """The anchor GitHub gives a heading: lower case, punctuation dropped,
    spaces as '-'."""
    text = re.sub(r"[`*]", "", title.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def label(prefix, anchor):
    return f"{prefix}_{anchor.replace('-', '_')}" if anchor else prefix


def fenced_blocks_marked(lines):
    """(line, inside a ``` block) for each line."""
    inside = False
    for line in lines:
        if line.lstrip().startswith("```"):
            yield line, True
            inside = not inside
        else:
            yield line, inside


def headings_of(source):
    """The GitHub anchors of a Markdown file's headings."""
    lines = (ROOT / source).read_text(encoding="utf-8").splitlines()
    return {github_anchor(heading.group(2))
            for line, in_code in fenced_blocks_marked(lines) if not in_code
            for heading in [re.match(r"^(#{1,6}) (.*)$", line)] if heading}


def guide_label(relative):
    """The page label of a guide page: the {#label} of its first heading."""
    first = (ROOT / relative).read_text(encoding="utf-8").splitlines()[0]
    found = re.search(r"\{#(\w+)\}", first)
    return found.group(1) if found else None


def rewrite_links(line, source, prefix, where):
    def replace(match):
        text, target = match.group(1), match.group(2)
        if re.match(r"[a-z]+://", target):
            return match.group(0)
        path, _, anchor = target.partition("#")
        resolved = (ROOT / pathlib.Path(source).parent / path).resolve() if path else ROOT / source
        relative = resolved.relative_to(ROOT).as_posix()
        if not resolved.exists():
            BROKEN.append(f"{where}: link to {target}: there is no {relative}")
            return match.group(0)
        if anchor and relative.endswith(".md") and anchor not in headings_of(relative):
            BROKEN.append(f"{where}: link to {target}: {relative} has no heading #{anchor}")
            return match.group(0)
        if relative in SOURCES:
            target_prefix = SOURCES[relative][0]
            return f'@ref {label(target_prefix, anchor)} "{text}"'
        if relative.startswith("docs/guide/") and relative.endswith(".md") and not anchor:
            page = guide_label(relative)
            if page:
                return f'@ref {page} "{text}"'
        return f"{text} (`{relative}` in the repository)"

    return re.sub(r"(?<!!)\[([^\]]+)\]\(([^)\s]+)\)", replace, line)


def pages_of(source, prefix, split):
    """{file name: text} of the pages made from one source file."""
    lines = (ROOT / source).read_text(encoding="utf-8").splitlines()
    pages = {}
    current = None
    for number, (line, in_code) in enumerate(fenced_blocks_marked(lines), 1):
        heading = None if in_code else re.match(r"^(#{1,6}) (.*)$", line)
        if heading:
            level, title = len(heading.group(1)), heading.group(2)
            anchor = github_anchor(title)
            if split and level == 2:
                current = f"{label(prefix, anchor)}.md"
                pages[current] = [f"# {title} {{#{label(prefix, anchor)}}}"]
                continue
            if not split and level == 1:
                current = f"{prefix}.md"
                pages[current] = [f"# {title} {{#{prefix}}}"]
                continue
            if current is None:
                continue
            depth = level - 1 if split else level
            line = f"{'#' * depth} {title} {{#{label(prefix, anchor)}}}"
        elif current is None:
            if not in_code:  # the part before the first page's heading: only checked
                rewrite_links(line, source, prefix, f"{source}:{number}")
            continue
        elif not in_code:
            line = rewrite_links(line, source, prefix, f"{source}:{number}")
        pages[current].append(line)
    return {name: "\n".join(body) + "\n" for name, body in pages.items()}


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: readme-pages.py OUT_DIR")
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for source, (prefix, split) in SOURCES.items():
        for name, text in pages_of(source, prefix, split).items():
            (out / name).write_text(text, encoding="utf-8")
    if BROKEN:
        sys.exit("readme-pages.py: broken links:\n" + "\n".join(BROKEN))


if __name__ == "__main__":
    main()
