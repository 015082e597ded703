#!/usr/bin/env python3
"""Checks the include graph between the source folders (docs/development.md, "Layering").

Every `#include "folder/..."` line of a file in runtime/, kernels/ or compiler/
is an edge from the file's folder to the included one. The check fails (exit 1,
one `error:` line per problem) when
  - the folder graph has a cycle (runtime/ and kernels/ together; compiler/);
  - a runtime folder includes a folder that is not below it in RUNTIME_LAYERS,
    or is missing from that table;
  - an interface folder includes an implementation folder;
  - the compiler includes anything from the runtime but runtime/plan_format/,
    or the runtime anything from the compiler;
  - a runtime library links a library of a folder that its folder does not
    include (CMakeLists.txt): the link graph stays inside the include graph,
    so it has no cycle either.
Usage: check_layering.py [ROOT] [--graph]   (ROOT: the repository, default: this
script's parent folder; --graph prints the folder edges too)
"""
import argparse
import os
import re
import sys

# The runtime's folders from the bottom up: a folder may include only folders
# of a lower layer. kernels/ (top level) is a runtime folder too.
RUNTIME_LAYERS = {
    "runtime/io": 1,           # opening input files: regular files only, never blocking
    "runtime/exposition": 1,   # Prometheus's text format and the /metrics endpoint (civetweb)
    "runtime/rendezvous": 1,   # the rank-0 key/value store
    "runtime/plan_format": 0,  # the plan.json and launch contract, shared with the compiler
    "runtime/numeric": 0,      # number formats (bf16), header-only
    "runtime/trainers": 0,     # Python for other trainers' pods, no C++ (aviflowc embeds the files)
    "runtime/optim": 1,        # AdamW, schedules, clipping
    "runtime/crypto": 2,       # SHA-256, key files, sealed (encrypted) files over OpenSSL
    "runtime/backend": 2,      # the compute backend interface (the optimizer's element types)
    "runtime/data": 2,         # token shards, the tokenizer
    "runtime/comm": 2,         # collectives over the store's rendezvous
    "runtime/plan": 2,         # plan.json -> the runtime's tables
    "runtime/cpu": 3,          # CPU kernels and the CPU backend
    "kernels": 3,              # the CUDA backend
    "runtime/model": 4,        # the transformer on a backend
    "runtime/checkpoint": 5,   # the reshardable checkpoint format: index, chunks, step directories
    "runtime/parallel": 5,     # schedules, process groups, the engine
    "runtime/interop": 5,      # safetensors, Hugging Face's GPT-2 / Llama layout and config.json
    "runtime/train": 6,        # checkpoints, metrics, the training loop
    "runtime/run": 7,          # avf-run and its launcher
}
# An interface folder never includes one of its implementations.
INTERFACES = {"runtime/backend": {"runtime/cpu", "kernels"}}
# What the compiler may include from the runtime: the plan format they share.
COMPILER_MAY_INCLUDE = {"runtime/plan_format"}

SOURCE_SUFFIXES = (".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def tree_of(folder):
    return "compiler" if folder.startswith("compiler/") else "runtime"


def folders(root):
    """Every folder that holds sources: runtime/X, compiler/X and kernels."""
    found = []
    for top in ("runtime", "compiler"):
        base = os.path.join(root, top)
        if os.path.isdir(base):
            found += [f"{top}/{d}" for d in sorted(os.listdir(base)) if os.path.isdir(os.path.join(base, d))]
    if os.path.isdir(os.path.join(root, "kernels")):
        found.append("kernels")
    return found


def resolve(root, from_folder, include, known):
    """The folder an include names, or None (same folder, generated or third-party headers)."""
    parts = include.split("/")
    if len(parts) < 2:
        return None
    if parts[0] in ("runtime", "compiler"):
        return f"{parts[0]}/{parts[1]}"
    if parts[0] == "kernels":
        return "kernels"
    # Each tree's include directory comes first, then the other's.
    order = ("compiler", "runtime") if tree_of(from_folder) == "compiler" else ("runtime", "compiler")
    for top in order:
        candidate = f"{top}/{parts[0]}"
        if candidate in known or os.path.isdir(os.path.join(root, candidate)):
            return candidate
    return None


def edges(root):
    """{(from, to): 'file:line'} for every include between two folders."""
    known = set(folders(root)) | set(RUNTIME_LAYERS)
    found = {}
    for folder in folders(root):
        for dirpath, _, files in os.walk(os.path.join(root, folder)):
            for name in sorted(files):
                if not name.endswith(SOURCE_SUFFIXES):
                    continue
                path = os.path.join(dirpath, name)
                with open(path, encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        target = m and resolve(root, folder, m.group(1), known)
                        if target and target != folder:
                            found.setdefault((folder, target), f"{os.path.relpath(path, root)}:{number}")
    return found


CMAKE_CALL = re.compile(r"\b(avf_runtime_library|add_library|add_executable|target_link_libraries)\s*\(([^)]*)\)")


def link_edges(root):
    """{(from, to): 'CMakeLists.txt:line'} for every avf library a runtime folder links from another folder."""
    owner, links = {}, []
    for folder in folders(root):
        path = os.path.join(root, folder, "CMakeLists.txt")
        if tree_of(folder) != "runtime" or not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for m in CMAKE_CALL.finditer(text):
            words = re.sub(r"#[^\n]*", "", m.group(2)).split()
            if not words:
                continue
            if m.group(1) != "target_link_libraries":
                owner[words[0]] = folder
            deps = words[words.index("DEPS") + 1:] if "DEPS" in words else []
            if m.group(1) == "target_link_libraries":
                deps = words[1:]
            line = text.count("\n", 0, m.start()) + 1
            links += [(folder, d, f"{folder}/CMakeLists.txt:{line}") for d in deps if d.startswith("avf_")]
    found = {}
    for folder, dep, where in links:
        if dep in owner and owner[dep] != folder:
            found.setdefault((folder, owner[dep]), f"{where} ({dep})")
    return found


def cycles(graph):
    """One cycle per strongly connected component of more than one folder (Tarjan)."""
    index, low, stack, on_stack, components = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(set(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [cycle_in(graph, c) for c in components]


def cycle_in(graph, component):
    """A shortest cycle through the component's first folder (breadth-first)."""
    start = min(component)
    paths = {start: [start]}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(graph.get(v, ())):
            if w == start:
                return paths[v] + [start]
            if w in component and w not in paths:
                paths[w] = paths[v] + [w]
                queue.append(w)
    return [start, start]


def problems(root):
    found = edges(root)
    graph = {}
    for a, b in found:
        graph.setdefault(a, set()).add(b)
    errors = []
    for cycle in cycles(graph):
        steps = ", ".join(f"{a} -> {b} ({found[(a, b)]})" for a, b in zip(cycle, cycle[1:]))
        errors.append(f"include cycle {' -> '.join(cycle)}: {steps}")
    for folder in folders(root):
        if tree_of(folder) == "runtime" and folder not in RUNTIME_LAYERS:
            errors.append(f"{folder} has no layer: add it to RUNTIME_LAYERS in tools/check_layering.py "
                          "and to docs/development.md")
    for (a, b), where in sorted(found.items()):
        ta, tb = tree_of(a), tree_of(b)
        if ta == "compiler" and tb == "runtime" and b not in COMPILER_MAY_INCLUDE:
            errors.append(f"{where}: the compiler includes {b}; it may include only "
                          f"{', '.join(sorted(COMPILER_MAY_INCLUDE))} from the runtime")
        elif ta == "runtime" and tb == "compiler":
            errors.append(f"{where}: {a} includes {b}; the runtime includes nothing from the compiler")
        elif b in INTERFACES.get(a, ()):
            errors.append(f"{where}: {a} is an interface and includes its implementation {b}; "
                          "the implementation includes the interface, not the other way round")
        elif ta == tb == "runtime" and a in RUNTIME_LAYERS and b in RUNTIME_LAYERS:
            if RUNTIME_LAYERS[b] >= RUNTIME_LAYERS[a]:
                errors.append(f"{where}: {a} (layer {RUNTIME_LAYERS[a]}) includes {b} (layer {RUNTIME_LAYERS[b]}); "
                              "a folder includes only folders of a lower layer")
    for (a, b), where in sorted(link_edges(root).items()):
        if (a, b) not in found:
            errors.append(f"{where}: {a} links a library of {b} but includes nothing from it; "
                          "link only what the sources include")
    return found, errors


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument("--graph", action="store_true", help="print every folder edge")
    args = parser.parse_args()
    if not os.path.isdir(os.path.join(args.root, "runtime")) and not os.path.isdir(os.path.join(args.root, "compiler")):
        print(f"check_layering: error: {args.root} has neither runtime/ nor compiler/", file=sys.stderr)
        return 2
    found, errors = problems(args.root)
    if args.graph:
        for a, b in sorted(found):
            print(f"{a} -> {b}")
    for e in errors:
        print(f"check_layering: error: {e}")
    if errors:
        return 1
    counts = {t: sum(1 for f in folders(args.root) if tree_of(f) == t) for t in ("runtime", "compiler")}
    print(f"check_layering: {counts['runtime']} runtime folders (kernels/ included) and {counts['compiler']} compiler "
          f"folders, {len(found)} folder edges, no cycle, every layer rule kept")
    return 0


if __name__ == "__main__":
    sys.exit(main())
