"""Plans in the layouts engines consume: SGLang's EAGLE verification tensors (sglang_layout,
SglangLayout) and the flash-attention style ragged batch (ragged_layout, RaggedLayout). Both
are also computed inside plan_batch(layout=...) and TreePlan.sglang_layout()."""

from ._specplan import RaggedLayout, SglangLayout, ragged_layout, sglang_layout

__all__ = ["RaggedLayout", "SglangLayout", "ragged_layout", "sglang_layout"]
