#!/usr/bin/env python3
"""Regenerates the real outputs in docs/*.md, so the docs never show output acceval does not
print. A block to regenerate is a fenced block right after a marker line

    <!-- output: acceval ARGS... -->

The command runs from the repository root with the release binary (target/release/acceval,
built first), stdout piped (so tables are Markdown) and NO_COLOR set; the block's body becomes
`$ COMMAND` and then its stdout and stderr, as printed. Usage: scripts/gen_docs.py [docs/FILE.md ...] [--check]
(--check: exit 1 when a block's command fails, without writing)."""
import os, re, shlex, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target", "release", "acceval")
MARK = re.compile(r"^<!-- output: (acceval .*) -->$")


def run(cmd):
    argv = shlex.split(cmd)
    argv[0] = BIN
    env = dict(os.environ, NO_COLOR="1", NO_PROGRESS="1")
    p = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    out = (p.stdout + p.stderr).rstrip("\n")
    return p.returncode, out


def regenerate(path, check):
    lines = open(path, encoding="utf-8").read().split("\n")
    out, i, failed = [], 0, []
    while i < len(lines):
        m = MARK.match(lines[i].strip())
        out.append(lines[i])
        i += 1
        if not m:
            continue
        if i >= len(lines) or not lines[i].startswith("```"):
            sys.exit(f"{path}:{i}: a marker must be followed by a fenced block")
        fence = lines[i]
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        code, text = run(m.group(1))
        print(f"{os.path.relpath(path, ROOT)}: {m.group(1)} -> exit {code}", file=sys.stderr)
        if code not in (0, 1):
            failed.append((m.group(1), code, text[-400:]))
        out.append(fence)
        out.append("$ " + m.group(1))
        out.extend(text.split("\n"))
        out.append("```")
        i = j + 1
    if failed:
        for c, code, t in failed:
            print(f"FAILED: {c} (exit {code}):\n{t}", file=sys.stderr)
        return False
    if not check:
        open(path, "w", encoding="utf-8").write("\n".join(out))
    return True


def main():
    args = [a for a in sys.argv[1:] if a != "--check"]
    check = "--check" in sys.argv
    if not os.path.exists(BIN):
        subprocess.run(["cargo", "build", "--release"], cwd=ROOT, check=True)
    files = args or sorted(
        os.path.join(ROOT, "docs", f) for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md")
    )
    ok = all([regenerate(f, check) for f in files])
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
