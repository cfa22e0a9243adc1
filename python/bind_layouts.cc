// specplan.sglang_layout and specplan.ragged_layout: a batch of trees as engines' verification
// kernels take them (planner/tree/engine_layouts.h).
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "layouts.h"
#include "record.h"

namespace specplan::python {
namespace {

struct SglangLayoutTag {};  // specplan.SglangLayout
struct RaggedLayoutTag {};  // specplan.RaggedLayout

// Reads `trees` (a sequence of trees) and `context_lens` ([B] integers) into C++ values.
void ReadBatch(py::object trees, py::object context_lens, std::vector<planner::Tree>* out,
               std::vector<int64_t>* c) {
  ReadTrees(trees, "a list of (tokens, parents) trees", out);
  const size_t b = out->size();
  const py::array_t<int64_t> ca = IntArray64(context_lens, "context_lens");
  CheckNdim(ca, 1, "context_lens", "[B]");
  if (static_cast<size_t>(ca.shape(0)) != b) {
    ThrowInvalid(absl::StrCat("context_lens: ", ca.shape(0), " entries, trees has ", b,
                              " (one context length per tree)"));
  }
  c->assign(ca.data(), ca.data() + b);
}

}  // namespace

planner::SglangTreeMaskMode ParseTreeMaskMode(py::handle mode) {
  using planner::SglangTreeMaskMode;
  if (py::isinstance<py::str>(mode)) {
    const std::string s = mode.cast<std::string>();
    for (const EnumEntry<SglangTreeMaskMode>& e : planner::kSglangTreeMaskModeNames) {
      if (s == e.name) return e.value;
    }
    ThrowInvalid(absl::StrCat("tree_mask_mode = '", s, "': unknown (known: ",
                              EnumKnownNames(planner::kSglangTreeMaskModeNames), ")"));
  }
  if (PyLong_Check(mode.ptr()) && !PyBool_Check(mode.ptr())) {
    const long v = mode.cast<long>();
    if (v >= 0 && v <= 2) return static_cast<SglangTreeMaskMode>(v);
    ThrowInvalid(
        absl::StrCat("tree_mask_mode = ", v,
                     ": unknown (known: 0 FULL_MASK, 1 QLEN_ONLY, 2 QLEN_ONLY_BITPACKING)"));
  }
  // SGLang's TreeMaskMode IntEnum, or anything with a name/value.
  if (py::hasattr(mode, "name") && py::isinstance<py::str>(mode.attr("name"))) {
    return ParseTreeMaskMode(mode.attr("name"));
  }
  ThrowWrongType("tree_mask_mode", mode, "'FULL_MASK', 'QLEN_ONLY' or 'QLEN_ONLY_BITPACKING'");
}

namespace {

// Builds a layout dict with `wrap(vector, shape)` making each array: Own (takes the vector over)
// or View (keeps the layout's owner alive).
template <class Layout, class Wrap>
py::dict SglangDictWith(Layout& l, Wrap wrap, py::handle owner) {
  const py::ssize_t b = l.batch_size, d = l.draft_token_num;
  py::dict out;
  out["draft_token_num"] = l.draft_token_num;
  out["tree_mask_mode"] = planner::SglangTreeMaskModeName(l.mode);
  out["draft_tokens"] = wrap(l.draft_tokens, {b * d});
  out["positions"] = wrap(l.positions, {b * d});
  out["retrive_index"] = wrap(l.retrive_index, {b, d});
  out["retrive_next_token"] = wrap(l.retrive_next_token, {b, d});
  out["retrive_next_sibling"] = wrap(l.retrive_next_sibling, {b, d});
  // tree_mask: bool entries, or one unsigned integer per row (the bytes are its memory image).
  py::dtype dt = py::dtype("bool");
  py::ssize_t n = static_cast<py::ssize_t>(l.tree_mask.size());
  if (l.mode == planner::SglangTreeMaskMode::kQlenOnlyBitpacking) {
    const int w = l.tree_mask_bytes_per_row;
    dt = py::dtype(w == 1 ? "uint8" : w == 2 ? "uint16" : "uint32");
    n /= w;
  }
  py::array bytes = wrap(l.tree_mask, {static_cast<py::ssize_t>(l.tree_mask.size())});
  out["tree_mask"] = py::array(dt, {n}, {}, bytes.data(), bytes);
  out["tree_mask_offsets"] = wrap(l.tree_mask_offsets, {b + 1});
  (void)owner;
  return out;
}

template <class Layout, class Wrap>
py::dict RaggedDictWith(Layout& l, Wrap wrap) {
  const py::ssize_t b = l.batch_size, t = l.total_tokens;
  // Sizes first: OwnWrap moves the vectors away.
  const auto mask_total = static_cast<py::ssize_t>(l.mask_offsets[b]);
  const auto retrieve_total = static_cast<py::ssize_t>(l.retrieve_offsets[b]);
  py::dict out;
  out["batch_size"] = l.batch_size;
  out["total_tokens"] = l.total_tokens;
  out["tokens"] = wrap(l.tokens, {t});
  out["cu_seqlens"] = wrap(l.cu_seqlens, {b + 1});
  out["positions"] = wrap(l.positions, {t});
  out["parents"] = wrap(l.parents, {t});
  out["mask_words"] = wrap(l.mask_words, {b});
  out["mask_offsets"] = wrap(l.mask_offsets, {b + 1});
  out["mask_packed"] = wrap(l.mask_packed, {mask_total});
  out["num_leaves"] = wrap(l.num_leaves, {b});
  out["retrieve_width"] = wrap(l.retrieve_width, {b});
  out["retrieve_offsets"] = wrap(l.retrieve_offsets, {b + 1});
  out["retrieve"] = wrap(l.retrieve, {retrieve_total});
  return out;
}

struct OwnWrap {
  template <class T>
  py::array_t<T> operator()(std::vector<T>& v, std::vector<py::ssize_t> shape) const {
    return Own(std::move(v), std::move(shape));
  }
};
struct ViewWrap {
  py::handle owner;
  template <class T>
  py::array_t<T> operator()(const std::vector<T>& v, std::vector<py::ssize_t> shape) const {
    return View<T>(v.data(), std::move(shape), owner);
  }
};

}  // namespace

py::object SglangRecord(planner::SglangLayout&& l) {
  return MakeRecord<SglangLayoutTag>(SglangDictWith(l, OwnWrap{}, {}));
}
py::object RaggedRecord(planner::BatchLayout&& l) {
  return MakeRecord<RaggedLayoutTag>(RaggedDictWith(l, OwnWrap{}));
}
py::object SglangViews(const planner::SglangLayout& l, py::handle owner) {
  return MakeRecord<SglangLayoutTag>(SglangDictWith(l, ViewWrap{owner}, owner));
}
py::object RaggedViews(const planner::BatchLayout& l, py::handle owner) {
  return MakeRecord<RaggedLayoutTag>(RaggedDictWith(l, ViewWrap{owner}));
}

py::object SglangLayoutRecord(absl::Span<const planner::Tree> trees,
                              absl::Span<const int64_t> context_lens, py::handle tree_mask_mode,
                              int draft_token_num, int64_t pad_token) {
  planner::SglangLayoutOptions o;
  if (tree_mask_mode.is_none()) {
    // The default: bit-packed rows when D fits their 32 bits, else QLEN_ONLY's bool rows (which
    // any D takes), so a large plan lays out with the defaults.
    int64_t d = draft_token_num;
    if (d <= 0) {
      for (const planner::Tree& t : trees) d = std::max<int64_t>(d, t.size());
    }
    o.mode = d <= 32 ? planner::SglangTreeMaskMode::kQlenOnlyBitpacking
                     : planner::SglangTreeMaskMode::kQlenOnly;
  } else {
    o.mode = ParseTreeMaskMode(tree_mask_mode);
  }
  if (draft_token_num < 0) {
    ThrowInvalid(absl::StrCat("draft_token_num = ", draft_token_num,
                              ": must be >= 0 (0 or None = the largest tree's size)"));
  }
  o.draft_token_num = draft_token_num;
  o.pad_token = pad_token;
  planner::SglangLayout layout;
  absl::Status st;
  {
    py::gil_scoped_release release;
    st = planner::ComputeSglangLayout(trees, context_lens, o, &layout);
  }
  ThrowIfError(st);
  return SglangRecord(std::move(layout));
}

py::object RaggedLayoutRecord(absl::Span<const planner::Tree> trees,
                              absl::Span<const int64_t> context_lens) {
  planner::BatchLayout layout;
  absl::Status st;
  {
    py::gil_scoped_release release;
    st = planner::ComputeBatchLayout(trees, context_lens, &layout);
  }
  ThrowIfError(st);
  return RaggedRecord(std::move(layout));
}

void BindLayoutRecords(py::module_& m) {
  BindRecord<SglangLayoutTag>(
      m, "SglangLayout",
      "SGLang's EAGLE tree-verification tensors for a batch (sglang_layout, BatchPlan.layout), "
      "named and shaped as sgl-kernel build_tree_kernel_efficient's outputs.",
      {{"draft_token_num", "D, slots per request counting the root"},
       {"tree_mask_mode", "'FULL_MASK', 'QLEN_ONLY' or 'QLEN_ONLY_BITPACKING'"},
       {"draft_tokens", "int64 [B*D]"},
       {"positions", "int64 [B*D], c_b + depth"},
       {"retrive_index", "int64 [B, D], b*D + i"},
       {"retrive_next_token", "int64 [B, D], first child or -1"},
       {"retrive_next_sibling", "int64 [B, D], next sibling or -1"},
       {"tree_mask", "the mask in tree_mask_mode's form (see sglang_layout)"},
       {"tree_mask_offsets", "int64 [B+1], byte offset of request b's rows"}});
  BindRecord<RaggedLayoutTag>(
      m, "RaggedLayout",
      "A batch of trees back to back, flash-attention style (ragged_layout, BatchPlan.layout).",
      {{"batch_size", "B"},
       {"total_tokens", "T"},
       {"tokens", "int32 [T]"},
       {"cu_seqlens", "int32 [B+1]"},
       {"positions", "int64 [T], c_b + depth"},
       {"parents", "int32 [T], local, -1 for a root"},
       {"mask_words", "int32 [B], ceil(s_b / 64)"},
       {"mask_offsets", "int64 [B+1], in words"},
       {"mask_packed", "uint64, request b's [s_b][mask_words[b]] words from mask_offsets[b]"},
       {"num_leaves", "int32 [B]"},
       {"retrieve_width", "int32 [B]"},
       {"retrieve_offsets", "int64 [B+1]"},
       {"retrieve", "int32, request b's [num_leaves[b]][retrieve_width[b]] local indices"}});
}

void BindLayouts(py::module_& m) {
  m.def(
      "sglang_layout",
      [](py::object trees, py::object context_lens, py::object draft_token_num,
         py::object tree_mask_mode, int64_t pad_token) {
        std::vector<planner::Tree> ts;
        std::vector<int64_t> c;
        ReadBatch(trees, context_lens, &ts, &c);
        const int d = draft_token_num.is_none() ? 0 : draft_token_num.cast<int>();
        return SglangLayoutRecord(ts, c, tree_mask_mode, d, pad_token);
      },
      py::arg("trees"), py::arg("context_lens"), py::arg("draft_token_num") = py::none(),
      py::arg("tree_mask_mode") = py::none(), py::kw_only(), py::arg("pad_token") = 0,
      R"doc(SGLang's EAGLE tree-verification tensors for a batch of trees (sgl-kernel
build_tree_kernel_efficient's outputs).

trees: a list of B trees, each a (tokens, parents) pair of int arrays or lists (node 0 = the
root, the verified bonus token; parents[0] = -1, parents[i] < i), or a TreePlan / dict with
tokens and parents. context_lens: [B] cached tokens per request. draft_token_num: D, slots per
request counting the root (None = the largest tree's size; smaller trees are padded with
pad_token, position c_b, no links, a mask row that sees only itself). tree_mask_mode:
'FULL_MASK' | 'QLEN_ONLY' | 'QLEN_ONLY_BITPACKING' (or 0, 1, 2); None = 'QLEN_ONLY_BITPACKING'
when D <= 32, else 'QLEN_ONLY' (the dict's tree_mask_mode says which).

Returns a SglangLayout of NumPy arrays, as SGLang names and shapes them (all flat except retrive_*):
draft_tokens int64 [B*D], positions int64 [B*D] (c_b + depth), retrive_index int64 [B, D]
(b*D + i), retrive_next_token int64 [B, D] (first child, -1), retrive_next_sibling int64 [B, D]
(next sibling, -1), tree_mask (FULL_MASK: bool [sum_b D*(c_b + D)]; QLEN_ONLY: bool [B*D*D];
QLEN_ONLY_BITPACKING: one integer per row [B*D], uint8 for D <= 8, uint16 for D <= 16, uint32 for
D <= 32: bit j of row i = slot j is i or an ancestor; SGLang's tensor is int32 for D > 16, so use
.view(numpy.int32) there), tree_mask_offsets int64 [B+1] (byte offset of request b's rows), plus
draft_token_num and tree_mask_mode; to_dict() gives them as a dict. Errors name the field and value
("trees[1].parents[3] = 3: must be in [0, 3) (topological order)").)doc");

  m.def(
      "ragged_layout",
      [](py::object trees, py::object context_lens) {
        std::vector<planner::Tree> ts;
        std::vector<int64_t> c;
        ReadBatch(trees, context_lens, &ts, &c);
        return RaggedLayoutRecord(ts, c);
      },
      py::arg("trees"), py::arg("context_lens"),
      R"doc(The ragged (flash-attention style) layout of a batch of trees (ComputeBatchLayout):
all requests' nodes back to back. Node i of request b is row cu_seqlens[b] + i.

Returns a RaggedLayout (to_dict() for a dict): batch_size, total_tokens T, tokens int32 [T], cu_seqlens int32 [B+1], positions
int64 [T] (c_b + depth), parents int32 [T] (local, -1 for a root); per request the bit-packed
ancestor mask (mask_words int32 [B] = ceil(s_b / 64), mask_offsets int64 [B+1] in words,
mask_packed uint64: request b's [s_b][mask_words[b]] words from mask_offsets[b]) and the retrieve
matrix (num_leaves int32 [B], retrieve_width int32 [B], retrieve_offsets int64 [B+1],
retrieve int32: request b's [num_leaves[b]][retrieve_width[b]] local indices, -1 padded).)doc");
}

}  // namespace specplan::python
