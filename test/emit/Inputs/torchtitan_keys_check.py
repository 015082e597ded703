"""Checks that every key of a torchtitan TOML job config is one the pinned
release accepts (compiler/trainers/torchtitan_keys.def).

Usage: torchtitan_keys_check.py KEYS_DEF CONFIG_TOML
"""
import re
import sys
import tomllib


def paths(table, prefix=""):
    for key, value in table.items():
        path = f"{prefix}.{key}" if prefix else key
        if isinstance(value, dict):
            yield from paths(value, path)
        else:
            yield path


def main() -> int:
    with open(sys.argv[1], encoding="utf-8") as f:
        known = set(re.findall(r'^TORCHTITAN_KEY\("([^"]+)"\)', f.read(), re.MULTILINE))
    with open(sys.argv[2], "rb") as f:
        written = list(paths(tomllib.load(f)))
    unknown = [p for p in written if p not in known]
    for p in unknown:
        print(f"not a torchtitan key: {p}")
    if unknown or not written:
        return 1
    print(f"every key of {len(written)} is a torchtitan key")
    return 0


if __name__ == "__main__":
    sys.exit(main())
