#!/usr/bin/env python3
"""make check-layers: every file of engine/ against the table of engine/README.md.

    spec/check_layers.py OBJDIR

OBJDIR holds the objects of engine/FOLDER/NAME.c as OBJDIR/FOLDER/NAME.o.
Checked, for every file:
  - calls: each undefined symbol of an object is defined by an object of its
    own folder or of a folder its folder may use (nm);
  - includes: an internal header ("FOLDER/x.h") or a public one
    ("ebb/x.h", "ebb.h": owned by the folder that defines most of what it
    declares) of a folder it may use;
  - Lua's headers (lua.h, lauxlib.h, lualib.h) only in lua/ and
    cmd/module.c;
  - every circle of files that call each other lies inside one folder and
    has at most MAX_CIRCLE files;
  - no .c file over MAX_LINES lines unless its top comment says why
    ("longer than 1,500 lines because ...");
  - the bindings (engine/lua/lua_*.c) read a script's values only through
    engine/lua/lua_read.c: no Lua API that can run a metamethod, convert a
    value in place or walk a table without a bound (LUA_READ_BANNED).
    lua_string.c and lua_table.c are Lua's own library functions
    (metamethods as Lua specifies them); a line marked "lr-ok:" says why it
    is safe.
Prints each problem and exits 1 when there is one.
"""
import collections
import os
import re
import subprocess
import sys

MAX_CIRCLE = 10
MAX_LINES = 1500
LUA_HEADERS = {"lua.h", "lauxlib.h", "lualib.h", "luaconf.h"}
LUA_ALLOWED = {"engine/cmd/module.c"}
LUA_READ_BANNED = re.compile(
    r"\b(lua_getfield|lua_gettable|lua_geti|lua_getglobal|lua_len|luaL_len|lua_tolstring|"
    r"lua_tostring|luaL_tolstring|luaL_checklstring|luaL_checkstring|luaL_optlstring|"
    r"luaL_optstring|luaL_checkinteger|luaL_optinteger|luaL_checknumber|luaL_optnumber|"
    r"luaL_checkoption|lua_compare|lua_concat|lua_arith|lua_rawlen|lua_next)\s*\(")
LUA_READ_FREE = {"engine/lua/lua_read.c", "engine/lua/lua_string.c", "engine/lua/lua_table.c"}


def rules(readme):
    """{folder: set of folders it may use} from the table of engine/README.md."""
    table = {}
    for line in open(readme, encoding="utf-8"):
        m = re.match(r"\|\s*`(\w+)/`\s*\|.*\|\s*([^|]*)\|\s*$", line)
        if m:
            table[m.group(1)] = {w for w in re.findall(r"\b(\w+)\b", m.group(2)) if w}
    for f in table:
        table[f] &= set(table)   # libraries named in the column are not folders
    return table


def sources(folders):
    out = []
    for f in folders:
        d = os.path.join("engine", f)
        for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
            if name.endswith((".c", ".h")):
                out.append(os.path.join(d, name))
    return out


def folder_of(path):
    return path.split("/")[1]


def nm(obj, *flags):
    return subprocess.run(["nm", *flags, obj], capture_output=True, text=True, check=True).stdout


def main():
    objdir = sys.argv[1]
    allow = rules("engine/README.md")
    problems = []
    files = sources(allow)
    units = [p[:-2] for p in files if p.endswith(".c")]          # engine/F/name
    defs, uses = {}, collections.defaultdict(set)
    for u in units:
        obj = os.path.join(objdir, u[len("engine/"):] + ".o")
        if not os.path.exists(obj):
            problems.append(f"{u}.c: no object {obj} (build first)")
            continue
        for line in nm(obj, "-g", "--defined-only").splitlines():
            parts = line.split()
            if len(parts) == 3:
                defs[parts[2]] = u
        for line in nm(obj, "-u").splitlines():
            parts = line.split()
            if parts:
                uses[u].add(parts[-1])

    # calls
    edges = collections.defaultdict(set)
    for u, syms in uses.items():
        for s in syms:
            d = defs.get(s)
            if d is None or d == u:
                continue
            edges[u].add(d)
            fa, fb = folder_of(u), folder_of(d)
            if fa != fb and fb not in allow[fa]:
                problems.append(f"{u}.c calls {s} of {d}.c: {fa}/ may not use {fb}/")

    # public headers: the folder that defines most of what each declares
    owner = {}
    for h in ["include/ebb.h"] + sorted("include/ebb/" + n for n in os.listdir("include/ebb")):
        names = set(re.findall(r"\b(ebb_\w+)\s*\(", open(h, encoding="utf-8").read()))
        count = collections.Counter(folder_of(defs[n]) for n in names if n in defs)
        if count:
            owner[h[len("include/"):]] = count.most_common(1)[0][0]

    for p in files:
        fa = folder_of(p)
        text = open(p, encoding="utf-8", errors="replace").read()
        for inc in re.findall(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', text, re.M):
            if inc in LUA_HEADERS:
                if fa != "lua" and p not in LUA_ALLOWED:
                    problems.append(f"{p} includes {inc}: only lua/ (and cmd/module.c) include Lua's headers")
                continue
            head = inc.split("/")[0]
            fb = head if head in allow and "/" in inc else owner.get(inc)
            if fb is not None and fb != fa and fb not in allow[fa]:
                problems.append(f"{p} includes {inc} ({fb}/): {fa}/ may not use {fb}/")
        if re.match(r"engine/lua/lua_\w+\.c$", p) and p not in LUA_READ_FREE:
            for i, line in enumerate(text.split("\n"), 1):
                if LUA_READ_BANNED.search(line) and "lr-ok:" not in line:
                    problems.append(f"{p}:{i}: reads a script's value outside engine/lua/lua_read.c: "
                                    f"{line.strip()}")
        if p.endswith(".c"):
            n = text.count("\n")
            top = text[:3000].lower()
            if n > MAX_LINES and "longer than 1,500 lines because" not in top:
                problems.append(f"{p}: {n} lines; split it, or say at its top why it is "
                                f"longer than 1,500 lines")
    for h in sorted(os.listdir("include/ebb")) + ["../ebb.h"]:
        text = open(os.path.join("include/ebb", h), encoding="utf-8").read()
        for inc in re.findall(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', text, re.M):
            if inc in LUA_HEADERS:
                problems.append(f"include/ebb/{h} includes {inc}: a public header includes no Lua header")

    # circles (Tarjan)
    index, low, stack, on, circles = {}, {}, [], set(), []
    counter = [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
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
                circles.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(set(edges) | {w for ws in edges.values() for w in ws}):
        if v not in index:
            strong(v)
    for c in circles:
        if len({folder_of(u) for u in c}) > 1:
            problems.append("a circle across folders: " + ", ".join(u + ".c" for u in c))
        elif len(c) > MAX_CIRCLE:
            problems.append(f"a circle of {len(c)} files (at most {MAX_CIRCLE}): " +
                            ", ".join(u + ".c" for u in c))

    for p in problems:
        print("check-layers: " + p)
    if problems:
        return 1
    print(f"check-layers: {len(files)} files in {len(allow)} folders keep to engine/README.md; "
          f"{len(circles)} circles, each inside one folder, the largest of "
          f"{max((len(c) for c in circles), default=0)} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
