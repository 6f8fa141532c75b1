// `refeval compare --tokens ... --html FILE`: one self-contained page with the KL divergence along
// each window and the positions where the two models disagree most, as text when a tokenizer is
// given.
#pragma once

#include <functional>
#include <string>

#include "lm_figures.h"

namespace refeval::quality {

// `token_text` (may be empty) shows an id as text.
std::string lm_html(const LmFigures& f, const std::string& name_a, const std::string& name_b,
                    const std::function<std::string(int64_t)>& token_text, size_t top = 30);

}  // namespace refeval::quality
