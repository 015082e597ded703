#include "cost/predict.h"
#include "cost/shape.h"

namespace avf::cost {

auto Name(Arch a) -> std::string_view { return a == Arch::Llama ? "llama" : "gpt2"; }

auto Name(OptimizerKind k) -> std::string_view { return k == OptimizerKind::Sgd ? "sgd" : "adamw"; }

auto Name(Attention a) -> std::string_view { return a == Attention::Materialized ? "materialized" : "flash"; }

auto Name(Precision p) -> std::string_view {
  switch (p) {
    case Precision::Bf16: return "bf16";
    case Precision::Fp16: return "fp16";
    case Precision::Fp32: return "fp32";
  }
  return "bf16";
}

auto Name(Schedule s) -> std::string_view {
  switch (s) {
    case Schedule::OneFOneB: return "one_f_one_b";
    case Schedule::Interleaved: return "interleaved";
    case Schedule::GPipe: return "gpipe";
  }
  return "one_f_one_b";
}

auto Name(Recompute r) -> std::string_view {
  switch (r) {
    case Recompute::None: return "none";
    case Recompute::Selective: return "selective";
    case Recompute::Full: return "full";
  }
  return "none";
}

auto Name(LayoutClass c) -> std::string_view {
  switch (c) {
    case LayoutClass::Sharded: return "Sharded";
    case LayoutClass::ModelParallel: return "ModelParallel";
    case LayoutClass::DataParallel: return "DataParallel";
  }
  return "DataParallel";
}

}  // namespace avf::cost
