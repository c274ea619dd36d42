"""Seatbelt profiles (SBPL) as data: a reader for the S-expressions sandbox-exec reads, and an evaluator of the
rules that decide file and network access, for comparing two profiles by what they grant rather than by text.

Normalised form: each rule is (action, operations, filter) with `(with message ...)` dropped and its filters
joined as require-any. The evaluator follows Seatbelt as srt's generator relies on it: among the rules that
name an operation exactly, the last one whose filter matches decides; when none does, among the rules that name
it through a wildcard (`file-write*`, `file-read*`, `network*`); then `(deny default)`/`(allow default)`.
Filters: literal, subpath, regex (searched, as Seatbelt's are), require-all/any/not, local/remote ip and
unix-socket, path-regex; anything else (vnode-type, global-name, target, ...) matches no file or socket query.
"""

import re

WILDCARDS = {
    "file-read*": lambda op: op.startswith("file-read"),
    "file-write*": lambda op: op.startswith("file-write"),
    "file*": lambda op: op.startswith("file"),
    "network*": lambda op: op.startswith("network"),
}


class Symbol(str):
    pass


def read(text):
    """Every top-level form of `text`; raises ValueError on anything that is not an S-expression."""
    pos = 0
    n = len(text)
    stack = [[]]
    while pos < n:
        c = text[pos]
        if c in " \t\r\n":
            pos += 1
        elif c == ";":
            end = text.find("\n", pos)
            pos = n if end < 0 else end
        elif c == "(":
            stack.append([])
            pos += 1
        elif c == ")":
            if len(stack) == 1:
                raise ValueError("unbalanced ) at %d" % pos)
            done = stack.pop()
            stack[-1].append(done)
            pos += 1
        elif c == '"' or text.startswith('#"', pos):
            raw = c == "#"
            pos += 2 if raw else 1
            out = []
            while True:
                if pos >= n:
                    raise ValueError("unterminated string")
                ch = text[pos]
                if ch == '"':
                    pos += 1
                    break
                if ch == "\\" and not raw:
                    nxt = text[pos + 1]
                    out.append({"n": "\n", "t": "\t", "r": "\r"}.get(nxt, nxt))
                    pos += 2
                    continue
                out.append(ch)
                pos += 1
            stack[-1].append("".join(out))
        else:
            m = re.compile(r"[^\s()\";]+").match(text, pos)
            stack[-1].append(Symbol(m.group(0)))
            pos = m.end()
    if len(stack) != 1:
        raise ValueError("unbalanced (")
    return stack[0]


def normalise(forms):
    """The rules of a profile: [(action, [operations], filter)], filter None for an unconditional rule."""
    rules = []
    for form in forms:
        if not isinstance(form, list) or not form or form[0] not in ("allow", "deny"):
            continue
        ops, filters = [], []
        for item in form[1:]:
            if isinstance(item, Symbol):
                ops.append(str(item))
            elif isinstance(item, list) and item and item[0] == "with":
                continue
            else:
                filters.append(item)
        flt = None if not filters else (filters[0] if len(filters) == 1 else [Symbol("require-any")] + filters)
        rules.append((str(form[0]), ops, flt))
    return rules


def _path_matches(flt, path):
    kind = flt[0]
    if kind == "literal":
        return path == flt[1]
    if kind == "subpath":
        base = flt[1]
        return path == base or path.startswith(base if base.endswith("/") else base + "/")
    if kind in ("regex", "path-regex"):
        return re.search(flt[1], path) is not None
    if kind == "prefix":
        return path.startswith(flt[1])
    return None


def matches(flt, query):
    """Whether `flt` matches `query`: ("path", p) for file operations, ("ip", "localhost:PORT"),
    ("unix", p)."""
    if flt is None:
        return True
    kind = str(flt[0])
    if kind == "require-all":
        return all(matches(f, query) for f in flt[1:])
    if kind == "require-any":
        return any(matches(f, query) for f in flt[1:])
    if kind == "require-not":
        return not matches(flt[1], query)
    qkind, value = query
    if kind in ("literal", "subpath", "regex", "prefix"):
        return qkind == "path" and bool(_path_matches(flt, value))
    if kind in ("remote", "local"):
        side = "remote" if kind == "remote" else "local"
        if len(flt) < 3:
            return False
        what = str(flt[1])
        if what == "ip" and qkind == "ip" and side == "remote":
            host, port = flt[2].rsplit(":", 1)
            qhost, qport = value.rsplit(":", 1)
            return host in ("localhost", "*") and qhost == "localhost" and port in ("*", qport)
        if what == "unix-socket" and qkind == "unix" and side == "remote":
            inner = flt[2]
            return bool(_path_matches(inner, value))
        return False
    return False


def decide(rules, op, query):
    """"allow" or "deny" for operation `op` on `query`."""
    exact = [r for r in rules if op in r[1]]
    for action, _, flt in reversed(exact):
        if matches(flt, query):
            return action
    wild = [r for r in rules if any(w in WILDCARDS and WILDCARDS[w](op) for w in r[1])]
    for action, _, flt in reversed(wild):
        if matches(flt, query):
            return action
    for action, ops, flt in reversed(rules):
        if "default" in ops:
            return action
    return "deny"
