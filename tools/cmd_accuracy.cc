// `refeval accuracy MODEL [input options] [--oracle float64 | --reference OTHER.onnx]`: the
// model's error against its own float64 oracle, per node and per graph output (issue 28;
// tools/debug/accuracy.h says what each figure means), or, with --reference, each of its values
// against the matching value of a second model (its float original) on the same inputs.
// Nodes are listed worst first: by contribution to the outputs' error where it was computed (the
// --top-k nodes with the largest local error), then by accumulated RMS. The table prints as text,
// CSV or Markdown (--format); --json and --html write the whole profile.
#include <algorithm>
#include <cmath>
#include <fstream>

#include <fmt/format.h>

#include "debug/accuracy.h"
#include "html.h"
#include "refeval/format.h"
#include "refeval/model_io.h"
#include "verbs.h"

namespace refeval::cli {
namespace {
namespace acc = refeval::accuracy;

std::string num(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{:.3g}", v);
}

// A table as text (aligned), CSV or Markdown. Text and Markdown use short numbers, CSV full ones.
struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  size_t text_columns = 2;  // the first ones, left-aligned; numbers after them

  std::string render(const std::string& format) const {
    std::string out;
    if (format == "csv") {
      const auto cell = [](const std::string& s) {
        if (s.find_first_of(",\"\n") == std::string::npos) return s;
        std::string q = "\"";
        for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
        return q + "\"";
      };
      for (const auto* r : all()) {
        for (size_t c = 0; c < r->size(); ++c) out += (c ? "," : "") + cell((*r)[c]);
        out += "\n";
      }
    } else if (format == "md") {
      const auto line = [&](const std::vector<std::string>& r) {
        out += "|";
        for (const std::string& s : r) {
          std::string e;
          for (char c : s) e += c == '|' ? std::string("\\|") : std::string(1, c);
          out += " " + e + " |";
        }
        out += "\n";
      };
      line(header);
      out += "|";
      for (size_t c = 0; c < header.size(); ++c) out += c < text_columns ? " --- |" : " ---: |";
      out += "\n";
      for (const auto& r : rows) line(r);
    } else {
      std::vector<size_t> width(header.size(), 0);
      for (const auto* r : all())
        for (size_t c = 0; c < r->size(); ++c) width[c] = std::max(width[c], (*r)[c].size());
      for (const auto* r : all()) {
        std::string l;
        for (size_t c = 0; c < r->size(); ++c)
          l += c < text_columns ? fmt::format("{:<{}} ", (*r)[c], width[c]) : fmt::format("{:>{}} ", (*r)[c], width[c]);
        while (!l.empty() && l.back() == ' ') l.pop_back();
        out += l + "\n";
      }
    }
    return out;
  }

 private:
  std::vector<const std::vector<std::string>*> all() const {
    std::vector<const std::vector<std::string>*> v{&header};
    for (const auto& r : rows) v.push_back(&r);
    return v;
  }
};

// One line of the page's chart: a value per x position (NaN: none there).
struct Series {
  std::string name, color;
  std::vector<double> ys;
};

// The page's chart: series along the x axis (node or tensor order) as inline SVG polylines with
// dots, titles naming each point; highlighted points (the ranked nodes) ringed in red. On a log
// scale, zeros (exact values) sit on their own row under the plot, and the line breaks there.
std::string svg_chart(const std::vector<Series>& series, const std::vector<std::string>& labels, const std::vector<bool>& ringed,
                      bool log, const std::string& y_label, const std::string& x_label) {
  const double W = 1200, H = 340, L = 70, R = 20, T = 30, B = 44, zero_row = 24;
  const double plot_bottom = H - B - (log ? zero_row : 0);
  double lo = INFINITY, hi = -INFINITY;
  for (const Series& se : series)
    for (double y : se.ys)
      if (std::isfinite(y) && (!log || y > 0)) lo = std::min(lo, log ? std::log10(y) : y), hi = std::max(hi, log ? std::log10(y) : y);
  if (!std::isfinite(lo)) lo = 0, hi = 1;
  // Round ends: decades on a log scale, a 1-2-5 step on a linear one (five steps or so).
  double step = 1;
  if (!log && hi > lo) {
    step = std::pow(10.0, std::floor(std::log10((hi - lo) / 5)));
    for (double m : {2.0, 5.0, 10.0})
      if ((hi - lo) / step > 8) step = std::pow(10.0, std::floor(std::log10((hi - lo) / 5))) * m;
  }
  lo = std::floor(lo / step) * step, hi = std::ceil(hi / step) * step;
  if (hi - lo < 1e-12) hi = lo + step;
  const size_t n = labels.size();
  const auto px = [&](size_t i) { return L + (n > 1 ? double(i) / double(n - 1) : 0.5) * (W - L - R); };
  // The y of a value; zeros on a log scale go to the zero row.
  const auto py = [&](double y) {
    if (log && y <= 0) return H - B - zero_row / 2;
    double v = log ? std::log10(y) : y;
    if (!std::isfinite(v)) v = v > 0 ? hi : lo;
    v = std::clamp(v, lo, hi);
    return T + (hi - v) / (hi - lo) * (plot_bottom - T);
  };
  std::string s = fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" viewBox="0 0 {} {}" role="img">)", W, H, W, H);
  s += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="#fafafa" stroke="#ccc"/>)", L, T, W - L - R, plot_bottom - T);
  // Grid: every decade on a log scale, five steps otherwise.
  const int steps = int(std::lround((hi - lo) / step));
  const int every = std::max(1, steps / 10);
  for (int k = 0; k <= steps; k += every) {
    const double v = lo + (hi - lo) * k / std::max(steps, 1);
    const double y = T + (hi - v) / (hi - lo) * (plot_bottom - T);
    s += fmt::format(R"(<line x1="{}" x2="{}" y1="{:.1f}" y2="{:.1f}" stroke="#e2e2e2"/>)", L, W - R, y, y);
    s += fmt::format(R"(<text x="{}" y="{:.1f}" font-size="11" text-anchor="end" fill="#555">{}</text>)", L - 6, y + 4,
                     log ? fmt::format("1e{}", int(std::lround(v))) : fmt::format("{:.3g}", v));
  }
  if (log)
    s += fmt::format(R"(<text x="{}" y="{:.1f}" font-size="11" text-anchor="end" fill="#555">0</text>)", L - 6, H - B - zero_row / 2 + 4);
  s += fmt::format(R"~(<text x="14" y="{}" font-size="12" fill="#333" transform="rotate(-90 14 {})" text-anchor="middle">{}</text>)~",
                   (plot_bottom + T) / 2, (plot_bottom + T) / 2, html_escape(y_label));
  s += fmt::format(R"(<text x="{}" y="{}" font-size="12" fill="#333" text-anchor="middle">{} →</text>)", (W + L - R) / 2, H - 10,
                   html_escape(x_label));
  // Legend.
  double lx = L;
  for (const Series& se : series) {
    s += fmt::format(R"(<line x1="{}" x2="{}" y1="14" y2="14" stroke="{}" stroke-width="2"/><text x="{}" y="18" font-size="12">{}</text>)", lx,
                     lx + 18, se.color, lx + 22, html_escape(se.name));
    lx += 30 + 7.0 * double(se.name.size());
  }
  if (std::find(ringed.begin(), ringed.end(), true) != ringed.end())
    s += fmt::format(R"(<circle cx="{}" cy="14" r="5" fill="none" stroke="#c53030" stroke-width="2"/><text x="{}" y="18" font-size="12">ranked by contribution</text>)",
                     lx + 5, lx + 14);
  for (const Series& se : series) {
    std::string points;
    const auto flush = [&] {
      if (!points.empty()) s += fmt::format(R"(<polyline fill="none" stroke="{}" stroke-width="1.5" points="{}"/>)", se.color, points);
      points.clear();
    };
    for (size_t i = 0; i < n && i < se.ys.size(); ++i) {
      if (std::isnan(se.ys[i]) || (log && se.ys[i] <= 0)) flush();
      else points += fmt::format("{:.1f},{:.1f} ", px(i), py(se.ys[i]));
    }
    flush();
    for (size_t i = 0; i < n && i < se.ys.size(); ++i)
      if (!std::isnan(se.ys[i]))
        s += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="2.5" fill="{}"><title>{} — {}: {}</title></circle>)", px(i), py(se.ys[i]),
                         log && se.ys[i] <= 0 ? "#bbb" : se.color, html_escape(labels[i]), html_escape(se.name), num(se.ys[i]));
  }
  for (size_t i = 0; i < n && i < ringed.size() && !series.empty(); ++i)
    if (ringed[i] && i < series[0].ys.size() && !std::isnan(series[0].ys[i]))
      s += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="6" fill="none" stroke="#c53030" stroke-width="2"><title>{}</title></circle>)", px(i),
                       py(series[0].ys[i]), html_escape(labels[i]));
  return s + "</svg>";
}

std::string html_page(const std::string& title, const std::string& summary, const std::string& chart, const Table& table) {
  std::string rows;
  for (const auto& r : table.rows) {
    rows += "<tr>";
    for (size_t c = 0; c < r.size(); ++c) rows += fmt::format("<td{}>{}</td>", c < table.text_columns ? "" : " class=n", html_escape(r[c]));
    rows += "</tr>\n";
  }
  std::string head;
  for (const std::string& h : table.header) head += "<th>" + html_escape(h) + "</th>";
  return fmt::format(R"(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 24px; color: #222; }}
h1 {{ font-size: 20px; }} h2 {{ font-size: 16px; margin-top: 28px; }}
pre {{ background: #f5f5f5; padding: 10px; font-size: 13px; white-space: pre-wrap; }}
table {{ border-collapse: collapse; font-size: 13px; }}
th, td {{ border: 1px solid #ddd; padding: 3px 8px; }} th {{ background: #eef2f7; }}
td.n {{ text-align: right; font-variant-numeric: tabular-nums; }}
</style></head><body>
<h1>{}</h1>
<pre>{}</pre>
<h2>Error along the graph</h2>
{}
<h2>Worst first</h2>
<table><thead><tr>{}</tr></thead><tbody>
{}</tbody></table>
</body></html>
)",
                     html_escape(title), html_escape(title), html_escape(summary), chart, head, rows);
}

class AccuracyVerb : public Verb {
 public:
  void setup(CLI::App* sub) override {
    sub->add_option("model", model_, "the model (.onnx)")->required();
    inputs_.add_to(sub);
    auto* oracle = sub->add_option("--oracle", oracle_, "the oracle's precision: float64 (the only one, and the default)")
                       ->check(CLI::IsMember({"float64"}));
    sub->add_option("--reference", reference_, "OTHER.onnx: compare against this model's values (the float original) instead of the oracle")
        ->excludes(oracle);
    sub->add_option("--format", format_, "the table as text (default), csv or md")->check(CLI::IsMember({"text", "csv", "md"}));
    sub->add_option("--json", json_path_, "FILE: write the profile as JSON");
    sub->add_option("--html", html_path_, "FILE: write a self-contained page: the error along the graph and the worst nodes");
    sub->add_option("--save-oracle", oracle_path_, "FILE.onnx: write the float64 oracle model (to run or compare it yourself)");
    top_k_option_ = sub->add_option("--top-k", top_k_,
                                    "N: compute the contribution of the N nodes with the largest local error (0: none; default: "
                                    "of the 10 largest, as many as fit in one run of the graph's work, all on a small graph)")
                        ->check(CLI::Range(0, 1 << 20));
    sub->add_option("--rows", rows_, "N: rows shown in the table (default 20; 0: all)")->check(CLI::Range(0, 1 << 30));
    sub->add_flag("--no-local", no_local_, "skip the local errors (and so the contributions): one model run and one oracle run");
  }

  int execute(const GlobalOptions& g) override {
    const Model model = open_model(model_);
    std::map<std::string, Value> feeds;
    {
      const ReferenceEvaluator ev(model, EvaluatorOptions{&registry(g)});
      feeds = make_feeds(ev, inputs_);
    }
    if (!oracle_path_.empty()) save_model(acc::widen_model(model), oracle_path_);
    if (!reference_.empty()) return execute_reference(g, model, feeds);
    acc::Options opt;
    opt.registry = &registry(g);
    opt.local = !no_local_;
    opt.top_k = no_local_ ? 0 : top_k_;
    opt.budgeted = top_k_option_->count() == 0;
    const acc::Report r = acc::profile(model, feeds, opt);

    std::string summary = fmt::format("model: {} ({} nodes run); oracle: {}\n", model_, r.nodes_run, oracle_);
    if (!r.fallback.empty())
      summary += fmt::format("no double path (run in the model's precision inside the oracle, marked *): {}\n", fmt::join(r.fallback, ", "));
    summary += "outputs (accumulated error against the oracle):\n";
    for (const acc::OutputError& o : r.outputs) summary += err_line(fmt::format("  {} ({})", o.name, dtype_short_name(o.dtype)), o.accumulated);
    if (r.contributions < r.candidates)
      summary += fmt::format("contributions computed for {} of the {} nodes with the largest local errors (their re-runs capped at "
                             "one run of the graph's work; --top-k {} for all)\n", r.contributions, r.candidates, r.candidates);
    else
      summary += fmt::format("contributions computed for {} node(s) (the largest local errors; --top-k)\n", r.contributions);
    const acc::Timing& t = r.timing;
    summary += fmt::format("time: model run {:.1f} ms, oracle run {:.1f} ms, local errors {:.1f} ms, contributions {:.1f} ms ({} nodes re-run)\n",
                           t.model_ms, t.oracle_ms, t.local_ms, t.contributions_ms, t.cone_nodes);
    std::string worst;
    if (!r.nodes.empty()) {
      const acc::NodeError& w = r.nodes.front();
      if (w.contribution && w.contribution->nonfinite)
        worst = fmt::format("worst: {} ({}), contribution: {} output element(s) NaN/Inf where the oracle has numbers\n", w.node,
                            w.op_type, w.contribution->nonfinite);
      else
        worst = fmt::format("worst: {} ({}), {} {}\n", w.node, w.op_type, w.contribution ? "contribution rms" : "accumulated rms",
                            num(w.rank_key()));
    }
    const Table table = node_table(r, format_ == "csv");
    print(summary, table, worst);

    if (!json_path_.empty()) write_file(json_path_, "--json", acc::to_json(r, model_).dump(2) + "\n");
    if (!html_path_.empty()) {
      std::vector<const acc::NodeError*> order;
      for (const acc::NodeError& n : r.nodes) order.push_back(&n);
      std::stable_sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->index < b->index; });
      Series accumulated{"accumulated rms (worst output)", "#2b6cb0", {}}, local{"local rms (the node's own)", "#dd6b20", {}};
      std::vector<std::string> labels;
      std::vector<bool> ringed;
      for (const acc::NodeError* n : order) {
        double a = 0, l = NAN;
        for (const acc::OutputError& o : n->outputs) {
          a = std::max(a, o.accumulated.rms);
          if (o.local) l = std::isnan(l) ? o.local->rms : std::max(l, o.local->rms);
        }
        accumulated.ys.push_back(a);
        local.ys.push_back(l);
        labels.push_back(fmt::format("#{} {} ({})", n->index, n->node, n->op_type));
        ringed.push_back(n->contribution.has_value() && n->contribution->rms > 0);
      }
      write_file(html_path_, "--html",
                 html_page("refeval accuracy: " + model_, summary + worst,
                           svg_chart({accumulated, local}, labels, ringed, true, "rms error against the oracle",
                                     "nodes with floating outputs, in execution order"),
                           node_table(r, false)));
    }
    std::fflush(stdout);
    return kOk;
  }

 private:
  int execute_reference(const GlobalOptions& g, const Model& model, const std::map<std::string, Value>& feeds) {
    const Model reference = open_model(reference_);
    std::map<std::string, Value> ref_feeds;
    {
      const ReferenceEvaluator ev(reference, EvaluatorOptions{&registry(g)});
      ref_feeds = make_feeds(ev, inputs_);
    }
    const acc::ReferenceReport r = acc::against_reference(model, reference, feeds, ref_feeds, &registry(g));
    std::string summary = fmt::format("model: {} ({} nodes run); reference: {}\n", model_, r.nodes_run, reference_);
    summary += fmt::format("{} tensor(s) matched, {} floating value(s) without a counterpart\n", r.tensors.size(), r.unmatched.size());
    summary += "outputs (against the reference's):\n";
    for (const acc::OutputError& o : r.outputs) summary += err_line(fmt::format("  {} ({})", o.name, dtype_short_name(o.dtype)), o.accumulated);
    // Worst first: the lowest SQNR.
    std::vector<const acc::TensorMatch*> worst_first;
    for (const acc::TensorMatch& t : r.tensors) worst_first.push_back(&t);
    // An exact value (an all-zero one reads 0 dB in qdq_loss_debug's formula) sorts last.
    const auto key = [](const acc::TensorMatch* t) {
      return t->error.rms == 0 && !t->error.nonfinite ? std::numeric_limits<double>::infinity() : t->error.sqnr_db;
    };
    std::stable_sort(worst_first.begin(), worst_first.end(), [&](auto* a, auto* b) { return key(a) < key(b); });
    std::string worst;
    if (!worst_first.empty())
      worst = fmt::format("worst: {} (against '{}'), sqnr {} dB\n", worst_first.front()->name, worst_first.front()->reference,
                          num(worst_first.front()->error.sqnr_db));
    const Table table = tensor_table(worst_first, format_ == "csv");
    print(summary, table, worst);

    if (!json_path_.empty()) {
      write_file(json_path_, "--json", acc::to_json(r, model_, reference_).dump(2) + "\n");
    }
    if (!html_path_.empty()) {
      Series sqnr{"SQNR dB against the reference", "#2b6cb0", {}};
      std::vector<std::string> labels;
      for (const acc::TensorMatch& t : r.tensors) {
        sqnr.ys.push_back(t.error.sqnr_db);
        labels.push_back(t.name + " vs " + t.reference);
      }
      write_file(html_path_, "--html",
                 html_page("refeval accuracy: " + model_ + " against " + reference_, summary + worst,
                           svg_chart({sqnr}, labels, {}, false, "SQNR dB (higher is better)", "matched tensors, in the model's execution order"),
                           tensor_table(worst_first, false)));
    }
    std::fflush(stdout);
    return kOk;
  }

  // The summary lines go with the text and Markdown tables; CSV is the table alone.
  void print(const std::string& summary, const Table& table, const std::string& worst) const {
    if (format_ == "csv") {
      fmt::print("{}", table.render("csv"));
    } else if (format_ == "md") {
      fmt::print("```\n{}```\n\n{}\n{}", summary, table.render("md"), worst.empty() ? "" : "\n" + worst);
    } else {
      fmt::print("{}{}{}", summary, table.render("text"), worst);
    }
  }

  std::string f(double v, bool full) const { return full ? (std::isfinite(v) ? fmt::format("{:.9g}", v) : num(v)) : num(v); }

  std::string contrib_cell(const acc::NodeError& n, bool full) const {
    if (!n.contribution) return "-";
    return f(n.contribution->rms, full) + (n.contribution->nonfinite ? fmt::format(" +{} NaN/Inf", n.contribution->nonfinite) : "");
  }

  Table node_table(const acc::Report& r, bool full) const {
    Table t{{"node / output", "op", "contrib", "acc max", "acc rel", "acc rms", "sqnr dB", "acc ulp", "local rms", "local ulp", "amplif"}, {}};
    size_t shown = 0;
    for (const acc::NodeError& n : r.nodes) {
      if (rows_ && !full && shown++ == rows_) break;
      for (const acc::OutputError& o : n.outputs) {
        std::string label = n.outputs.size() == 1 ? n.node : n.node + ":" + o.name;
        if (n.fallback) label += " *";
        if (o.accumulated.nonfinite) label += fmt::format(" ({} NaN/Inf one side)", o.accumulated.nonfinite);
        t.rows.push_back({label, n.op_type, contrib_cell(n, full), f(o.accumulated.max_abs, full),
                          f(o.accumulated.max_rel, full), f(o.accumulated.rms, full), f(o.accumulated.sqnr_db, full),
                          f(o.accumulated.ulps, full), o.local ? f(o.local->rms, full) : "-", o.local ? f(o.local->ulps, full) : "-",
                          o.amplification ? f(*o.amplification, full) : "-"});
      }
    }
    return t;
  }

  Table tensor_table(const std::vector<const acc::TensorMatch*>& tensors, bool full) const {
    Table t{{"tensor", "reference", "match", "dtype", "max abs", "max rel", "rms", "sqnr dB", "ulps"}, {}, 4};
    size_t shown = 0;
    for (const acc::TensorMatch* m : tensors) {
      if (rows_ && !full && shown++ == rows_) break;
      std::string name = m->name;
      if (m->error.nonfinite) name += fmt::format(" ({} NaN/Inf one side)", m->error.nonfinite);
      t.rows.push_back({name, m->reference, m->how, std::string(dtype_short_name(m->dtype)), f(m->error.max_abs, full),
                        f(m->error.max_rel, full), f(m->error.rms, full), f(m->error.sqnr_db, full), f(m->error.ulps, full)});
    }
    return t;
  }

  static void write_file(const std::string& path, const std::string& option, const std::string& text) {
    std::ofstream out(path);
    out << text;
    if (!out) fail_input(fmt::format("{}: cannot write '{}'", option, path));
  }

  static std::string err_line(const std::string& label, const acc::Error& e) {
    return fmt::format("{}: max abs {}, max rel {}, rms {}, sqnr {} dB, {} ulps at the max{}\n", label, num(e.max_abs), num(e.max_rel),
                       num(e.rms), num(e.sqnr_db), num(e.ulps),
                       e.nonfinite ? fmt::format(", {} element(s) NaN/Inf on one side only", e.nonfinite) : "");
  }

  std::string model_;
  InputOptions inputs_;
  std::string oracle_ = "float64";
  std::string reference_, format_ = "text", json_path_, html_path_, oracle_path_;
  size_t top_k_ = 10;
  CLI::Option* top_k_option_ = nullptr;
  size_t rows_ = 20;
  bool no_local_ = false;
};

}  // namespace

std::unique_ptr<Verb> make_accuracy_verb() { return std::make_unique<AccuracyVerb>(); }

}  // namespace refeval::cli
