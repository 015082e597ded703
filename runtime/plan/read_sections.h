// plan.json text -> JSON -> RunPlan, for the reader (read_plan.cpp) and
// check-plan (check_keys.cpp), which read the same JSON value. One reader per
// section of plan.json (plan-format.md, in its order); each reports type and
// range problems into the Problems behind the Node and leaves defaults where
// a value could not be read.
#pragma once

#include <optional>

#include "plan/json_reader.h"
#include "plan/plan.h"
#include "plan/problems.h"

namespace avf::runtime {

// The JSON value of plan.json text: not blank, nesting and duplicate keys
// checked before llvm::json::parse; nullopt, reported, otherwise.
auto ParseJsonText(llvm::StringRef text, Problems& problems) -> std::optional<llvm::json::Value>;

// The plan in a parsed plan.json: format and version, every section, then
// ValidatePlan; `name` prefixes every message.
auto PlanOfJson(const llvm::json::Value& value, llvm::StringRef name) -> llvm::Expected<ValidPlan>;

void ReadJob(const Node& n, PlanJob& out);
void ReadModel(const Node& n, PlanModel& out);
void ReadHardware(const Node& n, PlanHardware& out);
void ReadTraining(const Node& n, PlanTraining& out);
void ReadLayout(const Node& n, PlanLayout& out);
void ReadRanks(const Node& n, std::vector<PlanRank>& out);
void ReadGroups(const Node& n, PlanGroups& out);
void ReadStages(const Node& n, std::vector<PlanStage>& out);
void ReadStageParameters(const Node& n, std::vector<int64_t>& out);
void ReadData(const Node& n, PlanData& out);
void ReadValidation(const Node& n, std::optional<PlanValidation>& out);
void ReadZero(const Node& n, PlanZero& out);
void ReadOptimizer(const Node& n, PlanOptimizer& out);
void ReadCheckpoint(const Node& n, std::optional<PlanCheckpoint>& out);
void ReadInit(const Node& n, std::optional<Location>& out);
void ReadPredicted(const Node& n, PlanPredicted& out);
void ReadElastic(const Node& n, std::optional<PlanElastic>& out);

}  // namespace avf::runtime
