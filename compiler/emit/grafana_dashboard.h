// The Grafana dashboard of a job that runs avf-run, measured against
// predicted (grafana_dashboard.cpp).
#pragma once

#include <string>

#include "deploy/deployment.h"

namespace avf::emit {

// The dashboard's JSON model (uid `aviflow-` and the job's base name, at
// most 40 characters), ending in a newline.
auto DashboardJson(const deploy::Deployment& d) -> std::string;

}  // namespace avf::emit
