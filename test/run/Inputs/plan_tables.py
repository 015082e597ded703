"""The rank, group and slice tables of plan.json, for test/run/plan_tables.test.

    python3 plan_tables.py listed PLAN_V3 PLAN_V2 > listed.json
        PLAN_V3 with the tables of PLAN_V2 written into it, as version 2 lists them
    python3 plan_tables.py compare PLAN_V2 TABLES [MUTATION]
        exit 0 when TABLES (`avf-run check-plan --tables`) holds exactly the
        tables PLAN_V2 lists; MUTATION first changes one of TABLES' entries,
        so that the comparison is seen to fail
"""
import json
import sys

TABLES = [("ranks",), ("groups",), ("data", "slices"), ("zero", "slices")]


def lookup(plan, path):
    for key in path:
        plan = plan[key]
    return plan


def listed(plan, v2):
    for path in TABLES:
        holder = lookup(plan, path[:-1])
        holder[path[-1]] = lookup(v2, path)
    return plan


MUTATIONS = {
    "leaf": lambda t: t["ranks"][-1].update(leaf=t["ranks"][-1]["leaf"] + 1),
    "ring_order": lambda t: t["groups"]["data"][0].reverse(),
    "zero_count": lambda t: t["zero"]["slices"][-1].update(count=t["zero"]["slices"][-1]["count"] - 1),
}


def compare(v2, tables):
    same = True
    for path in TABLES:
        listed, derived = lookup(v2, path), lookup(tables, path)
        if listed != derived:
            name = ".".join(path)
            diff = next((i for i, (a, b) in enumerate(zip(listed, derived)) if a != b), min(len(listed), len(derived)))
            print(f"{name}: the derived table differs from the listed one at entry {diff} "
                  f"({len(derived)} entries derived, {len(listed)} listed)")
            same = False
    return same


if __name__ == "__main__":
    plan = json.load(open(sys.argv[2]))
    if sys.argv[1] == "listed":
        json.dump(listed(plan, json.load(open(sys.argv[3]))), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        tables = json.load(open(sys.argv[3]))
        if len(sys.argv) > 4:
            MUTATIONS[sys.argv[4]](tables)
        sys.exit(0 if compare(plan, tables) else 1)
