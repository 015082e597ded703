#!/usr/bin/env python3
"""Validate an aviflow plan.json (docs/plan-format.md).

    python3 tools/validate_plan.py [--schema docs/plan.schema.json] FILE|-

Two passes: the JSON Schema (draft 2020-12, `jsonschema` package, Debian
python3-jsonschema), then the consistency rules a schema cannot state: the
rank table against the layout, process groups, stage layer ranges, data and
ZeRO slices, and the predicted totals against their parts.

Exit status: 0 valid, 1 invalid (every problem is printed to standard error as
`FILE: PATH: message`), 2 usage or I/O error.
"""

import argparse
import json
import math
import os
import sys

DEFAULT_SCHEMA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", "plan.schema.json")
# Relative tolerance for predicted numbers recomputed from their parts: the
# writer prints doubles exactly, so only the order of additions differs.
REL_TOL = 1e-9
# After this many problems the rest are counted, not printed.
MAX_SHOWN = 50


class UsageError(Exception):
    """A problem with the command line, the schema or reading a file (exit 2)."""


def load_json(text, what):
    """Parses JSON, rejecting duplicate keys and NaN/Infinity, which the
    schema cannot see once Python has read the text."""

    def no_duplicates(pairs):
        seen = {}
        for key, value in pairs:
            if key in seen:
                raise ValueError(f"duplicate key {key!r} in {what}")
            seen[key] = value
        return seen

    def no_constant(name):
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, object_pairs_hook=no_duplicates, parse_constant=no_constant)


def read_text(path):
    try:
        if path == "-":
            return sys.stdin.read()
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"cannot read {path}: {e}") from e


def path_text(parts):
    """['ranks', 3, 'node'] -> '$.ranks[3].node'"""
    out = "$"
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out


def schema_errors(plan, schema):
    try:
        import jsonschema
    except ImportError as e:
        raise UsageError("the `jsonschema` Python package is missing (Debian: apt-get install python3-jsonschema)") from e
    validator_class = jsonschema.Draft202012Validator
    try:
        validator_class.check_schema(schema)
    except jsonschema.exceptions.SchemaError as e:
        raise UsageError(f"the schema is not a valid draft 2020-12 schema: {e.message}") from e
    errors = sorted(validator_class(schema).iter_errors(plan), key=lambda e: (list(map(str, e.absolute_path)), e.message))
    return [(path_text(e.absolute_path), e.message) for e in errors]


class Checker:
    """The consistency rules of docs/plan-format.md, run on a plan that
    already matches the schema (so every key exists with its type)."""

    def __init__(self, plan):
        self.plan = plan
        self.problems = []
        layout = plan["layout"]
        self.T, self.D, self.P = layout["tensor"], layout["data"], layout["pipeline"]

    def fail(self, where, message):
        self.problems.append((where, message))

    def close(self, a, b):
        return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=1e-12)

    def run(self):
        self.check_ranks()
        self.check_groups()
        self.check_stages()
        self.check_data()
        self.check_zero()
        self.check_training()
        self.check_predicted()
        return self.problems

    def check_ranks(self):
        plan, T, D, P = self.plan, self.T, self.D, self.P
        ranks = plan["ranks"]
        hw = plan["hardware"]
        world = T * D * P
        if len(ranks) != world:
            self.fail("$.ranks", f"{len(ranks)} ranks, but data x tensor x pipeline = {D} x {T} x {P} = {world}")
        if plan["training"]["gpus"] != world:
            self.fail("$.training.gpus", f"{plan['training']['gpus']} GPUs, but the layout has {world} ranks")
        per_node, per_leaf = hw["gpus_per_node"], hw["nodes_per_leaf"]
        for i, r in enumerate(ranks):
            where = f"$.ranks[{i}]"
            if r["rank"] != i:
                self.fail(where + ".rank", f"rank {r['rank']} at position {i}; ranks must be listed in order")
                continue
            want = {"tensor": i % T, "data": i // T % D, "pipeline": i // (T * D),
                    "node": i // per_node, "gpu": i % per_node,
                    "leaf": i // per_node // per_leaf if per_leaf > 0 else 0}
            for key, value in want.items():
                if r[key] != value:
                    self.fail(f"{where}.{key}", f"rank {i} has {key} {r[key]}, expected {value} "
                              "(rank = tensor + T*(data + D*pipeline), node = rank / gpus_per_node)")
            if r["node"] >= hw["nodes"]:
                self.fail(where + ".node", f"node {r['node']} is beyond the {hw['nodes']} nodes the job uses")
            if r["leaf"] >= hw["leaves"]:
                self.fail(where + ".leaf", f"leaf {r['leaf']} is beyond the {hw['leaves']} leaves the job uses")
        nodes = -(-world // per_node)
        if hw["nodes"] != nodes:
            self.fail("$.hardware.nodes", f"{hw['nodes']} nodes, but {world} ranks on {per_node} GPUs per node need {nodes}")
        if hw["nodes"] > hw["cluster_nodes"]:
            self.fail("$.hardware.nodes", f"{hw['nodes']} nodes used, but the cluster has {hw['cluster_nodes']}")

    def coords(self, rank):
        T, D = self.T, self.D
        return rank % T, rank // T % D, rank // (T * D)

    def check_group_kind(self, kind, groups, axis, members, expected_groups):
        """Each rank in `members` is in exactly one group; a group's ranks
        differ only along `axis` (0 tensor, 1 data, 2 pipeline)."""
        where = f"$.groups.{kind}"
        world = self.T * self.D * self.P
        seen = {}
        for gi, group in enumerate(groups):
            for rank in group:
                if rank >= world:
                    self.fail(f"{where}[{gi}]", f"rank {rank} does not exist ({world} ranks)")
                elif rank in seen:
                    self.fail(f"{where}[{gi}]", f"rank {rank} is also in {kind} group {seen[rank]}")
                else:
                    seen[rank] = gi
            fixed = {tuple(c for k, c in enumerate(self.coords(r)) if k != axis) for r in group if r < world}
            if len(fixed) > 1:
                self.fail(f"{where}[{gi}]", f"ranks {group} differ in more than the {kind} coordinate")
        missing = sorted(set(members) - set(seen))
        if missing:
            self.fail(where, f"ranks {missing[:8]}{' ...' if len(missing) > 8 else ''} are in no {kind} group")
        extra = sorted(set(seen) - set(members))
        if extra:
            self.fail(where, f"ranks {extra[:8]}{' ...' if len(extra) > 8 else ''} must not be in a {kind} group")
        if len(groups) != expected_groups:
            self.fail(where, f"{len(groups)} {kind} groups, expected {expected_groups}")

    def check_groups(self):
        plan, T, D, P = self.plan, self.T, self.D, self.P
        groups = plan["groups"]
        everyone = range(T * D * P)
        self.check_group_kind("tensor", groups["tensor"], 0, everyone, D * P)
        self.check_group_kind("data", groups["data"], 1, everyone, T * P)
        self.check_group_kind("pipeline", groups["pipeline"], 2, everyone, T * D)
        self.check_group_order(groups)
        self.check_data_span(groups["data"])
        tied = plan["model"]["tied_embeddings"] and P > 1
        if tied != ("embedding" in groups):
            self.fail("$.groups", "an `embedding` group list belongs exactly to tied embeddings with pipeline > 1")
        if tied and "embedding" in groups:
            ends = [r for r in everyone if self.coords(r)[2] in (0, P - 1)]
            self.check_group_kind("embedding", groups["embedding"], 2, ends, T * D)
            for gi, g in enumerate(groups["embedding"]):
                if sorted(self.coords(r)[2] for r in g) != [0, P - 1]:
                    self.fail(f"$.groups.embedding[{gi}]", "an embedding group joins one first-stage and one last-stage rank")

    def check_group_order(self, groups):
        """Groups and their members in the documented order (docs/plan-format.md, groups)."""
        T, D, P = self.T, self.D, self.P

        def rank(t, d, p):
            return t + T * (d + D * p)

        expected = {
            "tensor": [[rank(t, d, p) for t in range(T)] for p in range(P) for d in range(D)],
            "data": [[rank(t, d, p) for d in range(D)] for p in range(P) for t in range(T)],
            "pipeline": [[rank(t, d, p) for p in range(P)] for d in range(D) for t in range(T)],
            "embedding": [[rank(t, d, 0), rank(t, d, P - 1)] for d in range(D) for t in range(T)],
        }
        for kind, lists in groups.items():
            if lists != expected[kind]:
                index = next((i for i, (a, b) in enumerate(zip(lists, expected[kind])) if a != b), len(lists))
                self.fail(f"$.groups.{kind}[{index}]", f"{kind} groups are not in the documented order "
                          f"(group {index} should be {expected[kind][index] if index < len(expected[kind]) else 'absent'})")

    def check_data_span(self, data_groups):
        """predicted.data_group_span: the nodes and leaves of the widest data group."""
        ranks = self.plan["ranks"]
        if len(ranks) != self.T * self.D * self.P:
            return
        nodes = max(len({ranks[r]["node"] for r in g if r < len(ranks)}) for g in data_groups)
        leaves = max(len({ranks[r]["leaf"] for r in g if r < len(ranks)}) for g in data_groups)
        span = self.plan["predicted"]["data_group_span"]
        if (span["nodes"], span["leaves"]) != (nodes, leaves):
            self.fail("$.predicted.data_group_span", f"{span['nodes']} nodes, {span['leaves']} leaves, but the widest "
                      f"data group spans {nodes} nodes, {leaves} leaves")

    def check_stages(self):
        plan, P = self.plan, self.P
        layout, layers = plan["layout"], plan["model"]["layers"]
        stages = plan["stages"]
        chunks = layout["virtual_stages"] if layout["schedule"] == "interleaved" else 1
        keys = sorted((c["stage"], c["chunk"]) for c in stages)
        want = [(s, c) for s in range(P) for c in range(chunks)]
        if keys != want:
            self.fail("$.stages", f"(stage, chunk) pairs {keys[:6]}..., expected every stage 0..{P - 1} "
                      f"with chunks 0..{chunks - 1} once")
        owner = [None] * layers
        for i, c in enumerate(stages):
            where = f"$.stages[{i}]"
            first, n = c["first_layer"], c["layers"]
            if first + n > layers:
                self.fail(where, f"layers {first}..{first + n - 1} run past the model's {layers} layers")
            for layer in range(first, min(first + n, layers)):
                if owner[layer] is not None:
                    self.fail(where, f"layer {layer} is also held by stages[{owner[layer]}]")
                owner[layer] = i
            block = c["chunk"] * P + c["stage"]
            if first != block * n:
                self.fail(where + ".first_layer", f"chunk {c['chunk']} of stage {c['stage']} must hold layer block "
                          f"{block} (chunk x pipeline + stage), i.e. start at layer {block * n}")
            if c["embedding"] != (first == 0):
                self.fail(where + ".embedding", "the embedding belongs to the chunk that holds layer 0")
            if c["output"] != (first + n == layers):
                self.fail(where + ".output", "the output layer belongs to the chunk that holds the last layer")
        unheld = [i for i, o in enumerate(owner) if o is None]
        if unheld:
            self.fail("$.stages", f"layers {unheld[:8]}{' ...' if len(unheld) > 8 else ''} are held by no stage")
        if len(plan["stage_parameters"]) != P:
            self.fail("$.stage_parameters", f"{len(plan['stage_parameters'])} entries, expected one per stage ({P})")

    def check_data(self):
        plan, D = self.plan, self.D
        data = plan["data"]
        slices = data["slices"]
        tokens, shards = data["tokens"], data["shards"]
        shard_tokens = max(tokens // shards, 1)
        if len(slices) != D:
            self.fail("$.data.slices", f"{len(slices)} slices, expected one per data-parallel rank ({D})")
        next_token = 0
        batch = plan["training"]["global_batch"]
        for i, s in enumerate(slices):
            where = f"$.data.slices[{i}]"
            if s["data_rank"] != i:
                self.fail(where + ".data_rank", f"data rank {s['data_rank']} at position {i}")
            if s["first_token"] != next_token:
                self.fail(where + ".first_token", f"starts at token {s['first_token']}, but the previous slice ends "
                          f"at {next_token} (slices must be contiguous)")
            end = s["first_token"] + s["tokens"]
            next_token = end
            first_shard = min(s["first_token"] // shard_tokens, shards - 1)
            last_shard = min(max(end - 1, 0) // shard_tokens, shards - 1)
            if (s["first_shard"], s["last_shard"]) != (first_shard, last_shard):
                self.fail(where, f"shards {s['first_shard']}..{s['last_shard']}, but tokens "
                          f"{s['first_token']}..{end - 1} lie in shards {first_shard}..{last_shard}")
            if s["sequences_per_step"] * D != batch:
                self.fail(where + ".sequences_per_step", f"{s['sequences_per_step']} x {D} data ranks != global "
                          f"batch {batch}")
        if next_token != tokens:
            self.fail("$.data.slices", f"slices end at token {next_token}, but the dataset has {tokens}")
        if data["format"] == "tokens_u16" and data["token_bytes"] != 2 or \
           data["format"] == "tokens_u32" and data["token_bytes"] != 4:
            self.fail("$.data.token_bytes", f"{data['token_bytes']} bytes per token for {data['format']}")

    def check_zero(self):
        plan, D, P = self.plan, self.D, self.P
        zero = plan["zero"]
        if zero["stage"] != plan["layout"]["zero"]:
            self.fail("$.zero.stage", f"ZeRO stage {zero['stage']}, but the layout has zero = {plan['layout']['zero']}")
        if zero["stage"] == 0:
            if zero["slices"]:
                self.fail("$.zero.slices", "ZeRO stage 0 shards nothing; slices must be empty")
            return
        by_stage = {}
        for i, z in enumerate(zero["slices"]):
            by_stage.setdefault(z["stage"], []).append((i, z))
        if sorted(by_stage) != list(range(P)):
            self.fail("$.zero.slices", f"slices for stages {sorted(by_stage)}, expected 0..{P - 1}")
        for stage, items in sorted(by_stage.items()):
            if stage >= len(plan["stage_parameters"]):
                continue
            total = plan["stage_parameters"][stage]
            if [z["data_rank"] for _, z in items] != list(range(D)):
                self.fail("$.zero.slices", f"stage {stage} has data ranks {[z['data_rank'] for _, z in items]}, "
                          f"expected 0..{D - 1} in order")
            offset = 0
            for i, z in items:
                if z["first"] != offset:
                    self.fail(f"$.zero.slices[{i}].first", f"starts at {z['first']}, expected {offset} (contiguous)")
                offset = z["first"] + z["count"]
            if offset != total:
                self.fail("$.zero.slices", f"stage {stage}'s slices cover {offset} parameters, but the stage has {total}")

    def check_training(self):
        plan = self.plan
        t, layout, model = plan["training"], plan["layout"], plan["model"]
        if t["micro_batch"] != layout["micro_batch"]:
            self.fail("$.training.micro_batch", f"{t['micro_batch']} != layout.micro_batch {layout['micro_batch']}")
        per_pipeline = self.D * layout["micro_batch"]
        if t["global_batch"] % per_pipeline or t["micro_batches_per_step"] != t["global_batch"] // per_pipeline:
            self.fail("$.training.micro_batches_per_step", f"{t['micro_batches_per_step']} micro-batches, but "
                      f"global batch {t['global_batch']} / (data {self.D} x micro_batch {layout['micro_batch']})")
        if t["tokens_per_step"] != t["global_batch"] * model["seq_len"]:
            self.fail("$.training.tokens_per_step", "tokens_per_step != global_batch x seq_len")
        if not self.close(t["tokens"], t["steps"] * t["tokens_per_step"]):
            self.fail("$.training.tokens", f"{t['tokens']} tokens != steps x tokens_per_step")

    def check_predicted(self):
        plan = self.plan
        p, hw, t = plan["predicted"], plan["hardware"], plan["training"]
        parts = p["memory_breakdown_bytes"]
        if abs(sum(parts.values()) - p["memory_per_gpu_bytes"]) > len(parts):
            self.fail("$.predicted.memory_per_gpu_bytes", f"{p['memory_per_gpu_bytes']} != the sum of its breakdown "
                      f"({sum(parts.values())})")
        if p["fits"] != (p["memory_per_gpu_bytes"] <= hw["gpu_memory_bytes"]):
            self.fail("$.predicted.fits", f"fits is {p['fits']}, but {p['memory_per_gpu_bytes']} bytes vs "
                      f"{hw['gpu_memory_bytes']} of GPU memory")
        expect = {
            "step_time_s": sum(p["time_breakdown_s"].values()),
            "tokens_per_s": t["tokens_per_step"] / p["step_time_s"],
            "time_to_train_s": t["steps"] * p["step_time_s"],
            "gpu_hours": p["time_to_train_s"] / 3600 * t["gpus"],
            "mfu": p["tflops_per_gpu"] * 1e12 / hw["peak_flops"],
        }
        for key, value in expect.items():
            if not self.close(p[key], value):
                self.fail(f"$.predicted.{key}", f"{p[key]!r}, but its parts give {value!r}")
        price = hw["gpu_hour_price"]
        if (price is None) != (p["cost"] is None):
            self.fail("$.predicted.cost", "cost is null exactly when hardware.gpu_hour_price is null")
        elif price is not None and not self.close(p["cost"], p["gpu_hours"] * price):
            self.fail("$.predicted.cost", f"{p['cost']!r} != gpu_hours x gpu_hour_price")


def validate(text, schema, name):
    try:
        plan = load_json(text, name)
    except ValueError as e:
        return [("$", f"not JSON: {e}")], None
    problems = schema_errors(plan, schema)
    if problems:
        return problems, None
    return Checker(plan).run(), plan


def main(argv):
    parser = argparse.ArgumentParser(description="Validate an aviflow plan.json (schema and consistency).")
    parser.add_argument("--schema", default=DEFAULT_SCHEMA, help="JSON Schema (default: docs/plan.schema.json)")
    parser.add_argument("file", help="plan.json, or - for standard input")
    args = parser.parse_args(argv)
    name = "<stdin>" if args.file == "-" else args.file
    try:
        try:
            schema = load_json(read_text(args.schema), args.schema)
        except ValueError as e:
            raise UsageError(f"cannot read the schema {args.schema}: {e}") from e
        problems, plan = validate(read_text(args.file), schema, name)
    except UsageError as e:
        print(f"validate_plan: error: {e}", file=sys.stderr)
        return 2
    for where, message in problems[:MAX_SHOWN]:
        print(f"{name}: {where}: {message}", file=sys.stderr)
    if len(problems) > MAX_SHOWN:
        print(f"{name}: {len(problems) - MAX_SHOWN} more problems not shown", file=sys.stderr)
    if problems:
        print(f"{name}: invalid plan ({len(problems)} problem{'s' if len(problems) != 1 else ''})", file=sys.stderr)
        return 1
    print(f"{name}: valid aviflow plan version {plan['version']}: job {plan['job']['name']}, {len(plan['ranks'])} rank{'s' if len(plan['ranks']) != 1 else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
