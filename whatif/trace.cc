#include "whatif/trace.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "util/atomic_file.h"
#include "util/file.h"
#include "util/json_util.h"
#include "util/lines.h"
#include "util/status_macros.h"

namespace specplan::whatif {
namespace {

using nlohmann::json;

absl::Status Invalid(const std::string& msg) { return absl::InvalidArgumentError(msg); }

absl::StatusOr<std::vector<int32_t>> IntArray(const json& obj, const std::string& key,
                                              const std::string& prefix, size_t max_len) {
  SPECPLAN_ASSIGN_OR_RETURN(const json* v, json_util::Get(obj, key, prefix));
  const std::string field = json_util::Field(prefix, key);
  if (!v->is_array()) return Invalid(absl::StrCat(field, ": expected an array of integers"));
  if (v->size() > max_len) {
    return Invalid(absl::StrCat(field, ": ", v->size(), " entries, at most ", max_len));
  }
  std::vector<int32_t> out;
  out.reserve(v->size());
  for (size_t i = 0; i < v->size(); ++i) {
    const json& e = (*v)[i];
    if (!e.is_number_integer() || e.get<int64_t>() < std::numeric_limits<int32_t>::min() ||
        e.get<int64_t>() > std::numeric_limits<int32_t>::max()) {
      return Invalid(
          absl::StrCat(field, "[", i, "] = ", json_util::Quote(e), ": expected a 32-bit integer"));
    }
    out.push_back(static_cast<int32_t>(e.get<int64_t>()));
  }
  return out;
}

// [[...]*k]*rows of integers or numbers, flattened; all rows must have the first row's length.
template <typename T>
absl::Status Matrix(const json& obj, const std::string& key, const std::string& prefix, size_t rows,
                    int32_t* k, std::vector<T>* out) {
  SPECPLAN_ASSIGN_OR_RETURN(const json* v, json_util::Get(obj, key, prefix));
  const std::string field = json_util::Field(prefix, key);
  if (!v->is_array()) return Invalid(absl::StrCat(field, ": expected an array of rows"));
  if (v->size() != rows) {
    return Invalid(
        absl::StrCat(field, ": ", v->size(), " rows, expected ", rows, " (one per node)"));
  }
  out->clear();
  for (size_t r = 0; r < rows; ++r) {
    const json& row = (*v)[r];
    if (!row.is_array()) return Invalid(absl::StrCat(field, "[", r, "]: expected an array"));
    if (*k < 0) {
      if (row.empty() || row.size() > static_cast<size_t>(kMaxRecordedK)) {
        return Invalid(absl::StrCat(field, "[", r, "]: ", row.size(),
                                    " entries (k), must be in [1, ", kMaxRecordedK, "]"));
      }
      *k = static_cast<int32_t>(row.size());
    }
    if (row.size() != static_cast<size_t>(*k)) {
      return Invalid(absl::StrCat(field, "[", r, "]: row has ", row.size(), " entries, expected ",
                                  *k, " (ragged rows)"));
    }
    for (size_t j = 0; j < row.size(); ++j) {
      const json& e = row[j];
      if constexpr (std::is_integral_v<T>) {
        if (!e.is_number_integer() || e.get<int64_t>() < -1 ||
            e.get<int64_t>() > std::numeric_limits<int32_t>::max()) {
          return Invalid(absl::StrCat(field, "[", r, "][", j, "] = ", json_util::Quote(e),
                                      ": expected a token id >= 0 or -1 (padding)"));
        }
        out->push_back(static_cast<T>(e.get<int64_t>()));
      } else {
        if (!e.is_number()) {
          return Invalid(absl::StrCat(field, "[", r, "][", j, "] = ", json_util::Quote(e),
                                      ": expected a number"));
        }
        out->push_back(static_cast<T>(e.get<double>()));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status CheckToken(int64_t token, int64_t vocab, const std::string& field) {
  if (token < 0 || token >= vocab) {
    return Invalid(
        absl::StrCat(field, " = ", token, ": must be a token id in [0, vocab = ", vocab, ")"));
  }
  return absl::OkStatus();
}

absl::StatusOr<TraceHeader> ParseHeader(const json& j) {
  TraceHeader h;
  SPECPLAN_ASSIGN_OR_RETURN(std::string format, json_util::GetString(j, "format"));
  if (format != "specplan.trace") {
    return Invalid(absl::StrCat("format = \"", format, "\": expected \"specplan.trace\""));
  }
  SPECPLAN_ASSIGN_OR_RETURN(int64_t version, json_util::GetInt(j, "version"));
  if (version != kTraceVersion) {
    return Invalid(
        absl::StrCat("version = ", version, ": this build reads version ", kTraceVersion));
  }
  SPECPLAN_ASSIGN_OR_RETURN(h.target, json_util::GetString(j, "target"));
  SPECPLAN_ASSIGN_OR_RETURN(h.draft, json_util::GetString(j, "draft"));
  SPECPLAN_ASSIGN_OR_RETURN(h.vocab, json_util::GetInt(j, "vocab"));
  if (h.vocab <= 0 || h.vocab > std::numeric_limits<int32_t>::max()) {
    return Invalid(absl::StrCat("vocab = ", h.vocab, ": must be in [1, 2^31)"));
  }
  if (j.contains("source")) {
    SPECPLAN_ASSIGN_OR_RETURN(h.source, json_util::GetString(j, "source"));
  }
  if (j.contains("created_utc")) {
    SPECPLAN_ASSIGN_OR_RETURN(h.created_utc, json_util::GetString(j, "created_utc"));
  }
  return h;
}

absl::StatusOr<TraceStep> ParseStep(const json& j, const TraceHeader& header) {
  TraceStep s;
  SPECPLAN_ASSIGN_OR_RETURN(s.prompt, json_util::GetInt(j, "prompt"));
  if (s.prompt < 0) return Invalid(absl::StrCat("prompt = ", s.prompt, ": must be >= 0"));
  SPECPLAN_ASSIGN_OR_RETURN(s.c, json_util::GetInt(j, "c"));
  if (s.c < 0) return Invalid(absl::StrCat("c = ", s.c, ": must be >= 0"));
  SPECPLAN_ASSIGN_OR_RETURN(int64_t root, json_util::GetInt(j, "root"));
  SPECPLAN_RETURN_IF_ERROR(CheckToken(root, header.vocab, "root"));
  s.root = static_cast<int32_t>(root);
  SPECPLAN_ASSIGN_OR_RETURN(s.continuation, IntArray(j, "continuation", "", kMaxContinuation));

  if (j.contains("marginals")) {
    json m = j["marginals"];
    if (!m.is_object()) return Invalid("marginals: expected a JSON object");
    if (m.contains("root_token")) return Invalid("marginals.root_token: not allowed (use root)");
    m["root_token"] = s.root;
    auto parsed = planner::ParseMarginalsJson(m);
    if (!parsed.ok()) {
      return Invalid(absl::StrCat("marginals.", std::string(parsed.status().message())));
    }
    s.marginals = std::move(*parsed);
  }
  if (j.contains("nodes")) {
    const json& n = j["nodes"];
    if (!n.is_object()) return Invalid("nodes: expected a JSON object");
    RecordedNodes r;
    SPECPLAN_ASSIGN_OR_RETURN(r.parents, IntArray(n, "parents", "nodes", kMaxRecordedNodes));
    SPECPLAN_ASSIGN_OR_RETURN(r.tokens, IntArray(n, "tokens", "nodes", kMaxRecordedNodes));
    if (r.parents.empty()) return Invalid("nodes.parents: empty (the root is node 0)");
    r.k = -1;
    SPECPLAN_RETURN_IF_ERROR(
        Matrix(n, "dist_tokens", "nodes", r.parents.size(), &r.k, &r.dist_tokens));
    SPECPLAN_RETURN_IF_ERROR(
        Matrix(n, "dist_probs", "nodes", r.parents.size(), &r.k, &r.dist_probs));
    s.nodes = std::move(r);
  }
  if (j.contains("draft_s")) {
    SPECPLAN_ASSIGN_OR_RETURN(s.draft_s, json_util::GetNumber(j, "draft_s"));
    if (s.draft_s < 0) return Invalid(absl::StrCat("draft_s = ", s.draft_s, ": must be >= 0"));
  }
  if (j.contains("pass")) {
    SPECPLAN_ASSIGN_OR_RETURN(s.pass, json_util::GetInt(j, "pass"));
    if (s.pass < 0) return Invalid(absl::StrCat("pass = ", s.pass, ": must be >= 0"));
  }
  SPECPLAN_RETURN_IF_ERROR(ValidateTraceStep(s, header));
  return s;
}

json IntRows(const std::vector<int32_t>& flat, size_t k) {
  json rows = json::array();
  for (size_t i = 0; k > 0 && i < flat.size(); i += k) {
    rows.push_back(std::vector<int32_t>(flat.begin() + i, flat.begin() + i + k));
  }
  return rows;
}

json FloatRows(const std::vector<float>& flat, size_t k) {
  json rows = json::array();
  for (size_t i = 0; k > 0 && i < flat.size(); i += k) {
    rows.push_back(std::vector<float>(flat.begin() + i, flat.begin() + i + k));
  }
  return rows;
}

}  // namespace

int RecordedNodes::Child(int node, planner::TokenId token) const {
  for (int i = node + 1; i < size(); ++i) {
    if (parents[i] == node && tokens[i] == token) return i;
  }
  return -1;
}

bool RecordedNodes::Expanded(int node) const {
  return k > 0 && dist_tokens[static_cast<size_t>(node) * k] >= 0;
}

absl::Status ValidateTraceStep(const TraceStep& s, const TraceHeader& header) {
  if (s.prompt < 0) return Invalid(absl::StrCat("prompt = ", s.prompt, ": must be >= 0"));
  if (s.c < 0) return Invalid(absl::StrCat("c = ", s.c, ": must be >= 0"));
  SPECPLAN_RETURN_IF_ERROR(CheckToken(s.root, header.vocab, "root"));
  if (s.continuation.empty()) return Invalid("continuation: empty (needs >= 1 token)");
  if (s.continuation.size() > static_cast<size_t>(kMaxContinuation)) {
    return Invalid(absl::StrCat("continuation: ", s.continuation.size(), " tokens, at most ",
                                kMaxContinuation));
  }
  for (size_t i = 0; i < s.continuation.size(); ++i) {
    SPECPLAN_RETURN_IF_ERROR(
        CheckToken(s.continuation[i], header.vocab, absl::StrCat("continuation[", i, "]")));
  }
  if (!s.marginals && !s.nodes) {
    return Invalid("marginals, nodes: missing (a step needs at least one drafter output)");
  }
  if (s.marginals) {
    const planner::Marginals& m = *s.marginals;
    auto st = planner::ValidateMarginals(m);
    if (!st.ok()) return Invalid(absl::StrCat("marginals.", std::string(st.message())));
    if (m.root_token != s.root) {
      return Invalid(
          absl::StrCat("marginals.root_token = ", m.root_token, ": must equal root = ", s.root));
    }
    for (int d = 0; d < m.gamma; ++d) {
      for (int r = 0; r < m.k; ++r) {
        SPECPLAN_RETURN_IF_ERROR(CheckToken(m.token(d, r), header.vocab,
                                            absl::StrCat("marginals.tokens[", d, "][", r, "]")));
      }
    }
  }
  if (s.nodes) {
    const RecordedNodes& r = *s.nodes;
    const size_t m = r.parents.size();
    if (m == 0 || m > static_cast<size_t>(kMaxRecordedNodes)) {
      return Invalid(
          absl::StrCat("nodes.parents: ", m, " nodes, must be in [1, ", kMaxRecordedNodes, "]"));
    }
    if (r.tokens.size() != m) {
      return Invalid(absl::StrCat("nodes.tokens: ", r.tokens.size(), " entries, expected ", m,
                                  " (one per node)"));
    }
    if (r.k < 1 || r.k > kMaxRecordedK || r.dist_tokens.size() != m * r.k ||
        r.dist_probs.size() != m * r.k) {
      return Invalid(
          absl::StrCat("nodes.dist_tokens: expected ", m, " rows of k = ", r.k, " entries"));
    }
    if (r.parents[0] != -1) {
      return Invalid(absl::StrCat("nodes.parents[0] = ", r.parents[0], ": must be -1 (root)"));
    }
    if (r.tokens[0] != s.root) {
      return Invalid(
          absl::StrCat("nodes.tokens[0] = ", r.tokens[0], ": must equal root = ", s.root));
    }
    for (size_t i = 0; i < m; ++i) {
      const std::string row = absl::StrCat("[", i, "]");
      bool padding = false;
      double sum = 0;
      std::unordered_set<int32_t> seen;
      for (int32_t j = 0; j < r.k; ++j) {
        const int32_t tok = r.dist_tokens[i * r.k + j];
        const float p = r.dist_probs[i * r.k + j];
        const std::string at = absl::StrCat(row, "[", j, "]");
        if (!(p >= 0.0f && p <= 1.0f)) {
          return Invalid(
              absl::StrCat("nodes.dist_probs", at, " = ", p, ": must be a number in [0, 1]"));
        }
        if (tok < 0) {
          padding = true;
          if (p != 0.0f) {
            return Invalid(absl::StrCat("nodes.dist_probs", at, " = ", p,
                                        ": padding (token -1) must have prob 0"));
          }
          continue;
        }
        if (padding) {
          return Invalid(absl::StrCat("nodes.dist_tokens", at, " = ", tok,
                                      ": token after padding (padding must be trailing)"));
        }
        SPECPLAN_RETURN_IF_ERROR(CheckToken(tok, header.vocab, "nodes.dist_tokens" + at));
        if (!seen.insert(tok).second) {
          return Invalid(
              absl::StrCat("nodes.dist_tokens", at, " = ", tok, ": repeated in the row"));
        }
        if (j > 0 && p > r.dist_probs[i * r.k + j - 1]) {
          return Invalid(absl::StrCat("nodes.dist_probs", at, " = ", p,
                                      ": rows must be sorted by descending prob"));
        }
        sum += p;
      }
      if (sum > 1.0 + 1e-3) {
        return Invalid(absl::StrCat("nodes.dist_probs", row, ": sums to ", sum, ", must be <= 1"));
      }
      if (i == 0) continue;
      const int32_t p = r.parents[i];
      if (p < 0 || static_cast<size_t>(p) >= i) {
        return Invalid(absl::StrCat("nodes.parents", row, " = ", p, ": must be in [0, ", i,
                                    ") (topological order)"));
      }
      SPECPLAN_RETURN_IF_ERROR(CheckToken(r.tokens[i], header.vocab, "nodes.tokens" + row));
      bool in_parent_row = false;
      for (int32_t j = 0; j < r.k; ++j) {
        in_parent_row |= r.dist_tokens[static_cast<size_t>(p) * r.k + j] == r.tokens[i];
      }
      if (!in_parent_row) {
        return Invalid(absl::StrCat("nodes.tokens", row, " = ", r.tokens[i],
                                    ": not among the candidates of its parent (node ", p, ")"));
      }
      if (r.Child(p, r.tokens[i]) != static_cast<int>(i)) {
        return Invalid(absl::StrCat("nodes.tokens", row, " = ", r.tokens[i],
                                    ": a sibling has the same token"));
      }
    }
  }
  if (!(s.draft_s < 0 || std::isfinite(s.draft_s))) {
    return Invalid(absl::StrCat("draft_s = ", s.draft_s, ": must be finite"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Trace> ParseTrace(std::string_view text, std::string_view source_name) {
  Trace trace;
  bool have_header = false;
  std::set<std::pair<int64_t, int64_t>> passes;  // (pass, prompt) of the steps so far
  absl::Status read = ForEachNonBlankLineOf(text, [&](std::string_view line, size_t line_no) {
    auto fail = [&](const std::string& msg) {
      return Invalid(absl::StrCat(std::string(source_name), ":", line_no, ": ", msg));
    };
    // "<source>:<line>:<column>: not valid JSON: <what>" (util/json_error.h).
    absl::StatusOr<json> parsed = json_util::ParseJson(line, source_name, line_no);
    if (!parsed.ok()) return Invalid(std::string(parsed.status().message()));
    json j = *std::move(parsed);
    if (!j.is_object()) return fail("expected a JSON object");
    if (!have_header) {
      auto h = ParseHeader(j);
      if (!h.ok()) return fail(std::string(h.status().message()));
      trace.header = std::move(*h);
      have_header = true;
      return absl::OkStatus();
    }
    if (static_cast<int64_t>(trace.steps.size()) >= kMaxTraceSteps) {
      return fail(absl::StrCat("more than ", kMaxTraceSteps, " steps"));
    }
    auto step = ParseStep(j, trace.header);
    if (!step.ok()) return fail(std::string(step.status().message()));
    if (step->pass >= 0 && !passes.insert({step->pass, step->prompt}).second) {
      return fail(absl::StrCat("pass = ", step->pass, ": prompt ", step->prompt,
                               " already has a step in this pass"));
    }
    trace.steps.push_back(std::move(*step));
    return absl::OkStatus();
  });
  if (!read.ok()) return read;
  if (!have_header) {
    return Invalid(
        absl::StrCat(std::string(source_name), ": empty trace (expected a header line)"));
  }
  return trace;
}

absl::StatusOr<Trace> LoadTrace(const std::string& path) {
  SPECPLAN_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  return ParseTrace(text, path);
}

std::string TraceHeaderLine(const TraceHeader& h) {
  json j = {{"format", "specplan.trace"},
            {"version", kTraceVersion},
            {"target", h.target},
            {"draft", h.draft},
            {"vocab", h.vocab}};
  if (!h.source.empty()) j["source"] = h.source;
  if (!h.created_utc.empty()) j["created_utc"] = h.created_utc;
  return j.dump();
}

std::string TraceStepLine(const TraceStep& s) {
  json j = {{"prompt", s.prompt}, {"c", s.c}, {"root", s.root}, {"continuation", s.continuation}};
  if (s.marginals) {
    j["marginals"] = {{"tokens", IntRows(s.marginals->tokens, s.marginals->k)},
                      {"probs", FloatRows(s.marginals->probs, s.marginals->k)}};
  }
  if (s.nodes) {
    j["nodes"] = {{"parents", s.nodes->parents},
                  {"tokens", s.nodes->tokens},
                  {"dist_tokens", IntRows(s.nodes->dist_tokens, s.nodes->k)},
                  {"dist_probs", FloatRows(s.nodes->dist_probs, s.nodes->k)}};
  }
  if (s.draft_s >= 0) j["draft_s"] = s.draft_s;
  if (s.pass >= 0) j["pass"] = s.pass;
  return j.dump();
}

std::string SerializeTrace(const Trace& trace) {
  std::string out = TraceHeaderLine(trace.header);
  out += '\n';
  for (const TraceStep& s : trace.steps) {
    out += TraceStepLine(s);
    out += '\n';
  }
  return out;
}

absl::Status SaveTrace(const Trace& trace, const std::string& path) {
  for (size_t i = 0; i < trace.steps.size(); ++i) {
    auto st = ValidateTraceStep(trace.steps[i], trace.header);
    if (!st.ok()) return Invalid(absl::StrCat("step ", i, ": ", std::string(st.message())));
  }
  return WriteFileAtomically(path, SerializeTrace(trace));
}

std::string BundledTracePath(std::string_view file) {
  if (const char* env = std::getenv("SPECPLAN_TRACE_DIR"); env != nullptr && *env != '\0') {
    return absl::StrCat(env, "/", std::string(file));
  }
  return absl::StrCat(SPECPLAN_TRACE_DIR, "/", std::string(file));
}

std::string DefaultTracePath() { return BundledTracePath("family.jsonl"); }

TraceDraftShape DraftShapeOf(const Trace& trace) {
  TraceDraftShape shape;
  int64_t c_sum = 0;
  for (const TraceStep& st : trace.steps) {
    c_sum += st.c;
    if (st.marginals) shape.max_gamma = std::max(shape.max_gamma, st.marginals->gamma);
  }
  if (!trace.steps.empty()) shape.mean_context = c_sum / static_cast<int64_t>(trace.steps.size());
  return shape;
}

}  // namespace specplan::whatif
