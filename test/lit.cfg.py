# lit configuration for aviflowc. Tests live in test/<phase>/; a test is an
# .avf file (or a .test script) with `// RUN:` lines and FileCheck patterns.
import os
import shutil
import subprocess

import lit.formats

config.name = "aviflowc"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".avf", ".test"]
config.excludes = ["Inputs", "lit.cfg.py", "fuzz"]
config.test_source_root = os.path.dirname(__file__)
# A second run of the suite (against the sanitizer build) writes its %t files
# elsewhere, so that both runs can go at once.
config.test_exec_root = os.environ.get("AVIFLOW_TEST_EXEC_ROOT", os.path.join(config.aviflow_obj_root, "test"))

src = config.aviflow_src_root
config.substitutions.append(("%aviflowc", config.aviflowc_path))
# The runtime's executable (avf-run), for the tests of test/run.
config.substitutions.append(("%avfrun", config.avf_run_path))
config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(("%stdlib", os.path.join(src, "stdlib")))
config.substitutions.append(("%examples", os.path.join(src, "examples")))
config.substitutions.append(("%srcroot", src))
config.substitutions.append(("%shared", os.path.join(src, "..", "shared")))
# Test-only tools (avf-calibrate, ...) built beside aviflowc.
config.substitutions.append(("%bindir", config.aviflow_bin_dir))

config.environment["PATH"] = os.pathsep.join(
    [config.llvm_tools_dir, config.environment.get("PATH", os.environ.get("PATH", ""))])
# Diagnostics must not depend on the terminal the suite runs in.
config.environment.pop("TERM", None)
for var in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
    if var in os.environ:
        config.environment[var] = os.environ[var]

# `cuda`: a GPU is present, so runtime and kernel tests run (REQUIRES: cuda).
if os.path.exists("/dev/nvidia0") or shutil.which("nvidia-smi"):
    config.available_features.add("cuda")
if config.have_cuda_toolkit:
    config.available_features.add("cuda-toolkit")
# `avf-run-gpu`: the avf-run under test was built with CUDA and NCCL, so its
# preflight checks GPUs (the sanitizer build has no CUDA).
try:
    preflight_help = subprocess.run([config.avf_run_path, "preflight", "--help"], capture_output=True, text=True,
                                    timeout=60).stdout
    if "gpu (default" in preflight_help:
        config.available_features.add("avf-run-gpu")
except (OSError, subprocess.SubprocessError):
    pass
# `sanitized`: the run against the ASan/UBSan build (test/CMakeLists.txt).
# There %big, the size of the robustness tests' huge inputs, is 100 000
# instead of 1 000 000: the same code paths at a tenth of the sanitizers' cost.
sanitized = os.environ.get("AVIFLOW_TEST_SANITIZED") == "1"
if sanitized:
    config.available_features.add("sanitized")
config.substitutions.append(("%big", "100000" if sanitized else "1000000"))
# `shared`: the project's ../shared folder (schemas, validators) is present.
if os.path.isdir(os.path.join(src, "..", "shared")):
    config.available_features.add("shared")
# `proc-self-mem`: /proc/self/mem exists and fails to read from offset 0
# (Linux), so a test can meet an unreadable file even when run as root.
try:
    with open("/proc/self/mem", "rb") as f:
        f.read(1)
except OSError:
    config.available_features.add("proc-self-mem")

# `vscode-extension`: node and npm are on the PATH and tools/vscode's packages
# are installed (tools/setup.sh runs `npm ci` there), for test/vscode.
vscode_modules = os.path.join(src, "tools", "vscode", "node_modules")
if (all(shutil.which(t, path=config.environment["PATH"]) for t in ("node", "npm"))
        and all(os.path.exists(os.path.join(vscode_modules, m)) for m in ("vscode-textmate", ".bin/vsce"))):
    config.available_features.add("vscode-extension")
else:
    lit_config.note("test/vscode is skipped: it needs node, npm and tools/vscode/node_modules "
                    "(tools/setup.sh runs `npm ci` there)")

# numpy in %python: the independent reading of exported Hugging Face models
# (test/run/Inputs/hf_reference.py).
if subprocess.run([config.python_executable, "-c", "import numpy"], capture_output=True).returncode == 0:
    config.available_features.add("numpy")

# `promtool`: Prometheus's rule checker is on the PATH (test/monitoring checks
# and unit-tests the emitted alerts with it); `prometheus`: the server itself,
# for the end-to-end scrape of a running avf-run.
for tool in ("promtool", "prometheus"):
    if shutil.which(tool, path=config.environment["PATH"]):
        config.available_features.add(tool)

# `nvim`: Neovim (Debian's `neovim`), whose built-in LSP client drives
# `aviflowc lsp` in test/lsp/nvim.test.
if shutil.which("nvim", path=config.environment["PATH"]):
    config.available_features.add("nvim")
else:
    lit_config.note("test/lsp/nvim.test is skipped: it needs nvim (tools/install-deps.sh installs neovim)")
# `xmllint` (libxml2-utils) and `rsvg-convert` (librsvg2-bin) check and
# render the plan's SVG pictures; `chromium` loads the plan's web page
# headless (test/pictures).
for tool in ("xmllint", "rsvg-convert", "chromium"):
    if shutil.which(tool, path=config.environment["PATH"]):
        config.available_features.add(tool)
    else:
        lit_config.note(f"the tests of test/pictures that need {tool} are skipped: tools/install-deps.sh installs it")

# `slurm`: Debian's slurm-wlm and munge are installed and this is root, who
# alone may start slurmd and munged for a one-machine Slurm
# (test/run/slurm_batch.test submits an emitted batch script to it).
if all(shutil.which(t, path=config.environment["PATH"] + ":/usr/sbin")
       for t in ("slurmctld", "slurmd", "sbatch", "munged", "rclone")) and os.geteuid() == 0:
    config.available_features.add("slurm")
else:
    lit_config.note("test/run/slurm_batch.test is skipped: it needs root and slurmctld, slurmd, sbatch, munged and "
                    "rclone (tools/install-deps.sh installs them)")
