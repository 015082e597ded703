// The artifacts of `aviflowc FILE.avf [-o DIR]` and `emit argo|k8s|slurm`:
// lowers each plan (deploy::Lower) and spells its files (emit/manifests.h).
// Nothing is written unless every job lowered without errors, and every file
// is written to a temporary name before any is renamed into place, so a
// write error leaves the previous files as they were.
#pragma once

#include <string>
#include <vector>

#include <llvm/Support/raw_ostream.h>

#include "diag/diagnostic.h"
#include "driver/options.h"
#include "plan/plan.h"

namespace avf::driver {

// One file to write: DIR/<job>/<name> and its bytes.
struct OutputFile {
  std::string path;
  std::string text;
};

// Writes every file to FILE.tmp, then renames them all into place; after an
// I/O error (reported) the folders made for them are removed again. False
// when anything could not be written.
auto WriteOutputFiles(const std::vector<OutputFile>& files, diag::DiagnosticEngine& diags) -> bool;

// `plan --svg OUT.svg` / `--html OUT.html`: each job's picture, at OUT for
// one job and at OUT-JOB.svg (the job's name before the extension) when the
// file declares several (`several`).
auto PicturePath(const std::string& out, const std::string& job, bool several) -> std::string;
void WritePictures(const Options& o, const std::vector<plan::Plan>& plans, bool several, diag::DiagnosticEngine& diags);

// What `aviflowc FILE.avf` writes (or `emit` prints), with every diagnostic
// of lowering the plans; `check` and `plan` lower the same way and write
// nothing, so that they report what compiling would.
struct Artifacts {
  std::vector<OutputFile> files;
  std::string printed;
};

auto LowerArtifacts(const Options& o, const std::vector<plan::Plan>& plans, diag::DiagnosticEngine& diags) -> Artifacts;

void WriteArtifacts(const Options& o, const std::vector<plan::Plan>& plans, diag::DiagnosticEngine& diags,
                    llvm::raw_ostream& out);

}  // namespace avf::driver
