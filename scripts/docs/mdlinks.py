"""Finds the links of a Markdown file the way both GitHub and mkdocs read them.

Shared by check_links.py (every relative link must resolve) and mkdocs_hooks.py (links that leave
docs/ are rewritten for the site). Fenced code blocks are skipped and code spans masked, so a
bracket or a path inside code is never taken for a link.
"""
import re
import unicodedata

_FENCE = re.compile(r"^\s*(```|~~~)")
# A code span may run over line ends within a paragraph, never over a blank line.
_CODE_SPAN = re.compile(r"(`+)((?:(?!\n[ \t]*\n).)+?)\1", re.S)
# [text](target "title") and ![alt](target); the text may hold one level of nested brackets.
_INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REFDEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$")
_HTML = re.compile(r"<(?:a|img)\b[^>]*?\b(?:href|src)=\"([^\"]+)\"", re.IGNORECASE)
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def _masked_lines(text):
    """The lines of text with fenced blocks blanked and code spans masked, lengths kept."""
    kept = [("" if in_code else line) for _, line, in_code in iter_lines(text)]
    masked = _CODE_SPAN.sub(lambda m: re.sub(r"[^\n]", "\x00", m.group(0)), "\n".join(kept))
    return masked.split("\n")


def iter_lines(text):
    """Yields (line number, line, inside a fenced code block)."""
    fence = None
    for number, line in enumerate(text.split("\n"), 1):
        m = _FENCE.match(line)
        if m:
            if fence is None:
                fence = m.group(1)
                yield number, line, True
                continue
            if m.group(1) == fence:
                fence = None
                yield number, line, True
                continue
        yield number, line, fence is not None


def links(text):
    """Yields (line number, start, end, target) for every link outside code; start and end
    delimit the whole link in its line."""
    masked_lines = _masked_lines(text)
    for number, line, in_code in iter_lines(text):
        if in_code:
            continue
        masked = masked_lines[number - 1]
        for pattern in (_INLINE, _REFDEF, _HTML):
            for m in pattern.finditer(masked):
                yield number, m.start(), m.end(), line[m.start(1):m.end(1)]


def is_external(target):
    return bool(re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target)) or target.startswith("//")


def _plain_heading(text):
    text = re.sub(r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\([^)]*\)", r"\1", text)  # links -> their text
    text = re.sub(r"<[^>]+>", "", text)
    return text.replace("`", "")


def _slug_python_markdown(text):
    # markdown.extensions.toc.slugify, which mkdocs uses.
    value = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    value = re.sub(r"[^\w\s-]", "", value).strip().lower()
    return re.sub(r"[-\s]+", "-", value)


def _slug_github(text):
    value = text.strip().lower()
    value = "".join(ch for ch in value if ch.isalnum() or ch in " -_")
    return value.replace(" ", "-")


def anchors(text):
    """Every anchor a heading of this Markdown gets, on GitHub or in mkdocs (duplicates too)."""
    found, seen_pm, seen_gh = set(), {}, {}
    for _, line, in_code in iter_lines(text):
        m = None if in_code else _HEADING.match(line)
        if not m:
            continue
        plain = _plain_heading(m.group(2))
        for slug, seen, sep in ((_slug_python_markdown(plain), seen_pm, "_"),
                                (_slug_github(plain), seen_gh, "-")):
            n = seen.get(slug, 0)
            found.add(slug if n == 0 else f"{slug}{sep}{n}")
            seen[slug] = n + 1
    for m in re.finditer(r"<a\s+(?:id|name)=\"([^\"]+)\"", text):
        found.add(m.group(1))
    return found
