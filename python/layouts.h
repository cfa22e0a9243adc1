// Engine layouts as Python records of NumPy arrays (specplan.SglangLayout, specplan.RaggedLayout;
// planner/tree/engine_layouts.h), shared by specplan.sglang_layout / ragged_layout and the plan
// results' layout outputs.
#ifndef SPECPLAN_PYTHON_LAYOUTS_H_
#define SPECPLAN_PYTHON_LAYOUTS_H_

#include <cstdint>
#include <string>

#include "absl/types/span.h"
#include "common.h"
#include "planner/tree/engine_layouts.h"
#include "planner/tree/tree.h"

namespace specplan::python {

// "FULL_MASK" | "QLEN_ONLY" | "QLEN_ONLY_BITPACKING" (or SGLang's enum values 0, 1, 2); errors
// name tree_mask_mode.
planner::SglangTreeMaskMode ParseTreeMaskMode(py::handle mode);

// The records of arrays for a computed layout; the arrays take over the layout's vectors (no copy).
py::object SglangRecord(planner::SglangLayout&& layout);
py::object RaggedRecord(planner::BatchLayout&& layout);
// The same as views of a layout that `owner` keeps alive (no copy, no move).
py::object SglangViews(const planner::SglangLayout& layout, py::handle owner);
py::object RaggedViews(const planner::BatchLayout& layout, py::handle owner);

// Registers specplan.SglangLayout and specplan.RaggedLayout (before anything returns them).
void BindLayoutRecords(py::module_& m);

// Computes the layout (GIL released) and returns its record; errors raise (field and value named).
py::object SglangLayoutRecord(absl::Span<const planner::Tree> trees,
                              absl::Span<const int64_t> context_lens, py::handle tree_mask_mode,
                              int draft_token_num, int64_t pad_token);
py::object RaggedLayoutRecord(absl::Span<const planner::Tree> trees,
                              absl::Span<const int64_t> context_lens);

}  // namespace specplan::python

#endif  // SPECPLAN_PYTHON_LAYOUTS_H_
