#!/usr/bin/python3
"""Runs the documentation's fast commands, so that a page whose commands drift fails the build.

Extracts every fenced ```sh (or ```bash) block of README.md and docs/**/*.md and runs, from the
repository root, each block that is *fast* by this rule:

  1. every command of the block starts with `build/cli/specplan` (the CLI, in-process), except a
     `cat > /tmp/FILE <<'EOF'` here-document that writes an input file for the commands after it;
  2. no command starts a server or talks to one (`--server`), runs in the background, pipes, chains
     or substitutes (`&`, `|`, `;`, `$(...)`, backquotes), or is a synopsis (`[--flag]`, `A|B`);
  3. every file a command reads is in the repository, or is written by an earlier command of the
     same block (`--out`, `--out-dir`, `--samples-out`, `cat >`);
  4. every file a command writes is under /tmp, and nothing asks for `--force`: nothing shipped is
     written over.

Anything else (scripts that install or build, servers, `calibrate`, the LibTorch runtime, the GPU,
files the reader supplies) is listed as skipped with the reason, never run. Commands run one by
one with `bash -c`, each with a timeout (default 60 s); a block stops at its first failure.
`build/` at the start of a command is the build directory given with --build-dir (default
build/), and /tmp/ is a private scratch directory, so concurrent runs do not collide.

Usage: run_commands.py [-h] [--build-dir DIR] [--timeout S] [--list] [--verbose] [FILE.md ...]
A failing command is printed as FILE:LINE: the command, its exit status and the tail of its
output; the exit status is 1 if any command failed (or none ran), else 0. CTest: Docs.CommandsRun.
"""
import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLI = "build/cli/specplan"
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*(\S*)\s*$")
HEREDOC = re.compile(r"^cat\s*>\s*(\S+)\s*<<-?\s*'?\"?(\w+)'?\"?\s*$")
OUT_FLAGS = {"--out", "--out-dir", "--samples-out"}
# Tokens that read as file names: a path with a folder, or a name with a data file's extension.
FILE_EXT = re.compile(r"\.(json|jsonl|csv|txt|toml|model|safetensors|yaml|yml)$")


class Command:
    def __init__(self, line, text, heredoc=None):
        self.line = line        # 1-based line in the Markdown file
        self.text = text        # the command as written (continuations joined)
        self.heredoc = heredoc  # (path, body lines) for `cat > FILE <<'EOF'`


class Block:
    def __init__(self, path, line, commands):
        self.path = path  # relative to the repository root
        self.line = line  # line of the opening fence
        self.commands = commands


def markdown_files(root):
    files = [os.path.join(root, "README.md")]
    for folder, _, names in os.walk(os.path.join(root, "docs")):
        files += [os.path.join(folder, n) for n in names if n.endswith(".md")]
    return sorted(f for f in files if os.path.isfile(f))


def blocks_of(path, root):
    """The ```sh/```bash blocks of one Markdown file, split into commands."""
    lines = open(path, encoding="utf-8").read().split("\n")
    rel = os.path.relpath(path, root)
    out, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang, start = m.group(2), m.group(3), i
        i += 1
        body = []
        while i < len(lines) and not re.match(r"^\s*" + re.escape(fence[0]) + "{%d,}\\s*$" % len(fence), lines[i]):
            body.append((i + 1, lines[i]))
            i += 1
        i += 1
        if lang in ("sh", "bash"):
            out.append(Block(rel, start + 1, split_commands(body)))
    return out


def strip_comment(line):
    """The line without a trailing `# comment` (outside quotes)."""
    quote = None
    for k, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (k == 0 or line[k - 1].isspace()):
            return line[:k].rstrip()
    return line.rstrip()


def split_commands(body):
    commands, k = [], 0
    while k < len(body):
        number, raw = body[k]
        k += 1
        text = strip_comment(raw).strip()
        if not text:
            continue
        m = HEREDOC.match(text)
        if m:
            lines = []
            while k < len(body) and body[k][1].strip() != m.group(2):
                lines.append(body[k][1])
                k += 1
            k += 1
            commands.append(Command(number, text, (m.group(1), lines)))
            continue
        while text.endswith("\\") and k < len(body):
            text = text[:-1].rstrip() + " " + strip_comment(body[k][1]).strip()
            k += 1
        commands.append(Command(number, text))
    return commands


def file_like(token, root):
    """Whether a word names a file: an absolute path, a relative one whose first folder is one of
    the repository's (examples/, calib/, ...), or a name with a data file's extension. Profile ids
    such as h100-sxm/qwen3-8b are not files."""
    if token.startswith("-") or "://" in token:
        return False
    if token.startswith("/"):
        return True
    if "/" in token and os.path.isdir(os.path.join(root, token.split("/")[0])):
        return True
    return FILE_EXT.search(token) is not None


def why_not_fast(block, root):
    """None when the block is fast by the rule in this file's docstring, else the reason."""
    written = set()
    for c in block.commands:
        if c.heredoc:
            target = c.heredoc[0]
            if not target.startswith("/tmp/"):
                return f"line {c.line}: writes {target}, outside /tmp"
            written.add(os.path.normpath(target))
            continue
        if not c.text.startswith(CLI + " "):
            return f"line {c.line}: not a {CLI} command: {c.text.split()[0]}"
        if re.search(r"[|&;`<>]|\$\(", c.text):
            return f"line {c.line}: pipes, redirects, chains, substitutes or runs in the background"
        try:
            tokens = shlex.split(c.text)
        except ValueError as e:
            return f"line {c.line}: cannot be split into words ({e})"
        if "--server" in tokens or any(t.startswith("--server=") for t in tokens):
            return f"line {c.line}: talks to a server (--server)"
        if "--force" in tokens:
            return f"line {c.line}: asks for --force"
        if any(t.startswith("[") or t.endswith("]") or t in ("...", "|") or "|" in t for t in tokens):
            return f"line {c.line}: a synopsis ([--flag], A|B, ...), not a command"
        outputs, inputs = [], []
        k = 1
        while k < len(tokens):
            t = tokens[k]
            flag, eq, value = t.partition("=")
            if flag in OUT_FLAGS and eq:
                outputs.append(value)
            elif t in OUT_FLAGS and k + 1 < len(tokens):
                outputs.append(tokens[k + 1])
                k += 1
            elif eq and flag.startswith("--") and file_like(value, root):
                inputs.append(value)
            elif file_like(t, root):
                inputs.append(t)
            k += 1
        for f in inputs:
            norm = os.path.normpath(f)
            if f.startswith("/tmp/"):
                if not any(norm == w or norm.startswith(w + os.sep) for w in written):
                    return f"line {c.line}: reads {f}, which no earlier command of the block writes"
            elif os.path.isabs(f):
                return f"line {c.line}: reads {f}, outside the repository"
            elif not os.path.exists(os.path.join(root, f)):
                return f"line {c.line}: reads {f}, not in the repository (the reader's own file)"
        for f in outputs:
            if not f.startswith("/tmp/"):
                return f"line {c.line}: writes {f}, outside /tmp"
            written.add(os.path.normpath(f))
    return None


def localise(text, build_dir, scratch):
    """`build/` -> the build directory, /tmp/ -> the private scratch directory."""
    text = re.sub(r"(?<![\w/.])/tmp/", scratch + "/", text)
    if text.startswith("build/"):
        text = os.path.join(build_dir, text[len("build/"):])
    return text


def run_block(block, args, scratch):
    """Runs the block's commands in order; returns a failure message or None."""
    for c in block.commands:
        where = f"{block.path}:{c.line}"
        if c.heredoc:
            target = localise(c.heredoc[0], args.build_dir, scratch)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "w", encoding="utf-8") as f:
                f.write("\n".join(c.heredoc[1]) + "\n")
            if args.verbose:
                print(f"docs-run: {where}: wrote {c.heredoc[0]}")
            continue
        command = localise(c.text, args.build_dir, scratch)
        t0 = time.monotonic()
        try:
            proc = subprocess.run(["bash", "-c", command], cwd=args.root, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, timeout=args.timeout,
                                  stdin=subprocess.DEVNULL)
            rc, output = proc.returncode, proc.stdout.decode("utf-8", "replace")
        except subprocess.TimeoutExpired as e:
            rc, output = None, (e.stdout or b"").decode("utf-8", "replace")
        took = time.monotonic() - t0
        if rc == 0:
            print(f"docs-run: ok   {where} ({took:.1f} s): {c.text}")
            continue
        status = f"timed out after {args.timeout:g} s" if rc is None else f"exit {rc}"
        tail = "\n".join("    " + l for l in output.rstrip().split("\n")[-15:])
        return f"docs-run: FAILED {where} ({status}): {c.text}\n{tail}"
    return None


def main():
    parser = argparse.ArgumentParser(
        description="Runs the fast ```sh commands of README.md and docs/*.md (rule: this file's "
                    "docstring) and fails with FILE:LINE and the command when one fails.")
    parser.add_argument("files", nargs="*", help="Markdown files (default: README.md, docs/**/*.md)")
    parser.add_argument("--root", default=ROOT, help="repository root (default: %(default)s)")
    parser.add_argument("--build-dir", default=None, help="build directory (default: ROOT/build)")
    parser.add_argument("--timeout", type=float, default=60, help="seconds per command (default 60)")
    parser.add_argument("--list", action="store_true", help="only list what would run and what is skipped")
    parser.add_argument("--verbose", action="store_true", help="also print the skipped blocks and why")
    args = parser.parse_args()
    args.root = os.path.abspath(args.root)
    args.build_dir = os.path.abspath(args.build_dir or os.path.join(args.root, "build"))
    files = [os.path.abspath(f) for f in args.files] or markdown_files(args.root)

    runnable = []
    for path in files:
        for block in blocks_of(path, args.root):
            if not block.commands:
                continue
            reason = why_not_fast(block, args.root)
            if reason is None:
                runnable.append(block)
                if args.list:
                    for c in block.commands:
                        print(f"docs-run: run  {block.path}:{c.line}: {c.text.splitlines()[0]}")
            elif args.list or args.verbose:
                print(f"docs-run: skip {block.path}:{block.line}: {reason}")
    if args.list:
        print(f"docs-run: {len(runnable)} blocks would run")
        return 0
    cli = os.path.join(args.build_dir, "cli", "specplan")
    if not os.access(cli, os.X_OK):
        print(f"docs-run: {cli} is not built (bash scripts/build.sh)", file=sys.stderr)
        return 1
    if not runnable:
        print("docs-run: no fast command found: the rule or the extraction is broken", file=sys.stderr)
        return 1

    scratch = tempfile.mkdtemp(prefix="specplan-docs-run.")
    failures = []
    try:
        for block in runnable:
            failure = run_block(block, args, scratch)
            if failure:
                print(failure, flush=True)
                failures.append(failure.split("\n", 1)[0])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    commands = sum(len(b.commands) for b in runnable)
    if failures:
        print(f"docs-run: {len(failures)} of {len(runnable)} blocks FAILED:", file=sys.stderr)
        for f in failures:
            print("  " + f[len("docs-run: FAILED "):], file=sys.stderr)
        return 1
    print(f"docs-run: {len(runnable)} blocks ({commands} commands) ran, all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
