"""The report: per scenario an HTML page (timeline, anomaly tables), per run an index of verdicts."""

from harness.report.pages import write_index, write_scenario_page

__all__ = ["write_index", "write_scenario_page"]
