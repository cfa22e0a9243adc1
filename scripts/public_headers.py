#!/usr/bin/env python3
"""Lists the headers `cmake --install` ships: the public entry headers in include/specplan/ and
every project header they include, directly or through one another (the closure), one path per
line relative to the repository root. Nothing else is installed: implementation headers (fitting,
profile I/O, the composer, internal namespaces) stay in the source tree.

Usage: scripts/public_headers.py [REPO_ROOT] [--check]
  --check  also fails (exit 1) when a shipped header opens `namespace internal` or includes
           util/check.h (the CHECK macros are an implementation detail), naming the file and the
           public header that pulls it in.
"""
import os
import re
import sys

INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
ENTRY_DIR = "include/specplan"


def resolve(root, inc):
    """The repository path of a quoted include, or None for a header outside the project."""
    for candidate in (inc, os.path.join(ENTRY_DIR, os.path.basename(inc))
                      if inc.startswith("specplan/") else None):
        if candidate and os.path.isfile(os.path.join(root, candidate)):
            return candidate
    return None


def closure(root):
    entries = sorted(os.path.join(ENTRY_DIR, f) for f in os.listdir(os.path.join(root, ENTRY_DIR))
                     if f.endswith(".h"))
    seen, via, todo = set(), {}, list(entries)
    for e in entries:
        via[e] = e
    while todo:
        f = todo.pop()
        if f in seen:
            continue
        seen.add(f)
        with open(os.path.join(root, f), encoding="utf-8") as fh:
            text = fh.read()
        for inc in INCLUDE_RE.findall(text):
            path = resolve(root, inc)
            if path is not None and path not in seen:
                via.setdefault(path, via[f])
                todo.append(path)
    return sorted(seen), via


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    root = args[0] if args else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    headers, via = closure(root)
    if "--check" in sys.argv:
        bad = []
        for h in headers:
            with open(os.path.join(root, h), encoding="utf-8") as fh:
                text = fh.read()
            if re.search(r"^\s*namespace\s+internal\b", text, re.M):
                bad.append(f"{h}: opens namespace internal (shipped through {via[h]})")
            if h == "util/check.h":
                bad.append(f"{h}: the CHECK macros are shipped (through {via[h]})")
        if bad:
            print("\n".join(bad))
            return 1
    print("\n".join(headers))
    return 0


if __name__ == "__main__":
    sys.exit(main())
