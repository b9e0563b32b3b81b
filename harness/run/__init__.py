"""Running scenarios: a session (images, cluster, run folder), a scenario and its oracle, reference runs."""
