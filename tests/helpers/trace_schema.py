#!/usr/bin/env python3
"""trace_schema.py - validate every line of cosched traces against share/trace-schema.json.

    trace_schema.py SCHEMA TRACE...

Each line is parsed by Python's json module and validated with python3-jsonschema
(draft 2020-12).  Prints "TRACE:LINE: <what is wrong> (at <path>)" for each bad line
and exits 1; prints "ok N lines (run R, step S, job J, characterized C)" and exits 0.
The schema itself is checked first (a broken schema would accept anything).
"""
import collections
import json
import sys

import jsonschema


def main():
    schema = json.load(open(sys.argv[1]))
    jsonschema.Draft202012Validator.check_schema(schema)
    v = jsonschema.Draft202012Validator(schema)
    bad, n, kinds = 0, 0, collections.Counter()
    for path in sys.argv[2:]:
        with open(path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                n += 1
                try:
                    rec = json.loads(line)
                except ValueError as e:
                    print("%s:%d: not JSON: %s" % (path, lineno, e))
                    bad += 1
                    continue
                errs = sorted(v.iter_errors(rec), key=lambda e: list(e.absolute_path))
                for e in errs:
                    at = "/".join(str(p) for p in e.absolute_path) or "the record"
                    print("%s:%d: %s (at %s)" % (path, lineno, e.message, at))
                if errs:
                    bad += 1
                elif isinstance(rec, dict):
                    kinds[rec.get("type")] += 1
    if bad:
        sys.exit(1)
    print("ok %d lines (%s)" % (n, ", ".join("%s %d" % (k, kinds[k]) for k in ("run", "step", "job", "characterized"))))


if __name__ == "__main__":
    main()
