#include "check/job_spec.h"

#include <algorithm>
#include <initializer_list>

namespace avf::check {

namespace {

// The spelling of enumerator `v`, listed in declaration order.
template <typename E>
auto Spell(E v, std::initializer_list<std::string_view> names) -> std::string_view {
  auto i = static_cast<size_t>(v);
  return i < names.size() ? names.begin()[i] : std::string_view();
}

}  // namespace

auto Name(StorageKind v) -> std::string_view {
  return Spell(v, {"ceph", "s3", "minio", "beegfs", "lustre", "nfs", "pvc", "local"});
}
auto Name(TokenFormat v) -> std::string_view { return Spell(v, {"tokens_u16", "tokens_u32"}); }
auto Name(LrSchedule v) -> std::string_view { return Spell(v, {"cosine", "linear", "constant"}); }
auto Name(Scheduler v) -> std::string_view { return Spell(v, {"kueue", "volcano", "default"}); }
auto Name(Target v) -> std::string_view { return Spell(v, {"kubeflow", "jobset", "slurm"}); }
auto Name(TrainerKind v) -> std::string_view { return Spell(v, {"avf", "torchtitan", "megatron"}); }
auto Name(FabricKind v) -> std::string_view { return Spell(v, {"nvlink", "infiniband", "ethernet"}); }
auto Name(LengthField v) -> std::string_view { return Spell(v, {"steps", "tokens", "epochs"}); }

auto IsObjectStore(StorageKind v) -> bool {
  return v == StorageKind::Ceph || v == StorageKind::S3 || v == StorageKind::Minio;
}
auto IsFileSystem(StorageKind v) -> bool { return !IsObjectStore(v); }
auto TokenBytes(TokenFormat v) -> int { return v == TokenFormat::U32 ? 4 : 2; }

auto OwnNodes(const JobSpec& s) -> int64_t { return s.workload.gpus / std::max<int64_t>(s.hardware.gpus_per_node, 1); }

auto MostNodes(const JobSpec& s) -> int64_t {
  return s.elastic && s.elastic->max_nodes ? *s.elastic->max_nodes : OwnNodes(s);
}

}  // namespace avf::check
