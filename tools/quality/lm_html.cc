#include "lm_html.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "html.h"
#include "profile/html_report.h"

namespace refeval::quality {
namespace {

std::string escape(std::string_view s) { return html_escape(s); }

// KL per position of one window, as columns; hover names the position, the token and both top-1s.
std::string window_chart(int window, const std::vector<const TokenFigures*>& rows, double top,
                         const std::function<std::string(int64_t)>& text) {
  const int left = 60, plot_h = 120, col = std::max(2, std::min(12, 1000 / std::max<int>(1, int(rows.size()))));
  const int width = left + col * int(rows.size()) + 20, height = plot_h + 36;
  std::string svg = fmt::format(
      "<figure class=\"kl\"><figcaption>Window {}: KL(A||B) per position (red: top-1 differs)</figcaption>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
      "width=\"{}\" height=\"{}\" role=\"img\" aria-label=\"KL along window {}\">\n"
      "<text x=\"{}\" y=\"14\" text-anchor=\"end\" class=\"axis\">{:.3g}</text><text x=\"{}\" y=\"{}\" text-anchor=\"end\" class=\"axis\">0</text>\n",
      window, width, height, window, left - 6, top, left - 6, 10 + plot_h);
  for (size_t i = 0; i < rows.size(); ++i) {
    const TokenFigures& f = *rows[i];
    const double h = top > 0 ? std::max(f.kl > 0 ? 1.0 : 0.0, f.kl / top * plot_h) : 0;
    const std::string next = text ? fmt::format(" {}", text(f.next)) : "";
    svg += fmt::format("<rect x=\"{}\" y=\"{:.1f}\" width=\"{}\" height=\"{:.1f}\" fill=\"{}\"><title>position {}: next {}{}; KL {:.4g}; "
                       "top-1 {} / {}</title></rect>\n",
                       left + int(i) * col, 10 + plot_h - h, std::max(1, col - 1), h, f.top1_a == f.top1_b ? "#4e79a7" : "#e15759",
                       f.position, f.next, escape(next), f.kl, f.top1_a, f.top1_b);
  }
  svg += fmt::format("<text x=\"{}\" y=\"{}\" class=\"axis\">position 0</text>\n", left, height - 8);
  return svg + "</svg></figure>\n";
}

}  // namespace

std::string lm_html(const LmFigures& f, const std::string& name_a, const std::string& name_b,
                    const std::function<std::string(int64_t)>& text, size_t top) {
  std::map<int, std::vector<const TokenFigures*>> by_window;
  double kl_top = 0;
  for (const TokenFigures& t : f.per_token) by_window[t.window].push_back(&t), kl_top = std::max(kl_top, t.kl);
  std::string body = fmt::format(
      "<h1>Language models compared</h1>\n<pre class=\"summary\">A: {}\nB: {}\n{} window(s) of {} tokens, {} predictions\n"
      "perplexity A {:.6g}, B {:.6g} (B/A {:.6f})\nKL(A||B) mean {:.6g}, p99 {:.6g}, max {:.6g} (window {}, position {})\n"
      "top-1 agreement {:.4f}, top-5 overlap {:.4f}</pre>\n<div class=\"charts\">\n",
      escape(name_a), escape(name_b), f.windows, f.context, f.tokens, f.perplexity_a, f.perplexity_b, f.perplexity_ratio(), f.kl_mean,
      f.kl_p99, f.kl_max, f.kl_max_window, f.kl_max_position, f.top1_agreement, f.top5_overlap);
  for (const auto& [w, rows] : by_window) body += window_chart(w, rows, kl_top, text);
  body += "</div>\n<h2>Where they disagree most</h2>\n<table class=\"rows\" id=\"disagree\"><thead><tr><th>window</th><th>position</th>"
          "<th>next token</th><th>KL</th><th>-log p A</th><th>-log p B</th><th>top-1 A</th><th>top-1 B</th></tr></thead><tbody>\n";
  std::vector<const TokenFigures*> worst;
  for (const TokenFigures& t : f.per_token) worst.push_back(&t);
  std::stable_sort(worst.begin(), worst.end(), [](const TokenFigures* x, const TokenFigures* y) { return x->kl > y->kl; });
  auto shown = [&](int64_t id) { return text ? fmt::format("{} {}", id, escape(text(id))) : std::to_string(id); };
  for (size_t i = 0; i < worst.size() && i < top; ++i) {
    const TokenFigures& t = *worst[i];
    body += fmt::format("<tr><td>{}</td><td>{}</td><td class=\"l\">{}</td><td>{:.4g}</td><td>{:.4f}</td><td>{:.4f}</td><td class=\"l\">{}</td>"
                        "<td class=\"l\">{}</td></tr>\n",
                        t.window, t.position, shown(t.next), t.kl, t.nll_a, t.nll_b, shown(t.top1_a), shown(t.top1_b));
  }
  body += "</tbody></table>\n";
  return profile::report_page("refeval compare: language models", body);
}

}  // namespace refeval::quality
