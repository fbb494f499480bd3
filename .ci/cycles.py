#!/usr/bin/env python3
"""Import cycles between a crate's modules, and which of them are one concept.

For every workspace crate (each of its targets: the library, the binary, each
`src/bin` program) this reads the module tree from the `mod` declarations,
and the edges module -> module from the paths in the code: `use` trees and
`crate::`, `super::`, `self::` paths in expressions and types. A re-export
(`pub use engine::Engine;` in a parent) is followed to where the item is
defined, so an edge points at the module that holds the thing used. Comments
are no edges: an intra-doc link in `///` or `//!` names a module without
depending on it. Test code (`#[cfg(test)] mod ...`) is no edge either: a test
may reach across the crate to build what it checks.

The edges are grouped at every directory module: within a module whose file
declares children, each child (with everything under it) is one node, and an
edge from a file under child `a` to an item under child `b` is the edge
a -> b. The crate root is the first such level, so its nodes are the crate's
top-level modules. A parent's own items are no node: children use their
parent, that is what a parent is for.

A cycle is a strongly connected component of one level's graph. It passes
only when its modules are declared one concept, in the file of the parent
module, on a comment line that says why:

    //! One concept: bus, stream, subscriber — the bus hands each event ...

(`//` works too, for a parent whose docs are rendered for users; module
names may be in backticks; the reason follows a dash and may go on over the
next comment lines.) A cycle must fall inside one declared group; a name that
is no child module of that parent is an error, so a declaration cannot
outlive a rename silently.

Usage: python3 .ci/cycles.py [--list]
  --list  print each level's edges, with where each is made, and the
          declared groups, then check as usual.
Exit 1 on an undeclared cycle or a bad declaration.
"""

from __future__ import annotations

import re
import signal
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
# `One concept: a, b, c — why` (an em dash, an en dash or `--`).
DECLARATION = re.compile(
    r"^\s*//!?\s*One concept:\s*(?P<names>[^—–]*?)\s*(?:—|–|--)\s*(?P<why>.*)$"
)


# ---------------------------------------------------------------- lexing

RAW_STRING = re.compile(r'(?:br|r)(#*)"')
# A char literal ('a', '\n', '\u{1F600}'), not a lifetime ('a).
CHAR = re.compile(r"'(?:\\.[^']*|[^'\\])'")


def strip_code(text: str) -> str:
    """The code with comments, strings and chars blanked (newlines kept).

    What is left has the same lines, so a match's line number is the
    source's; braces inside strings no longer count as blocks.
    """
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        nxt = text[i + 1] if i + 1 < n else ""
        if c == "/" and nxt == "/":
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c == "/" and nxt == "*":
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(blank(text[i:j]))
            i = j
        elif c in "rb" and (m := RAW_STRING.match(text, i)) and not is_ident_char(text, i - 1):
            close = '"' + m.group(1)
            j = text.find(close, m.end())
            j = n if j < 0 else j + len(close)
            out.append(blank(text[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j += 1
            out.append(blank(text[i:j]))
            i = j
        elif c == "'":
            m = CHAR.match(text, i)
            if m:
                out.append(blank(m.group(0)))
                i = m.end()
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def blank(s: str) -> str:
    return re.sub(r"[^\n]", " ", s)


def is_ident_char(text: str, i: int) -> bool:
    return i >= 0 and (text[i].isalnum() or text[i] == "_")


def line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


# ---------------------------------------------------------------- modules


@dataclass
class Module:
    path: tuple[str, ...]  # from the crate root: () is the root
    file: Path  # the file that holds it (an inline module: its file)
    dir: Path  # where its `mod x;` children's files are
    children: dict[str, "Module"] = field(default_factory=dict)
    # local name -> absolute path (crate-relative segments), from `use`.
    uses: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # (target path segments, file, line) for each reference in its code.
    refs: list[tuple[tuple[str, ...], Path, int]] = field(default_factory=list)
    test: bool = False
    inline: bool = False
    raw: str = ""  # its file's text, for the declarations (a file module)


MOD_DECL = re.compile(
    r"(?P<attrs>(?:#\[[^\]]*\]\s*)*)"
    r"(?:pub(?:\s*\([^)]*\))?\s+)?mod\s+(?P<name>" + IDENT + r")\s*(?P<end>[;{])"
)
USE_DECL = re.compile(r"\b(?:pub(?:\s*\([^)]*\))?\s+)?use\s+(?P<tree>[^;]+);")
PATH_EXPR = re.compile(
    r"(?<![A-Za-z0-9_$:])(?P<path>(?:crate|super|self)(?:\s*::\s*" + IDENT + r")+)"
)


def matching_brace(code: str, open_at: int) -> int:
    depth = 0
    for j in range(open_at, len(code)):
        if code[j] == "{":
            depth += 1
        elif code[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(code)


def is_test(attrs: str) -> bool:
    return re.search(r"#\[\s*cfg\s*\(\s*test\s*\)\s*\]", attrs) is not None


class Crate:
    """One target's module tree: a library, a binary or a `src/bin` program."""

    def __init__(self, label: str, root_file: Path):
        self.label = label
        self.root = Module((), root_file, root_file.parent)
        self.modules: dict[tuple[str, ...], Module] = {}
        self.load(self.root, root_file)

    def load(self, module: Module, file: Path) -> None:
        text = file.read_text(encoding="utf-8")
        code = strip_code(text)
        self.modules[module.path] = module
        module.raw = text
        self.scan(module, file, code, 0, len(code))

    def scan(self, module: Module, file: Path, code: str, start: int, end: int) -> None:
        """Read module's code in code[start:end], inline children apart."""
        pos = start
        own: list[tuple[int, int]] = []  # spans that are this module's own
        for m in MOD_DECL.finditer(code, start, end):
            if m.start() < pos:
                continue  # inside an inline child already read
            name = m.group("name")
            test = module.test or is_test(m.group("attrs"))
            if m.group("end") == "{":
                close = matching_brace(code, m.end() - 1)
                own.append((pos, m.start()))
                child = Module(
                    module.path + (name,), file, module.dir / name, test=test, inline=True
                )
                module.children[name] = child
                self.modules[child.path] = child
                self.scan(child, file, code, m.end(), close)
                pos = close + 1
            else:
                child_file = self.child_file(module, name)
                if child_file is None:
                    continue  # a cfg'd-out platform module without a file
                child_dir = child_file.parent if child_file.name == "mod.rs" else child_file.with_suffix("")
                child = Module(module.path + (name,), child_file, child_dir, test=test)
                module.children[name] = child
                self.load(child, child_file)
        own.append((pos, end))
        for a, b in own:
            self.read_code(module, file, code, a, b)

    def child_file(self, module: Module, name: str) -> Path | None:
        for candidate in (module.dir / f"{name}.rs", module.dir / name / "mod.rs"):
            if candidate.exists():
                return candidate
        return None

    def read_code(self, module: Module, file: Path, code: str, a: int, b: int) -> None:
        taken: list[tuple[int, int]] = []
        for m in USE_DECL.finditer(code, a, b):
            taken.append(m.span())
            line = line_of(code, m.start())
            for path, alias in expand_use(m.group("tree")):
                absolute = self.absolute(module, path, in_use=True)
                if absolute is None:
                    continue
                if alias not in ("*", "self", "_"):
                    module.uses[alias] = absolute
                module.refs.append((absolute, file, line))
        for m in PATH_EXPR.finditer(code, a, b):
            if any(s <= m.start() < e for s, e in taken):
                continue
            segs = tuple(re.sub(r"\s", "", m.group("path")).split("::"))
            absolute = self.absolute(module, segs, in_use=False)
            if absolute is not None:
                module.refs.append((absolute, file, line_of(code, m.start())))

    def absolute(self, module: Module, segs: tuple[str, ...], in_use: bool):
        """segs from module, made crate-relative; None for another crate's."""
        if not segs:
            return None
        if segs[0] == "crate":
            return segs[1:]
        if segs[0] in ("self", "super"):
            base = module.path
            i = 0
            while i < len(segs) and segs[i] in ("self", "super"):
                if segs[i] == "super":
                    base = base[:-1]
                i += 1
            return base + segs[i:]
        if in_use and segs[0] in module.children:
            # A `use` path from a child module's name (2018 paths).
            return module.path + segs
        return None

    def resolve(self, segs: tuple[str, ...], depth: int = 0) -> tuple[str, ...]:
        """The module that defines what the crate-relative path names."""
        cur = self.root
        for i, seg in enumerate(segs):
            if seg in cur.children:
                cur = cur.children[seg]
                continue
            target = cur.uses.get(seg)
            if target is not None and depth < 16 and target != cur.path + (seg,):
                return self.resolve(target + segs[i + 1 :], depth + 1)
            return cur.path
        return cur.path


def expand_use(tree: str) -> list[tuple[tuple[str, ...], str]]:
    """`a::{b, c::d as e}` -> [((a, b), b), ((a, c, d), e)]."""
    tree = re.sub(r"\s+", " ", tree).strip()
    out: list[tuple[tuple[str, ...], str]] = []

    def split_top(s: str) -> list[str]:
        parts, depth, cur = [], 0, ""
        for ch in s:
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
            else:
                cur += ch
        parts.append(cur)
        return [p.strip() for p in parts if p.strip()]

    def walk(prefix: tuple[str, ...], s: str) -> None:
        s = s.strip().lstrip(":").strip()
        brace = s.find("{")
        if brace >= 0:
            head = s[:brace].rstrip().rstrip(":").strip()
            segs = tuple(x.strip() for x in head.split("::") if x.strip())
            inner = s[brace + 1 : s.rfind("}")]
            for part in split_top(inner):
                walk(prefix + segs, part)
            return
        alias = None
        m = re.match(r"(.*?)\s+as\s+(" + IDENT + r")$", s)
        if m:
            s, alias = m.group(1), m.group(2)
        segs = prefix + tuple(x.strip() for x in s.split("::") if x.strip())
        if not segs:
            return
        if segs[-1] == "self":
            segs = segs[:-1]
            name = alias or (segs[-1] if segs else "self")
        else:
            name = alias or segs[-1]
        out.append((segs, name))

    walk((), tree)
    return out


# ---------------------------------------------------------------- graphs


def edges_by_level(crate: Crate):
    """level path -> (a, b) -> [(file, line)] for each module-to-module edge."""
    levels: dict[tuple[str, ...], dict[tuple[str, str], list[tuple[Path, int]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for module in crate.modules.values():
        if module.test:
            continue
        for segs, file, line in module.refs:
            target = crate.resolve(segs)
            src = module.path
            k = 0
            while k < len(src) and k < len(target) and src[k] == target[k]:
                k += 1
            if k < len(src) and k < len(target):
                site = (file, line)
                sites = levels[src[:k]][(src[k], target[k])]
                if site not in sites:
                    sites.append(site)
    return levels


def components(nodes: set[str], edges) -> list[list[str]]:
    """Tarjan's strongly connected components with more than one module."""
    succ = defaultdict(list)
    for a, b in edges:
        succ[a].append(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(succ[v]):
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
                found.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return found


def declarations(module: Module) -> tuple[list[tuple[set[str], int]], list[str]]:
    """The `One concept:` groups in a parent module's file, and their errors."""
    groups, errors = [], []
    if module.inline:
        return groups, errors  # its file's lines are the enclosing module's
    for no, line in enumerate(module.raw.splitlines(), 1):
        if "One concept:" not in line:
            continue
        where = f"{rel(module.file)}:{no}"
        m = DECLARATION.match(line)
        if not m:
            errors.append(f"{where}: write `One concept: a, b — why` (the dash and the why)")
            continue
        names = {n.strip().strip("`") for n in m.group("names").split(",") if n.strip()}
        if len(names) < 2:
            errors.append(f"{where}: a concept of one module is no declaration")
        unknown = sorted(n for n in names if n not in module.children)
        if unknown:
            errors.append(f"{where}: not a child module here: {', '.join(unknown)}")
        if not m.group("why").strip():
            errors.append(f"{where}: say why after the dash")
        groups.append((names, no))
    return groups, errors


def rel(p: Path) -> str:
    try:
        return str(p.relative_to(ROOT))
    except ValueError:
        return str(p)


def level_name(crate: Crate, level: tuple[str, ...]) -> str:
    return crate.label + ("::" + "::".join(level) if level else "")


# ---------------------------------------------------------------- crates


def workspace_targets() -> list[Crate]:
    manifest = (ROOT / "Cargo.toml").read_text(encoding="utf-8")
    members = re.search(r"members\s*=\s*\[(.*?)\]", manifest, re.S)
    if not members:
        sys.exit("cycles.py: no workspace members in Cargo.toml")
    crates = []
    for member in re.findall(r'"([^"]+)"', members.group(1)):
        src = ROOT / member / "src"
        roots = [src / "lib.rs", src / "main.rs"]
        bins = src / "bin"
        if bins.is_dir():
            roots += sorted(bins.glob("*.rs")) + sorted(bins.glob("*/main.rs"))
        for root in roots:
            if root.exists():
                label = member if root.parent == src else f"{member} ({rel(root)})"
                crates.append(Crate(label, root))
    return crates


def main(argv: list[str]) -> int:
    listing = "--list" in argv
    unknown_args = [a for a in argv if a != "--list"]
    if unknown_args:
        print(__doc__.split("Usage:")[1].strip(), file=sys.stderr)
        return 2
    failures: list[str] = []
    declared_ok: list[str] = []
    for crate in workspace_targets():
        levels = edges_by_level(crate)
        for path, module in sorted(crate.modules.items()):
            if not module.children:
                continue
            groups, errors = declarations(module)
            failures += errors
            edges = levels.get(path, {})
            if listing and (edges or groups):
                print(f"== {level_name(crate, path)}")
                for (a, b), sites in sorted(edges.items()):
                    where = ", ".join(f"{rel(f)}:{ln}" for f, ln in sites)
                    print(f"  {a} -> {b}   {where}")
                for names, no in groups:
                    print(f"  one concept: {', '.join(sorted(names))} ({rel(module.file)}:{no})")
            nodes = {n for e in edges for n in e}
            for comp in components(nodes, edges):
                group = next((g for g, _ in groups if set(comp) <= g), None)
                name = f"{level_name(crate, path)}: {' <-> '.join(comp)}"
                if group is not None:
                    declared_ok.append(name)
                    continue
                lines = [f"cycle in {name}, not declared one concept"]
                members = set(comp)
                for (a, b), sites in sorted(edges.items()):
                    if a in members and b in members:
                        where = ", ".join(f"{rel(f)}:{ln}" for f, ln in sites)
                        lines.append(f"  {a} -> {b}   {where}")
                failures.append("\n".join(lines))
    if listing:
        print()
    for name in declared_ok:
        print(f"declared one concept: {name}")
    for failure in failures:
        print(failure)
    if failures:
        print(
            f"\n{len(failures)} problem(s). Break each cycle, or declare its modules one "
            "concept in their parent module's file: `// One concept: a, b — why` "
            "(or `//!`).",
        )
        return 1
    print("no undeclared module cycles")
    return 0


if __name__ == "__main__":
    # `--list | head` ends quietly.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(main(sys.argv[1:]))
