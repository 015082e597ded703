"""Extracts the example job from README.md (the first ``` block that starts
with an import) and writes it, plus a copy with `model = docs`; with
--compare, checks that README's shown error output equals a file's text;
with --compare-block PREFIX, that the block starting with the line PREFIX
shows what a file holds."""
import sys


def blocks(readme: str) -> list[str]:
    parts = readme.split("```")
    return [parts[i].split("\n", 1)[1] for i in range(1, len(parts), 2)]


if sys.argv[1] == "--compare-block":
    readme = open(sys.argv[3]).read()
    shown = next(b for b in blocks(readme) if b.startswith(sys.argv[2] + "\n"))
    expected = shown.split("\n", 1)[1]
    actual = open(sys.argv[4]).read()
    if expected != actual:
        print("README shows:\n" + expected + "\naviflowc prints:\n" + actual)
        sys.exit(1)
    sys.exit(0)
readme_path = sys.argv[2] if sys.argv[1] == "--compare" else sys.argv[1]
readme = open(readme_path).read()
if sys.argv[1] == "--compare":
    shown = next(b for b in blocks(readme) if b.startswith("$ build/bin/aviflowc check job.avf"))
    expected = shown.split("\n", 1)[1]
    actual = open(sys.argv[3]).read()
    if expected != actual:
        print("README shows:\n" + expected + "\naviflowc prints:\n" + actual)
        sys.exit(1)
    sys.exit(0)
job = next(b for b in blocks(readme) if b.startswith('import "std/hardware"'))
open(sys.argv[2], "w").write(job)
open(sys.argv[3], "w").write(job.replace("model = llama2_7b", "model = docs"))
