"""Error types and the exit statuses they map to, so the CLI and pytest report them alike."""

EXIT_OK = 0
EXIT_ANOMALIES = 1
EXIT_BAD_INPUT = 2
EXIT_INFRASTRUCTURE = 3


class HarnessError(Exception):
    """An error the user should see as one clear line, with an exit status."""

    exit_status = EXIT_INFRASTRUCTURE


class BadInput(HarnessError):
    """The user's input is wrong: a pipeline or sink that does not import, a malformed spec."""

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
