"""Checkers name anomalies in what the reader read against what the pipeline's model expects."""

from harness.checker.compose import OutputCheck, check
from harness.checker.exactly_once import ExactlyOnceChecker
from harness.checker.order import PerKeyOrderChecker
from harness.checker.verdict import (
    AT_LEAST_ONCE,
    AT_MOST_ONCE,
    EFFECTIVELY_ONCE,
    EXACTLY_ONCE,
    FAIL,
    NONE,
    PASS,
    UNKNOWN,
    Anomaly,
    Expected,
    Verdict,
)

__all__ = [
    "AT_LEAST_ONCE", "AT_MOST_ONCE", "EFFECTIVELY_ONCE", "EXACTLY_ONCE", "FAIL", "NONE", "PASS", "UNKNOWN",
    "Anomaly", "Expected", "ExactlyOnceChecker", "OutputCheck", "PerKeyOrderChecker", "Verdict", "check",
]
