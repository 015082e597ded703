"""Fails unless every property name in the plan schema appears in backticks
in docs/plan-format.md, the schema is a valid draft 2020-12 schema, and every
plan.json given after the two files matches it
(test/emit/docs_cover_schema.test).

    doc_keys.py SCHEMA DOC [PLAN...]
"""
import json
import sys


def keys(node, out):
    if isinstance(node, dict):
        for name, value in node.get("properties", {}).items():
            out.add(name)
            keys(value, out)
        for key, value in node.items():
            if key != "properties":
                keys(value, out)
    elif isinstance(node, list):
        for value in node:
            keys(value, out)
    return out


schema = json.load(open(sys.argv[1]))
doc = open(sys.argv[2], encoding="utf-8").read()
missing = sorted(k for k in keys(schema, set()) if f"`{k}`" not in doc)
if missing:
    sys.exit(f"{sys.argv[2]} does not document: {', '.join(missing)}")
import jsonschema  # noqa: E402  (only after the plain check, so its message comes first)
jsonschema.Draft202012Validator.check_schema(schema)
for path in sys.argv[3:]:
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(json.load(open(path))))
    for e in errors[:10]:
        print(f"{path}: {'.'.join(map(str, e.absolute_path))}: {e.message}", file=sys.stderr)
    if errors:
        sys.exit(f"{path}: {len(errors)} schema errors")
print(f"{len(keys(schema, set()))} keys documented, {len(sys.argv) - 3} plans match the schema")
