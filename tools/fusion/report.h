// How a check-fusion result is shown: a table per check (fmt) and a JSON document.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "equivalence.h"

namespace refeval::fusion {

std::string format_report(const FusionReport& report);
nlohmann::json report_json(const FusionReport& report);

}  // namespace refeval::fusion
