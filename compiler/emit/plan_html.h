// The plan as one self-contained web page (`aviflowc plan --html`, `emit
// html`; docs/cli.md): the picture of emit/plan_svg.h inline, the chosen
// layout and its alternatives as a table sorted by clicking a column, and
// each layout's memory and time breakdown when its row is hovered, focused
// or clicked. No network: the styles and the script are in the page.
// Deterministic: the same plan gives the same bytes.
#pragma once

#include <string>

#include "plan/plan.h"

namespace avf::emit {

auto PlanHtml(const plan::Plan& plan) -> std::string;

}  // namespace avf::emit
