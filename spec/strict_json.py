#!/usr/bin/env python3
"""Read one JSON document on stdin as a strict reader would, and print it
back in ASCII (every non-ASCII character and control as \\uXXXX), so a spec
can look at what it holds. Exit 1 naming the first thing wrong:

- bytes that are not UTF-8 (decoded with errors='strict');
- JSON that Python's json refuses with strict=True (a raw control character
  in a string), NaN or Infinity, a key twice in one object;
- a string holding a lone surrogate (a \\ud800 escape is JSON, but no UTF-8
  reader can take the text it stands for).
"""
import json
import sys


def pairs(items):
    seen = set()
    for k, _ in items:
        if k in seen:
            raise ValueError("key %r twice in one object" % k)
        seen.add(k)
    return dict(items)


def constant(name):
    raise ValueError("%s is not JSON" % name)


def walk(v, path):
    if isinstance(v, str):
        v.encode("utf-8", errors="strict")
    elif isinstance(v, dict):
        for k, x in v.items():
            walk(k, path)
            walk(x, path + "." + k)
    elif isinstance(v, list):
        for i, x in enumerate(v):
            walk(x, "%s[%d]" % (path, i))


def main():
    data = sys.stdin.buffer.read()
    try:
        text = data.decode("utf-8", errors="strict")
        doc = json.loads(text, strict=True, object_pairs_hook=pairs, parse_constant=constant)
        walk(doc, "$")
    except (UnicodeError, ValueError) as e:
        sys.stderr.write("strict_json: %s\n" % e)
        return 1
    sys.stdout.write(json.dumps(doc, ensure_ascii=True, sort_keys=True))
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
