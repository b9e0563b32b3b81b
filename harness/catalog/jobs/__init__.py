"""Flink jobs (`--engine flink`): the references and known-bad jobs, each a file a Flink user could copy. A job is
`job(env, context)`: it builds its pipeline on the StreamExecutionEnvironment (or a table environment made from
it) from where the context says its input and output are, and returns what it submitted (a TableResult of its
INSERT), or nothing for the runner to submit the environment's pipeline (harness.driver.flink_app)."""
