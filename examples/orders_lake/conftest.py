"""The project's own fixtures. `cluster` names the team's production cluster for its unit tests: the
harness's pytest plugin keeps its own fixtures under `eo_` names, so the two live side by side."""

import pytest


@pytest.fixture
def cluster() -> dict[str, str]:
    return {"name": "orders-prod", "checkpoints": "s3://orders-lake/checkpoints"}
