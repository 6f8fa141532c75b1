// How a check-fusion result is shown: a table per check (fmt) and a JSON document.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "equivalence.h"

namespace refeval::fusion {

std::string format_report(const FusionReport& report);
// One line for a passing check: each side's largest RMS error against the float64 oracle over
// the sets and outputs, and how many differing outputs the oracle accepted ("" without an oracle).
std::string oracle_summary(const FusionReport& report, const std::string& fused = "fused", const std::string& unfused = "unfused");
nlohmann::json report_json(const FusionReport& report);

}  // namespace refeval::fusion
