"""mkdocs hook (mkdocs.yml `hooks:`): links from docs/ into the rest of the repository.

The pages link to files outside docs/ (a component's README, a header) by relative paths, which
work where the repository is browsed. mkdocs only knows the files under docs/ and, with --strict,
fails on such a link. This hook rewrites each of them before mkdocs reads the page: to
REPO_URL/blob/BRANCH/PATH when mkdocs.yml sets repo_url (extra.repo_branch, default main), else
to the path itself as code, so the site still says which file is meant.
scripts/docs/check_links.py checks that every such path exists.
"""
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mdlinks  # noqa: E402


def on_page_markdown(markdown, page, config, files, **kwargs):
    docs_dir = config["docs_dir"]
    repo_root = os.path.dirname(os.path.abspath(config["config_file_path"]))
    page_dir = os.path.dirname(os.path.join(docs_dir, page.file.src_path))
    repo_url = (config.get("repo_url") or "").rstrip("/")
    branch = (config.get("extra") or {}).get("repo_branch", "main")
    lines = markdown.split("\n")
    edits = {}
    for number, start, end, target in mdlinks.links(markdown):
        if mdlinks.is_external(target) or target.startswith("#"):
            continue
        path_part, hash_, fragment = target.partition("#")
        resolved = os.path.normpath(os.path.join(page_dir, path_part))
        if not os.path.relpath(resolved, docs_dir).startswith(".."):
            continue  # a page or file of the site: mkdocs checks it
        repo_path = os.path.relpath(resolved, repo_root).replace(os.sep, "/")
        whole = lines[number - 1][start:end]
        if repo_url:
            kind = "tree" if os.path.isdir(resolved) else "blob"
            new = whole.replace(f"({target}", f"({repo_url}/{kind}/{branch}/{repo_path}{hash_}{fragment}", 1)
        else:
            text = whole[whole.index("[") + 1:whole.rindex("](")]
            code = f"`{repo_path}`"
            new = text if text.strip("`") == repo_path else f"{text} ({code})"
        edits.setdefault(number - 1, []).append((start, end, new))
    for index, spans in edits.items():
        line = lines[index]
        for start, end, new in sorted(spans, reverse=True):
            line = line[:start] + new + line[end:]
        lines[index] = line
    return "\n".join(lines)
