#include "costmodel/cycle_cost.h"

#include "util/check.h"
#include "util/enum_names.h"

namespace specplan::costmodel {

namespace {
// The first spelling of each class is its name; the later ones are aliases ParseDrafterClass takes.
constexpr EnumEntry<DrafterClass> kDrafterClassNames[] = {
    {DrafterClass::kAutoregressive, "ar"},
    {DrafterClass::kParallelBlock, "parallel"},
    {DrafterClass::kParallelCausal, "causal"},
    {DrafterClass::kAutoregressive, "autoregressive"},
    {DrafterClass::kParallelBlock, "parallel_block"},
    {DrafterClass::kParallelCausal, "parallel_causal"}};
}  // namespace

absl::StatusOr<DrafterClass> ParseDrafterClass(const std::string& name) {
  return ParseEnum(kDrafterClassNames, "drafter class", name);
}

const char* DrafterClassName(DrafterClass cls) { return EnumName(kDrafterClassNames, cls); }

double DrafterCost::DraftSeconds() const {
  switch (cls) {
    case DrafterClass::kAutoregressive:
      return gamma * (t_net_s + t_head_s);
    case DrafterClass::kParallelBlock:
      return t_net_s + t_head_s;
    case DrafterClass::kParallelCausal:
      return t_net_s + t_head_s + gamma * t_light_s;
  }
  return 0.0;
}

double DrafterCost::DraftSeconds(int batch) const {
  SPECPLAN_CHECK(batch >= 1);
  return DraftSeconds() * (1.0 + batch_growth * static_cast<double>(batch - 1));
}

double DrafterCost::DraftSecondsAtDepth(int depth, int batch) const {
  SPECPLAN_CHECK(batch >= 1);
  if (depth_s.empty()) return DraftSeconds(batch);
  const size_t d =
      static_cast<size_t>(std::clamp<int>(depth, 0, static_cast<int>(depth_s.size()) - 1));
  const double growth = d < depth_growth.size() ? depth_growth[d] : batch_growth;
  return depth_s[d] * (1.0 + growth * static_cast<double>(batch - 1));
}

BatchCycleCost::BatchCycleCost(const LatencyModel* verify, DrafterCost drafter, double t_aux_s)
    : verify_(verify), drafter_(drafter), draft1_s_(drafter.DraftSeconds()), aux_s_(t_aux_s) {
  SPECPLAN_CHECK(verify != nullptr);
  SPECPLAN_CHECK(drafter.batch_growth >= 0);
}

CycleCost::CycleCost(const LatencyModel* verify, DrafterCost drafter, double t_aux_s, int64_t c)
    : verify_(verify),
      draft_s_(drafter.DraftSeconds()),
      aux_s_(t_aux_s),
      fixed_s_(draft_s_ + t_aux_s + drafter.per_sequence_s),
      per_token_s_(drafter.per_token_s),
      plain_extra_s_(drafter.plain_step_s + drafter.per_sequence_s + drafter.per_token_s),
      c_(c) {
  SPECPLAN_CHECK(verify != nullptr);
  SPECPLAN_CHECK(c >= 0);
  // Seconds(n) pays DraftSeconds(); a tree of depth d pays depth_s[d] instead.
  depth_s_.reserve(drafter.depth_s.size());
  for (double t : drafter.depth_s) depth_s_.push_back(t - draft_s_);
}

}  // namespace specplan::costmodel
