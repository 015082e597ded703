// JSON fields that `plan --format=json` and plan.json share, written once so
// the two stay the same shape.
#pragma once

#include <string>

#include "check/job_spec.h"
#include "cost/predict.h"
#include "emit/json_writer.h"

namespace avf::emit {

// The plan.json spelling of each compiler enum (plan_format/enums.def).
auto FormatName(cost::Arch v) -> std::string_view;
auto FormatName(cost::Precision v) -> std::string_view;
auto FormatName(cost::Schedule v) -> std::string_view;
auto FormatName(cost::Recompute v) -> std::string_view;
auto FormatName(cost::Attention v) -> std::string_view;
auto FormatName(cost::OptimizerKind v) -> std::string_view;
auto FormatName(check::StorageKind v) -> std::string_view;
auto FormatName(check::Target v) -> std::string_view;
auto FormatName(check::LengthField v) -> std::string_view;
auto FormatName(check::TokenFormat v) -> std::string_view;
auto FormatName(check::LrSchedule v) -> std::string_view;

// 1234567 -> "1,234,567": a whole number for people (`plan`'s table, the page).
auto GroupedDigits(double v) -> std::string;

// Bytes as a JSON integer.
auto WholeBytes(double bytes) -> int64_t;

// "layout": {data, tensor, pipeline, virtual_stages, schedule, zero,
// micro_batch, recompute, sequence_parallel}, plus `extra` fields at the end.
void LayoutField(JsonWriter& j, const cost::Layout& l, const std::function<void()>& extra = {});

// "memory_per_gpu_bytes" and "memory_breakdown_bytes", whole bytes.
void MemoryFields(JsonWriter& j, const cost::Prediction& p);

}  // namespace avf::emit
