"""Error types and the exit statuses they map to, so the CLI and pytest report them alike.

The exit contract of `certify`, `run`, `explore`, `shrink` and the pytest plugin (docs/reference/exit-codes.md
is written from EXIT_CODES)."""

EXIT_OK = 0
EXIT_ANOMALIES = 1
EXIT_BAD_INPUT = 2
EXIT_INFRASTRUCTURE = 3
EXIT_NOT_EVERY_CLASS = 4
EXIT_FLAKY = 5

# Each status and when it is given: what a CI script can rely on.
EXIT_CODES = {
    EXIT_OK: "what was asked held: a full certification certified (every applicable fault class tried and "
             "passed); a quick certification, a run, an explore or a test: every scenario tried passed (a quick "
             "certification's line says it is not a certification)",
    EXIT_ANOMALIES: "anomalies: a scenario failed (duplicate, lost, vacuous, ...) or was ineffective (its fault "
                    "did not do what it says); `shrink`: the failure was shrunk and a reproducer written",
    EXIT_BAD_INPUT: "bad input: refused before a cluster starts where the command line and the files show it (an "
                    "unknown option or setting, a sink or pipeline that does not import, a malformed fault step); "
                    "where only a run shows it (a sink or pipeline that fails to import or start in Spark, a table "
                    "the sink never wrote, a pipeline whose fault-free runs disagree), after that run's containers "
                    "are removed",
    EXIT_INFRASTRUCTURE: "the harness's own failure or the infrastructure's (Docker, an image build, a "
                         "container that did not start, an unknown scenario, Ctrl-C): never a verdict on the sink",
    EXIT_NOT_EVERY_CLASS: "a full certification whose every scenario passed but that could not try every "
                          "applicable fault class (e.g. the broker classes on fewer than 3 brokers): not certified",
    EXIT_FLAKY: "`shrink` only: the original failed, but its replays did not fail the same way twice in a row",
}


class HarnessError(Exception):
    """An error the user should see as one clear line, with an exit status."""

    exit_status = EXIT_INFRASTRUCTURE


class BadInput(HarnessError):
    """The user's input is wrong: a pipeline or sink that does not import, a malformed spec. Raised during a
    run too (what only Spark or the output shows); the session removes the cluster on its way out."""

    exit_status = EXIT_BAD_INPUT


class InfrastructureError(HarnessError):
    """Docker, an image build or a container failed: never a verdict on the sink."""

    exit_status = EXIT_INFRASTRUCTURE


class DockerUnavailable(InfrastructureError):
    """No Docker engine answers."""


class ImageBuildFailed(InfrastructureError):
    """One image-build step failed; the message names the step and its log."""


class NotReady(InfrastructureError):
    """A container did not become ready in time; the message carries its log tail."""
