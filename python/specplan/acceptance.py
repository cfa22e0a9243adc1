"""What verification accepted, and what to draft next: accept_greedy / accept_greedy_batch
(greedy verification of a tree against the target's argmax), AcceptanceEstimator (online
acceptance and the surrogate's calibration) and SpeculationGate (does the next step draft, how
deep)."""

from ._specplan import (
    AcceptanceEstimator,
    AcceptResult,
    BatchAcceptResult,
    GateDecision,
    GateStats,
    SpeculationGate,
    accept_greedy,
    accept_greedy_batch,
)

__all__ = [
    "AcceptResult", "AcceptanceEstimator", "BatchAcceptResult", "GateDecision", "GateStats",
    "SpeculationGate", "accept_greedy", "accept_greedy_batch",
]
