#!/usr/bin/python3
"""Checks the documentation's links: every relative link and image in README.md and docs/**/*.md
must name a file or folder of the repository, and every #anchor a heading of the Markdown page it
points into (as GitHub or mkdocs spell it). Links to other sites are not fetched. Also checks that
README.md's layout table is docs/index.md's, between the layout:begin and layout:end markers.

Usage: check_links.py [-h] [REPO_ROOT]   (default: the repository holding this script)
Prints FILE:LINE: the link and what is wrong, for every problem; exits 1 if there is any.
"""
import argparse
import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mdlinks  # noqa: E402


def markdown_files(root):
    files = [os.path.join(root, "README.md")]
    for folder, _, names in os.walk(os.path.join(root, "docs")):
        files += [os.path.join(folder, n) for n in names if n.endswith(".md")]
    return sorted(f for f in files if os.path.isfile(f))


def check_file(root, path, anchor_cache):
    problems = []
    text = open(path, encoding="utf-8").read()
    rel = os.path.relpath(path, root)
    for number, _, _, target in mdlinks.links(text):
        if mdlinks.is_external(target):
            continue
        where = f"{rel}:{number}: link '{target}'"
        path_part, _, fragment = target.partition("#")
        path_part = path_part.split("?", 1)[0]
        if path_part:
            if path_part.startswith("/"):
                problems.append(f"{where}: absolute path; use a path relative to {rel}")
                continue
            resolved = os.path.normpath(os.path.join(os.path.dirname(path), path_part))
            if os.path.relpath(resolved, root).startswith(".."):
                problems.append(f"{where}: points outside the repository ({resolved})")
                continue
            if not os.path.exists(resolved):
                problems.append(f"{where}: no such file {os.path.relpath(resolved, root)}")
                continue
        else:
            resolved = path
        if fragment and resolved.endswith(".md") and os.path.isfile(resolved):
            if resolved not in anchor_cache:
                anchor_cache[resolved] = mdlinks.anchors(open(resolved, encoding="utf-8").read())
            if fragment not in anchor_cache[resolved]:
                problems.append(f"{where}: no heading with anchor #{fragment} in "
                                f"{os.path.relpath(resolved, root)}")
    return problems


def layout_block(path):
    text = open(path, encoding="utf-8").read()
    m = re.search(r"<!-- layout:begin[^>]*-->\n(.*?)<!-- layout:end -->", text, re.S)
    return m.group(1) if m else None


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Prints FILE:LINE: the link and what is wrong, for every problem; exits 1 if there "
               "is any.")
    parser.add_argument("repo_root", nargs="?", metavar="REPO_ROOT",
                        default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."),
                        help="the repository to check (default: the one holding this script)")
    root = os.path.abspath(parser.parse_args().repo_root)
    for needed in ("README.md", os.path.join("docs", "index.md")):
        if not os.path.isfile(os.path.join(root, needed)):
            parser.error(f"REPO_ROOT {root}: no {needed} (not a specplan repository)")
    problems, cache, files = [], {}, markdown_files(root)
    for path in files:
        problems += check_file(root, path, cache)
    readme, index = os.path.join(root, "README.md"), os.path.join(root, "docs", "index.md")
    a, b = layout_block(readme), layout_block(index)
    if a is None or b is None:
        problems.append("README.md / docs/index.md: the <!-- layout:begin --> ... <!-- layout:end --> "
                        "markers are missing")
    elif a != b:
        problems.append("README.md / docs/index.md: the layout tables differ; they must be identical")
    for p in problems:
        print(f"check_links: {p}", file=sys.stderr)
    print(f"check_links: {len(files)} files, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
