// Data, storage and hardware checks of one job (docs/cli.md, check).
#include <cmath>

#include <fmt/format.h>

#include "check/check.h"
#include "check/rules.h"
#include "units/quantity.h"

namespace avf::check {

namespace {

using diag::DiagId;

auto NodesSpanned(const JobSpec& s) -> int64_t {
  int64_t per_node = std::max<int64_t>(s.hardware.gpus_per_node, 1);
  return (s.workload.gpus + per_node - 1) / per_node;
}

void CheckHotTier(const JobSpec& s, diag::DiagnosticEngine& diags) {
  const DatasetSpec& ds = s.dataset;
  if (!ds.stage_to) return;
  const Location& hot = *ds.stage_to;
  if (!IsFileSystem(hot.storage_kind)) {
    diags.Report(DiagId::StageToNotFileSystem, s.at.stage_to, ds.name, Name(hot.storage_kind), hot.storage)
        .Note(s.at.hot_decl, "storage declared here")
        .Help("stage to a file-system tier (`beegfs`, `lustre`, `nfs` or `pvc`)");
    return;
  }
  double need = static_cast<double>(ds.tokens) * ds.token_bytes;
  if (!hot.capacity || need <= *hot.capacity) return;
  auto d = diags.Report(DiagId::HotTierTooSmall, s.at.stage_to, ds.name, BytesText(need), hot.storage,
                        BytesText(*hot.capacity));
  d.Note(s.at.dataset_tokens,
         fmt::format("{} tokens x {} bytes ({}) in {} shard{} of {}", CountText(ds.tokens), ds.token_bytes,
                     Name(ds.format), ds.shards, ds.shards == 1 ? "" : "s", BytesText(need / ds.shards)))
      .Note(s.at.hot_capacity, "capacity declared here");
  if (std::string hint = BytePrefixHint(s.at.hot_capacity, *hot.capacity, {}, need); !hint.empty()) d.Help(hint);
  d.Help("stage a subset of the shards, or read the dataset in place without `stage_to`");
}

void CheckTrainingTokens(const JobSpec& s, diag::DiagnosticEngine& diags) {
  const DatasetSpec& ds = s.dataset;
  double per_step = static_cast<double>(s.workload.global_batch) * static_cast<double>(s.workload.model.seq_len);
  double have = static_cast<double>(ds.tokens);
  if (have < per_step) {
    // Rounded figures can look equal ("262K" and "262K"); then print them whole.
    bool exact = CountText(have) == CountText(per_step);
    auto text = [&](double v) { return exact ? fmt::format("{:.0f}", v) : CountText(v); };
    diags.Report(DiagId::DatasetSmallerThanBatch, s.at.dataset_tokens, ds.name, text(have), s.name, text(per_step))
        .Note(s.at.batch,
              fmt::format("{} sequences x {} tokens per step", s.workload.global_batch, s.workload.model.seq_len));
    return;
  }
  // `epochs` asks for repetition explicitly; steps and tokens do not. The
  // written length counts, not the steps it rounds up to.
  double wanted = s.requested_tokens;
  if (s.length_field == LengthField::Epochs || wanted <= have) return;
  diags
      .Report(DiagId::DatasetRepeats, s.at.length, s.name, CountText(wanted), ds.name, CountText(have),
              fmt::format("{:.2f}", wanted / have))
      .Note(s.at.dataset_tokens, "dataset size declared here")
      .Help(fmt::format("write `epochs = {:.2f}` to say the repetition is intended", wanted / have));
}

void CheckReachable(const JobSpec& s, const Location& loc, llvm::SMRange at, DataChecked& checked,
                    diag::DiagnosticEngine& diags) {
  int64_t nodes = NodesSpanned(s);
  if (loc.storage_kind != StorageKind::Local || nodes <= 1 || checked.one_machine) return;
  // Jobs sharing a dataset or checkpoint field hear about it once.
  if (!checked.unreachable.insert(at.Start.getPointer()).second) return;
  diags.Report(DiagId::StorageNotShared, at, loc.storage, nodes, s.name)
      .Help("use a shared tier (`beegfs`, `lustre`, `nfs`, `pvc` or an object store) for multi-node jobs");
}

// The dataset's token width holds every id of the model's vocabulary.
void CheckFormatFits(const JobSpec& s, const DatasetSpec& ds, llvm::SMRange format, DataChecked& checked,
                     diag::DiagnosticEngine& diags) {
  int64_t vocab = s.workload.model.vocab;
  if (ds.token_bytes != 2 || vocab <= 65536 || !checked.formats.insert({ds.name, s.model_name}).second) return;
  diags.Report(DiagId::VocabTooLargeForFormat, format, vocab, Name(ds.format))
      .Note(s.at.vocab, fmt::format("model `{}` has `vocab = {}`", s.model_name, vocab))
      .Help("`tokens_u16` holds token ids below 65,536; use `format = tokens_u32`");
}

// Held-out data is read in place from a file-system tier (the trainer reads
// shard files; only the training data is staged), in the model's token width.
void CheckValidation(const JobSpec& s, DataChecked& checked, diag::DiagnosticEngine& diags) {
  const ValidationSpec& v = *s.validation;
  const DatasetSpec& ds = v.dataset;
  if (ds.name == s.dataset.name) {
    diags.Report(DiagId::ValidationIsTrainingData, s.at.validation_data, s.name, ds.name)
        .Help("declare a held-out dataset, shards the job does not train on, for `validation.data`");
    return;
  }
  CheckFormatFits(s, ds, s.at.validation_format, checked, diags);
  // Jobs that share a held-out dataset hear about its tiers once.
  if (!checked.datasets.insert("validation " + ds.name).second) return;
  if (ds.stage_to) {
    diags.Report(DiagId::ValidationStaged, s.at.validation_stage_to, ds.name)
        .Note(s.at.validation_data, "used for validation here")
        .Help("remove `stage_to`: put the held-out shards on a file-system tier the trainer reads");
  } else if (ds.source.valid() && !IsFileSystem(ds.source.storage_kind)) {
    diags
        .Report(DiagId::ValidationNotFiles, s.at.validation_source, ds.name, Name(ds.source.storage_kind),
                ds.source.storage)
        .Note(s.at.validation_data, "used for validation here")
        .Help(
            "held-out data is read in place: put its shards on a file-system tier (`beegfs`, `lustre`, `nfs`, "
            "`pvc` or `local`)");
  }
}

// The pretrained weights are read in place, as files; encrypted checkpoints
// need a folder to be written to.
void CheckInitAndEncrypt(const JobSpec& s, diag::DiagnosticEngine& diags) {
  if (s.init && !IsFileSystem(s.init->storage_kind)) {
    diags.Report(DiagId::InitNotFileSystem, s.at.init, s.name, Name(s.init->storage_kind), s.init->storage)
        .Help(
            "init must be on a file-system tier (`beegfs`, `lustre`, `nfs`, `pvc` or `local`); copy the folder "
            "(config.json, model.safetensors) there");
  }
  const CheckpointSpec& c = s.checkpoint;
  if (c.enabled && !c.encrypt_secret.empty() && !c.dir) {
    diags.Report(DiagId::EncryptWithoutCheckpointDir, s.at.encrypt, s.name)
        .Help("add `dir = HOT_TIER / \"ckpt/" + s.name + "\"` to the checkpoint record, or remove `encrypt`");
  }
}

}  // namespace

void CheckData(const JobSpec& s, DataChecked& checked, diag::DiagnosticEngine& diags) {
  const DatasetSpec& ds = s.dataset;
  CheckFormatFits(s, ds, s.at.format, checked, diags);
  if (checked.datasets.insert(ds.name).second) CheckHotTier(s, diags);
  CheckTrainingTokens(s, diags);
  if (s.validation) CheckValidation(s, checked, diags);
  CheckInitAndEncrypt(s, diags);
}

void CheckStorage(const JobSpec& s, DataChecked& checked, diag::DiagnosticEngine& diags) {
  // The trainer reads the staged copy when there is one, else the source.
  if (s.dataset.stage_to) CheckReachable(s, *s.dataset.stage_to, s.at.stage_to, checked, diags);
  else if (s.dataset.source.valid()) CheckReachable(s, s.dataset.source, s.at.dataset_source, checked, diags);
  if (s.init) CheckReachable(s, *s.init, s.at.init, checked, diags);
  if (s.validation && s.validation->dataset.source.valid() && s.validation->dataset.name != s.dataset.name) {
    CheckReachable(s, s.validation->dataset.source, s.at.validation_source, checked, diags);
  }
  const CheckpointSpec& c = s.checkpoint;
  if (!c.dir) return;
  if (!IsFileSystem(c.dir->storage_kind)) {
    diags.Report(DiagId::CheckpointNotFileSystem, s.at.checkpoint_dir, Name(c.dir->storage_kind), c.dir->storage)
        .Help("write checkpoints to a file-system tier and copy them out with `export`");
    return;
  }
  CheckReachable(s, *c.dir, s.at.checkpoint_dir, checked, diags);
}

void CheckHardware(const JobSpec& s, diag::DiagnosticEngine& diags) {
  const cost::Hardware& hw = s.hardware;
  if (hw.peak_flops <= 0) {
    std::string_view precision = cost::Name(s.workload.precision);
    diags.Report(DiagId::MissingPrecisionRate, s.at.precision, s.name, precision, s.gpu_name, precision)
        .Note(s.at.gpu_decl, "gpu declared here")
        .Help(fmt::format("declare `{} = ...TFLOP/s` in gpu `{}`, or train in `bf16`", precision, s.gpu_name));
    return;
  }
  // Figures so small that a step would outlast the universe: a unit typo,
  // reported instead of predicting an infinite step.
  struct Figure {
    double value, minimum;
    units::Dimension dim;
    const char *field, *kind;
    const std::string& name;
    llvm::SMRange at;
  };
  auto floor = [&](const Figure& f) {
    if (f.value >= f.minimum) return;
    diags.Report(DiagId::HardwareFigureTooSmall, f.at, f.field, f.kind, f.name,
                 units::Quantity::Real(f.value, f.dim).DisplayText(),
                 units::Quantity::Real(f.minimum, f.dim).DisplayText());
  };
  const char* rate_field = s.workload.precision == cost::Precision::Fp32 ? "fp32" : "bf16";
  floor({hw.peak_flops, 1e9, units::kComputeRate, rate_field, "gpu", s.gpu_name, s.at.gpu_decl});
  floor({hw.hbm_bandwidth, 1e6, units::kBandwidth, "memory_bw", "gpu", s.gpu_name, s.at.gpu_decl});
  floor({hw.nvlink_bandwidth, 1e6, units::kBandwidth, "bandwidth", "the NVLink fabric of node", s.node_name,
         s.at.node_decl});
  if (NodesSpanned(s) <= 1) return;
  floor({hw.nic_bandwidth, 1e6, units::kBandwidth, "bandwidth", "network", s.network_name, s.at.cluster_decl});
  if (hw.nics_per_node == 0) {
    diags.Report(DiagId::NoComputeNics, s.at.gpus, s.name, NodesSpanned(s), s.node_name)
        .Note(s.at.node_decl, "node type declared here")
        .Help("a job on several nodes needs compute NICs; set `nics`, or use at most one node's GPUs");
  }
}

}  // namespace avf::check
