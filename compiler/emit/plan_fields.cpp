#include "emit/plan_fields.h"

#include <cmath>

namespace avf::emit {

auto WholeBytes(double bytes) -> int64_t { return static_cast<int64_t>(std::llround(bytes)); }

void LayoutField(JsonWriter& j, const cost::Layout& l, const std::function<void()>& extra) {
  j.ObjectField("layout", [&] {
    j.Field("data", l.data);
    j.Field("tensor", l.tensor);
    j.Field("pipeline", l.pipeline);
    j.Field("virtual_stages", l.virtual_stages);
    j.Field("schedule", cost::Name(l.schedule));
    j.Field("zero", l.zero);
    j.Field("micro_batch", l.micro_batch);
    j.Field("recompute", cost::Name(l.recompute));
    j.Field("sequence_parallel", l.sequence_parallel);
    if (extra) extra();
  });
}

void MemoryFields(JsonWriter& j, const cost::Prediction& p) {
  const cost::MemoryBreakdown& m = p.memory;
  j.Field("memory_per_gpu_bytes", WholeBytes(p.memory_per_gpu));
  j.ObjectField("memory_breakdown_bytes", [&] {
    j.Field("weights", WholeBytes(m.weights));
    j.Field("gradients", WholeBytes(m.gradients));
    j.Field("optimizer", WholeBytes(m.optimizer));
    j.Field("activations", WholeBytes(m.activations));
    j.Field("buffers", WholeBytes(m.buffers));
  });
}

}  // namespace avf::emit
