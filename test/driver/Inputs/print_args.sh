#!/bin/sh
# A stand-in for avf-run (AVIFLOW_AVF_RUN) in tests of `aviflowc run --local`:
# prints each argument on a line of its own, and the node it was started as.
echo "node: ${PET_NODE_RANK:-unset}"
for arg in "$@"; do
  printf 'arg: %s\n' "$arg"
done
