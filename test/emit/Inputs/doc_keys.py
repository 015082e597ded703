"""Fails unless every property name in the plan schema appears in backticks
in docs/plan-format.md (test/emit/docs_cover_schema.test)."""
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
print(f"{len(keys(schema, set()))} keys documented")
