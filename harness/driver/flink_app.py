"""The harness's Flink job runner, run by `flink run -py` in the JobManager's container: imports the user's
job, gives it a StreamExecutionEnvironment and its context (harness.driver.flink_context), submits what it
built, and prints the job's id for the harness (HARNESS-FLINK-JOB <id>)."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import sys

from harness.driver.flink_context import FlinkJobContext

JOB_MARK = "HARNESS-FLINK-JOB"
ERROR_MARK = "HARNESS-JOB-ERROR"


def arguments() -> argparse.Namespace:
    """Positional only: Flink's client reads every argument that looks like an option as its own."""
    parser = argparse.ArgumentParser()
    parser.add_argument("job", help="module:attribute of the job function")
    parser.add_argument("context", help="the job's context (FlinkJobContext's fields), as JSON")
    parser.add_argument("job_file", nargs="?", help="the job's file, shipped beside the checkpoint")
    return parser.parse_args()


def load(spec: str, shipped: str | None):  # noqa: ANN201 - the user's function, whatever it is
    module_name, _, attribute = spec.partition(":")
    if shipped:
        found = importlib.util.spec_from_file_location(module_name, shipped)
        assert found is not None and found.loader is not None
        module = importlib.util.module_from_spec(found)
        sys.modules[module_name] = module
        found.loader.exec_module(module)
    else:
        module = importlib.import_module(module_name)
    return getattr(module, attribute or "job")


def job_id(built: object, env: object, name: str) -> str:
    """The id of what the job built: a TableResult's job (an INSERT it ran), a JobClient, else the
    environment's pipeline, submitted here."""
    client = getattr(built, "get_job_client", None)
    if callable(client):
        return str(client().get_job_id())
    if hasattr(built, "get_job_id"):
        return str(built.get_job_id())
    return str(env.execute_async(name).get_job_id())  # type: ignore[attr-defined]


def main() -> None:
    args = arguments()
    from pyflink.datastream import StreamExecutionEnvironment

    context = FlinkJobContext(**json.loads(args.context))
    try:
        job = load(args.job, args.job_file)
    except Exception as error:  # noqa: BLE001 - any failure to load is the user's input
        print(f"{ERROR_MARK} {type(error).__name__}: {error}", flush=True)
        raise
    env = StreamExecutionEnvironment.get_execution_environment()
    built = job(env, context)
    print(f"{JOB_MARK} {job_id(built, env, context.name)}", flush=True)


if __name__ == "__main__":
    main()
