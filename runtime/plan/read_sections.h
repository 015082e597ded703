// One reader per section of plan.json (plan-format.md, in its order). Each
// reports type and range problems into the Problems behind the Node and
// leaves defaults where a value could not be read.
#pragma once

#include "plan/json_reader.h"
#include "plan/plan.h"

namespace avf::runtime {

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
void ReadZero(const Node& n, PlanZero& out);
void ReadOptimizer(const Node& n, PlanOptimizer& out);
void ReadCheckpoint(const Node& n, std::optional<PlanCheckpoint>& out);
void ReadPredicted(const Node& n, PlanPredicted& out);

}  // namespace avf::runtime
