"""Reads a valid plan.json on standard input and writes it broken in one way,
for test/emit/validate_rejects.test: each mutation must make
`avf-run check-plan` exit 1 with a message about that mutation.

    python3 break_plan.py MUTATION < plan.json > broken.json
"""
import json
import sys


def drop_last_rank(p):
    p["ranks"].pop()


def swap_tensor_members(p):
    # Rank 1 in two tensor groups, rank 0 in none.
    p["groups"]["tensor"][0][0] = p["groups"]["tensor"][1][1]


def wrong_node(p):
    p["ranks"][9]["node"] = 0


def overlap_layers(p):
    p["stages"][1]["first_layer"] -= 1


def gap_in_data(p):
    p["data"]["slices"][1]["first_sequence"] += 1


def short_zero(p):
    p["zero"]["slices"][-1]["count"] -= 1


def more_gpus(p):
    p["training"]["gpus"] *= 2


def uneven_batch(p):
    p["training"]["global_batch"] -= 2


def huge_layout(p):
    p["layout"]["data"] = 1 << 40


def overflowing_layout(p):
    p["layout"]["data"] = 1 << 62


def missing_stage_parameters(p):
    p["stage_parameters"].pop()


def extra_key(p):
    p["layout"]["expert"] = 1


def missing_key(p):
    del p["predicted"]["mfu"]


def bad_step_time(p):
    p["predicted"]["step_time_s"] *= 1.5


def bad_span(p):
    p["predicted"]["data_group_span"]["nodes"] = 3


MUTATIONS = {f.__name__: f for f in [drop_last_rank, swap_tensor_members, wrong_node, overlap_layers, gap_in_data,
                                     short_zero, more_gpus, uneven_batch, huge_layout, overflowing_layout,
                                     missing_stage_parameters, extra_key, missing_key, bad_step_time, bad_span]}

if __name__ == "__main__":
    plan = json.load(sys.stdin)
    MUTATIONS[sys.argv[1]](plan)
    json.dump(plan, sys.stdout, indent=2)
    sys.stdout.write("\n")
