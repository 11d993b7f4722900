#!/usr/bin/env python3
"""Fails when the modules of a crate form a cycle.

Layering is checked at every level of each crate's module tree: for each module, the
dependencies among its child modules must form a DAG (a lower layer never imports a higher
one). A dependency of module A on module B is any path in A's code (a `use` tree, or an inline
path such as `crate::plan::physical::Plan` or `super::ops::f`) that names an item of B or of
one of B's descendants. Re-exports are followed to the module that defines the item, so
`use crate::Database` counts as a use of the module `database` when the crate root re-exports
it from there. A child's use of its own ancestors is not an edge (a parent is a namespace, not
a layer), nor is a parent's use of its children.

Usage: module_cycles.py [CRATE_DIR ...]   (default: every workspace member with a src/)
Exit status: 0 when no crate has a cycle, 1 when one has (each cycle printed with the
file and line of one reference per edge), 2 on a usage error.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field

KEYWORD_SEGMENTS = {"crate", "self", "super"}


@dataclass
class Module:
    path: tuple[str, ...]  # () is the crate root
    file: str
    children: dict[str, "Module"] = field(default_factory=dict)
    items: set[str] = field(default_factory=set)
    # name -> (absolute path of the target, line), from `pub use` / `pub(..) use`
    reexports: dict[str, tuple[tuple[str, ...], int]] = field(default_factory=dict)
    globs: list[tuple[str, ...]] = field(default_factory=list)
    # every path the module's code names: (absolute path, line)
    refs: list[tuple[tuple[str, ...], int]] = field(default_factory=list)


def strip_comments_and_strings(src: str) -> str:
    """Blanks comments, string and char literals, keeping newlines (so lines stay put)."""
    out = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
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
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif c == "r" and re.match(r'r#*"', src[i:i + 10]) and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_")):
            hashes = re.match(r"r(#*)\"", src[i:]).group(1)
            end = src.find('"' + hashes, i + 2 + len(hashes))
            end = n if end < 0 else end + 1 + len(hashes)
            out.append(re.sub(r"[^\n]", " ", src[i:end]))
            i = end
        elif c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            out.append(re.sub(r"[^\n]", " ", src[i:j + 1]))
            i = j + 1
        elif c == "'":
            # a char literal ('a', '\n', '\u{..}') or a lifetime ('a): only the former is blanked
            m = re.match(r"'(\\u\{[0-9a-fA-F]+\}|\\.|[^\\'\n])'", src[i:i + 12])
            if m:
                out.append(" " * len(m.group(0)))
                i += len(m.group(0))
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


MOD_DECL = re.compile(r"(?m)^[ \t]*((?:#\[[^\]]*\][ \t]*)*)(?:pub(?:\([^)]*\))?[ \t]+)?mod[ \t]+(\w+)[ \t]*(;|\{)")
PATH_ATTR = re.compile(r'#\[path\s*=\s*"([^"]+)"\]\s*$')
ITEM_DECL = re.compile(
    r"(?m)^[ \t]*(?:pub(?:\([^)]*\))?[ \t]+)?(?:unsafe[ \t]+|const[ \t]+|async[ \t]+|extern[ \t]+(?:\"C\"[ \t]+)?)*"
    r"(?:fn|struct|enum|trait|type|const|static|union)[ \t]+(\w+)"
)
MACRO_DECL = re.compile(r"macro_rules!\s*(\w+)")
USE_DECL = re.compile(r"(?s)(?:^|[;{}\]\n])[ \t]*(?:#\[[^\]]*\][ \t]*)*(pub(?:\([^)]*\))?[ \t]+)?use[ \t]+([^;]+);")
INLINE_PATH = re.compile(r"(?<![\w:])((?:crate|super|self)(?:::(?:\w+))+)")


def is_test_only(same_line_attrs: str, text: str, start: int) -> bool:
    """Whether a `mod` is `#[cfg(test)]`, by its attributes on its line or the lines above."""
    attrs = [same_line_attrs]
    for line in reversed(text[:start].split("\n")[:-1]):
        if not line.strip().startswith("#["):
            break
        attrs.append(line)
    return any(re.search(r"#\[cfg\(test\)\]", a) for a in attrs)


def block_span(text: str, m) -> tuple[int, int]:
    """The span of a `mod name { ... }` body, from the match of its head."""
    open_at = m.end() - 1
    depth, j = 0, open_at
    while j < len(text):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                break
        j += 1
    return open_at + 1, j


def line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def split_top(s: str) -> list[str]:
    parts, depth, cur = [], 0, []
    for ch in s:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def expand_use(text: str) -> list[tuple[tuple[str, ...], str | None]]:
    out = []
    for path, name in _expand(re.sub(r"\s+", " ", text.strip()), ()):
        out.append((path, name))
    return out


def _expand(tree: str, prefix: tuple[str, ...]):
    tree = tree.strip()
    if tree.startswith("::"):
        tree = tree[2:]
    brace = tree.find("{")
    if brace >= 0 and tree.endswith("}"):
        head = tree[:brace].strip().rstrip(":").strip()
        segs = tuple(s.strip() for s in head.split("::") if s.strip())
        for part in split_top(tree[brace + 1:-1]):
            yield from _expand(part, prefix + segs)
        return
    alias = None
    m = re.match(r"^(.*?)\s+as\s+(\w+)$", tree)
    if m:
        tree, alias = m.group(1), m.group(2)
    segs = tuple(s.strip() for s in tree.split("::") if s.strip())
    if segs and segs[-1] == "self":
        segs = segs[:-1]
        full = prefix + segs
        yield full, alias or (full[-1] if full else None)
        return
    full = prefix + segs
    if full and full[-1] == "*":
        yield full, None
        return
    yield full, alias or (full[-1] if full else None)


class Crate:
    def __init__(self, root_file: str):
        self.root = self._load((), root_file, None)

    def _load(self, path, file, inline_src):
        mod = Module(path=path, file=file)
        src = inline_src if inline_src is not None else open(file, encoding="utf-8").read()
        text = strip_comments_and_strings(src)
        mod._text = text  # type: ignore[attr-defined]
        # directory for children: foo/mod.rs and lib.rs/main.rs own their dir; foo.rs owns foo/
        base = os.path.basename(file)
        d = os.path.dirname(file)
        if inline_src is None:
            child_dir = d if base in ("mod.rs", "lib.rs", "main.rs") else os.path.join(d, base[:-3])
        else:
            child_dir = file  # set by caller for inline modules
        mod._child_dir = child_dir  # type: ignore[attr-defined]
        # inline modules are cut out of the parent's text so their refs belong to them
        spans = []
        for m in MOD_DECL.finditer(text):
            name, kind = m.group(2), m.group(3)
            if is_test_only(m.group(1), text, m.start()):
                spans.append(block_span(text, m) if kind == "{" else (m.start(), m.start()))
                continue
            if kind == ";":
                mpath = None
                pm = PATH_ATTR.search(src[max(0, m.start() - 200):m.start()].rstrip())
                if pm:
                    mpath = os.path.join(os.path.dirname(file) if inline_src is None else child_dir, pm.group(1))
                else:
                    for cand in (os.path.join(child_dir, name + ".rs"), os.path.join(child_dir, name, "mod.rs")):
                        if os.path.exists(cand):
                            mpath = cand
                            break
                if mpath is None:
                    continue
                mod.children[name] = self._load(path + (name,), mpath, None)
            else:
                open_at = m.end() - 1
                depth, j = 0, open_at
                while j < len(text):
                    if text[j] == "{":
                        depth += 1
                    elif text[j] == "}":
                        depth -= 1
                        if depth == 0:
                            break
                    j += 1
                body = src[open_at + 1:j]
                child = self._load_inline(path + (name,), file, body, os.path.join(child_dir, name),
                                          line_of(text, open_at) - 1)
                mod.children[name] = child
                spans.append((open_at + 1, j))
        own = list(text)
        for a, b in spans:
            for k in range(a, b):
                if own[k] != "\n":
                    own[k] = " "
        own_text = "".join(own)
        self._scan(mod, own_text, 0)
        return mod

    def _load_inline(self, path, file, body, child_dir, line_offset):
        mod = Module(path=path, file=file)
        text = strip_comments_and_strings(body)
        mod._child_dir = child_dir  # type: ignore[attr-defined]
        spans = []
        for m in MOD_DECL.finditer(text):
            name, kind = m.group(2), m.group(3)
            if is_test_only(m.group(1), text, m.start()):
                spans.append(block_span(text, m) if kind == "{" else (m.start(), m.start()))
                continue
            if kind == ";":
                for cand in (os.path.join(child_dir, name + ".rs"), os.path.join(child_dir, name, "mod.rs")):
                    if os.path.exists(cand):
                        mod.children[name] = self._load(path + (name,), cand, None)
                        break
            else:
                open_at = m.end() - 1
                depth, j = 0, open_at
                while j < len(text):
                    if text[j] == "{":
                        depth += 1
                    elif text[j] == "}":
                        depth -= 1
                        if depth == 0:
                            break
                    j += 1
                mod.children[name] = self._load_inline(path + (name,), file, body[open_at + 1:j],
                                                       os.path.join(child_dir, name),
                                                       line_offset + line_of(text, open_at) - 1)
                spans.append((open_at + 1, j))
        own = list(text)
        for a, b in spans:
            for k in range(a, b):
                if own[k] != "\n":
                    own[k] = " "
        self._scan(mod, "".join(own), line_offset)
        return mod

    def _scan(self, mod: Module, text: str, line_offset: int):
        for m in ITEM_DECL.finditer(text):
            mod.items.add(m.group(1))
        for m in MACRO_DECL.finditer(text):
            mod.items.add(m.group(1))
        use_spans = []
        for m in USE_DECL.finditer(text):
            vis, tree = m.group(1), m.group(2)
            ln = line_offset + line_of(text, m.start(2))
            use_spans.append((m.start(2), m.end(2)))
            for rel, name in expand_use(tree):
                absolute = self._absolute(mod, rel, is_use=True)
                if absolute is None:
                    continue
                mod.refs.append((absolute, ln))
                if vis:
                    if absolute and absolute[-1] == "*":
                        mod.globs.append(absolute[:-1])
                    elif name:
                        mod.reexports[name] = (absolute, ln)
        # inline paths outside `use` declarations
        masked = list(text)
        for a, b in use_spans:
            for k in range(a, b):
                if masked[k] != "\n":
                    masked[k] = " "
        masked_text = "".join(masked)
        for m in INLINE_PATH.finditer(masked_text):
            segs = tuple(m.group(1).split("::"))
            absolute = self._absolute(mod, segs, is_use=False)
            if absolute is not None:
                mod.refs.append((absolute, line_offset + line_of(masked_text, m.start())))

    def _absolute(self, mod: Module, segs: tuple[str, ...], is_use: bool):
        if not segs:
            return None
        base = list(mod.path)
        i = 0
        if segs[0] == "crate":
            base, i = [], 1
        elif segs[0] == "self":
            i = 1
        elif segs[0] == "super":
            while i < len(segs) and segs[i] == "super":
                if not base:
                    return None
                base.pop()
                i += 1
        elif is_use:
            # uniform paths: a name in scope; only a child module of this one is ours
            if segs[0] not in mod.children and segs[0] not in _pending_children(mod):
                return None
        else:
            return None
        return tuple(base) + tuple(segs[i:])

    def module(self, path):
        m = self.root
        for s in path:
            m = m.children.get(s)
            if m is None:
                return None
        return m

    def resolve(self, absolute: tuple[str, ...], seen=None) -> tuple[str, ...]:
        """The module that defines what `absolute` names."""
        seen = seen or set()
        if absolute in seen:
            return ()
        seen.add(absolute)
        m = self.root
        i = 0
        while i < len(absolute) and absolute[i] in m.children:
            m = m.children[absolute[i]]
            i += 1
        if i == len(absolute) or absolute[i] == "*":
            return m.path
        name = absolute[i]
        if name in m.items:
            return m.path
        if name in m.reexports:
            target, _ = m.reexports[name]
            return self.resolve(target + absolute[i + 1:], seen)
        for g in m.globs:
            gm = self.module(g)
            if gm is not None and (name in gm.items or name in gm.reexports or name in gm.children or gm.globs):
                r = self.resolve(g + absolute[i:], seen)
                if r != g or name in gm.items:
                    return r
        return m.path

    def modules(self):
        stack = [self.root]
        while stack:
            m = stack.pop()
            yield m
            stack.extend(m.children.values())


def _pending_children(mod):
    return set(re.findall(r"(?m)^[ \t]*(?:pub(?:\([^)]*\))?[ \t]+)?mod[ \t]+(\w+)", getattr(mod, "_text", "")))


def sibling_edges(crate: Crate):
    """{parent: {(a, b): (file, line, target)}}: child a of parent depends on child b."""
    edges: dict[tuple[str, ...], dict[tuple[str, str], tuple[str, int, str]]] = {}
    for mod in crate.modules():
        for absolute, line in mod.refs:
            target = crate.resolve(absolute)
            src = mod.path
            k = 0
            while k < len(src) and k < len(target) and src[k] == target[k]:
                k += 1
            if k >= len(src) or k >= len(target):
                continue  # an ancestor or a descendant: not a sibling edge
            parent = src[:k]
            key = (src[k], target[k])
            per = edges.setdefault(parent, {})
            if key not in per:
                per[key] = (mod.file, line, "::".join(absolute))
    return edges


def cycles(edges_of_parent):
    graph: dict[str, set[str]] = {}
    for a, b in edges_of_parent:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                strong(w)
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

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


def check_crate(crate_dir: str) -> list[str]:
    src = os.path.join(crate_dir, "src")
    roots = [os.path.join(src, f) for f in ("lib.rs", "main.rs") if os.path.exists(os.path.join(src, f))]
    problems = []
    for root in roots:
        crate = Crate(root)
        for parent, per in sorted(sibling_edges(crate).items()):
            for comp in cycles(per):
                where = "::".join(("crate",) + parent)
                problems.append(f"{root}: modules {', '.join(comp)} of {where} form a cycle:")
                members = set(comp)
                for (a, b), (file, line, path) in sorted(per.items()):
                    if a in members and b in members:
                        problems.append(f"    {a} -> {b}   ({file}:{line}: {path})")
    return problems


def workspace_members(top: str) -> list[str]:
    text = open(os.path.join(top, "Cargo.toml"), encoding="utf-8").read()
    m = re.search(r"(?s)^members\s*=\s*\[(.*?)\]", text, re.M)
    members = re.findall(r'"([^"]+)"', m.group(1)) if m else []
    dirs = [top] + [os.path.join(top, p) for p in members]
    return [d for d in dirs if os.path.isdir(os.path.join(d, "src"))]


def main(argv):
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    dirs = argv[1:] or workspace_members(top)
    problems = []
    for d in dirs:
        if not os.path.isdir(os.path.join(d, "src")):
            print(f"module_cycles: {d} has no src/", file=sys.stderr)
            return 2
        problems.extend(check_crate(d))
    if problems:
        print("\n".join(problems))
        print(f"module_cycles: {sum(1 for p in problems if not p.startswith(' '))} cycle(s)", file=sys.stderr)
        return 1
    print(f"module_cycles: no module cycle in {len(dirs)} crate(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
