#!/usr/bin/env python3
"""The house rules that a reader of the code can check by counting.

1. No `.rs` file under `crates/` is longer than 1,000 lines.
2. No function outside test code (`#[cfg(test)]`, `#[test]`, a file declared as
   `#[cfg(test)] mod x;`, a crate's `tests/`) is longer than 80 lines, from its `fn` line to
   its closing brace.
3. No import circle among the engine's files: the graph of `crate::` and `super::` paths
   between the files of `crates/engine/src` has no cycle.

Files and functions that still break a rule are listed in `scripts/house-debts.txt` with the
size they had when listed: a debt may shrink or be paid (then delete its line), never grow,
and no new one may appear. Run from anywhere: `python3 scripts/house.py` (exit 1 on a broken
rule, with one line per breach). `--list` prints every breach, listed or not, as a debts file.
"""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_FILE = 1000
MAX_FN = 80
DEBTS = os.path.join(ROOT, "scripts", "house-debts.txt")


def rust_files(top):
    for base, dirs, files in os.walk(top):
        dirs[:] = sorted(d for d in dirs if d not in ("target", ".git"))
        for f in sorted(files):
            if f.endswith(".rs"):
                yield os.path.join(base, f)


def blank_out(src):
    """The source with comments, strings and character literals replaced by spaces
    (newlines kept), so braces and keywords can be counted by position."""
    out = list(src)
    i, n = 0, len(src)

    def blank(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif src.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            blank(i, j)
            i = j
        elif re.match(r'b?r#*"', src[i : i + 40]) and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_")):
            m = re.match(r'(b?r)(#*)"', src[i:])
            close = '"' + m.group(2)
            j = src.find(close, i + len(m.group(0)))
            j = n if j < 0 else j + len(close)
            blank(i, j)
            i = j
        elif c == '"' or (c == "b" and src.startswith('b"', i) and (i == 0 or not src[i - 1].isalnum())):
            j = i + (2 if c == "b" else 1)
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            blank(i, j + 1)
            i = j + 1
        elif c == "'":
            # A character literal ('a', '\n', '\u{1F600}', b'x'), not a lifetime ('a).
            m = re.match(r"'(\\(x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]{1,6}\}|.)|[^\\'])'", src[i : i + 12])
            if m:
                blank(i, i + len(m.group(0)))
                i += len(m.group(0))
            else:
                i += 1
        else:
            i += 1
    return "".join(out)


def matching_brace(code, open_at):
    depth = 0
    for j in range(open_at, len(code)):
        if code[j] == "{":
            depth += 1
        elif code[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(code) - 1


def test_spans(code):
    """Character spans of items under `#[cfg(test)]` or `#[test]`."""
    spans = []
    for m in re.finditer(r"#\[\s*(cfg\s*\(\s*test\s*\)|test|tokio::test[^\]]*)\s*\]", code):
        brace = code.find("{", m.end())
        semi = code.find(";", m.end())
        if brace < 0 or (0 <= semi < brace):
            continue
        spans.append((m.start(), matching_brace(code, brace)))
    return spans


def long_functions(path, code):
    tests = test_spans(code)
    found = []
    for m in re.finditer(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)", code):
        if any(a <= m.start() <= b for a, b in tests):
            continue
        # The body opens at the first `{` after the signature's parentheses, unless a `;`
        # (a declaration without a body) comes first.
        j, depth = m.end(), 0
        body = None
        while j < len(code):
            ch = code[j]
            if ch in "([<":
                depth += 1
            elif ch in ")]>":
                # `->` is not a closing angle bracket.
                if not (ch == ">" and code[j - 1] == "-"):
                    depth -= 1
            elif ch == ";" and depth <= 0:
                break
            elif ch == "{" and depth <= 0:
                body = j
                break
            j += 1
        if body is None:
            continue
        end = matching_brace(code, body)
        first = code.count("\n", 0, m.start()) + 1
        last = code.count("\n", 0, end) + 1
        if last - first + 1 > MAX_FN:
            found.append((f"fn {rel(path)}::{m.group(1)}@{first}", last - first + 1))
    return found


def test_files(top):
    """Files that are test code by their declaration: `#[cfg(test)] mod tests;` names a file."""
    found = set()
    for path in rust_files(top):
        with open(path, encoding="utf-8") as f:
            code = blank_out(f.read())
        base = os.path.dirname(path)
        if os.path.basename(path) not in ("lib.rs", "main.rs", "mod.rs"):
            base = os.path.join(base, os.path.basename(path)[:-3])
        for m in re.finditer(r"#\[\s*cfg\s*\(\s*test\s*\)\s*\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", code):
            for child in (os.path.join(base, m.group(1) + ".rs"), os.path.join(base, m.group(1), "mod.rs")):
                found.add(os.path.normpath(child))
    return found


def rel(path):
    return os.path.relpath(path, ROOT)


def module_of(src_dir, path):
    """`crates/engine/src/http/h2.rs` -> ("http", "h2"); `lib.rs` -> (); `x/mod.rs` -> ("x",)."""
    parts = os.path.relpath(path, src_dir)[:-3].split(os.sep)
    if parts[-1] in ("lib", "main", "mod"):
        parts = parts[:-1]
    return tuple(parts)


def expand_use_paths(text):
    """Every path a `use` tree or an inline path names, with braces expanded:
    `crate::http::{h1::X, Conn}` -> crate::http::h1::X, crate::http::Conn."""
    paths = []

    def walk(prefix, s):
        s = s.strip()
        if not s:
            return
        # Split at top-level commas.
        depth, start, items = 0, 0, []
        for k, ch in enumerate(s):
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            elif ch == "," and depth == 0:
                items.append(s[start:k])
                start = k + 1
        items.append(s[start:])
        for item in items:
            item = item.strip()
            brace = item.find("{")
            if brace >= 0:
                walk(prefix + item[:brace].rstrip(":").strip() + "::", item[brace + 1 : item.rfind("}")])
            elif item:
                paths.append(prefix + item.split(" as ")[0].strip())

    walk("", text)
    return paths


def engine_cycles():
    src_dir = os.path.join(ROOT, "crates", "engine", "src")
    files = {}
    tests = test_files(src_dir)
    for path in rust_files(src_dir):
        if os.path.normpath(path) not in tests:
            files[module_of(src_dir, path)] = path
    edges = {m: set() for m in files}
    for mod, path in files.items():
        with open(path, encoding="utf-8") as f:
            code = blank_out(f.read())
        for a, b in reversed(test_spans(code)):
            code = code[:a] + code[b + 1 :]
        refs = []
        for m in re.finditer(r"\buse\s+((?:crate|super)::[^;]*);", code):
            refs.extend(expand_use_paths(m.group(1)))
        for m in re.finditer(r"(?<![:\w])((?:crate|super)(?:::(?:super|[A-Za-z_]\w*))+)", code):
            refs.append(m.group(1))
        for ref in refs:
            segs = [s for s in ref.split("::") if s]
            if segs[0] == "crate":
                base, segs = (), segs[1:]
            else:
                base = mod
                while segs and segs[0] == "super":
                    base, segs = base[:-1], segs[1:]
            target = base
            for s in segs:
                if target + (s,) in files:
                    target = target + (s,)
                else:
                    break
            if target != mod and target in files:
                # A file reaching into its own submodule is structure, not an import.
                if target[: len(mod)] == mod and len(target) > len(mod):
                    continue
                edges[mod].add(target)
    return strongly_connected(edges)


def strongly_connected(edges):
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def breaches():
    found = []
    tests = test_files(os.path.join(ROOT, "crates"))
    for path in rust_files(os.path.join(ROOT, "crates")):
        with open(path, encoding="utf-8") as f:
            src = f.read()
        lines = src.count("\n") + (0 if src.endswith("\n") or not src else 1)
        if lines > MAX_FILE:
            found.append((f"file {rel(path)}", lines))
        # Integration tests (a crate's `tests/`) are test code, as `#[cfg(test)]` modules are.
        if f"{os.sep}tests{os.sep}" not in rel(path) and os.path.normpath(path) not in tests:
            found.extend(long_functions(path, blank_out(src)))
    for comp in engine_cycles():
        name = " ".join("::".join(m) or "lib" for m in comp)
        found.append((f"circle engine: {name}", len(comp)))
    return found


def read_debts():
    debts = {}
    if os.path.exists(DEBTS):
        with open(DEBTS, encoding="utf-8") as f:
            for line in f:
                line = line.split("#", 1)[0].strip()
                if line:
                    key, _, size = line.rpartition(" ")
                    debts[key] = int(size)
    return debts


def main():
    found = breaches()
    if "--list" in sys.argv:
        for key, size in found:
            print(f"{key} {size}")
        return 0
    debts = read_debts()
    bad = []
    for key, size in found:
        # Functions are matched by file and name; the line number may move.
        listed = debts.get(key)
        if listed is None and key.startswith("fn "):
            stem = key.rsplit("@", 1)[0]
            listed = next((v for k, v in debts.items() if k.rsplit("@", 1)[0] == stem), None)
        if listed is None:
            bad.append(f"{key}: {size} (limit {MAX_FILE if key.startswith('file') else MAX_FN if key.startswith('fn') else 1}); split it")
        elif size > listed:
            bad.append(f"{key}: {size}, grew past its listed debt of {listed}")
    for line in bad:
        print(f"house: {line}")
    if not bad:
        print(f"house: {len(found)} debts left ({len(debts)} listed), none grew, none new")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
