"""What this host can do with the images: build them (an engine and the build tools on PATH) and run
scenarios (an engine, and every image present, in the registry, or buildable here). `doctor`'s two
answers, with exactly what is missing when the answer is no."""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.cluster import images, registry
from harness.cluster.engine import docker_client
from harness.errors import DockerUnavailable


@dataclass(frozen=True)
class Readiness:
    """The engine (why none answers), the build tools this host lacks, and for each image where it comes
    from (present, a registry, a build here) or why it cannot be had."""

    engine_error: str | None
    build_lacks: list[str]
    sources: dict[str, str] = field(default_factory=dict)
    unobtainable: dict[str, str] = field(default_factory=dict)

    @property
    def can_build(self) -> bool:
        return self.engine_error is None and not self.build_lacks

    @property
    def can_run(self) -> bool:
        return self.engine_error is None and not self.unobtainable

    def build_line(self) -> str:
        if self.can_build:
            return "yes"
        lacks = [*self.build_lacks, *(["a Docker engine"] if self.engine_error else [])]
        return f"no: missing {', '.join(lacks)}"

    def run_line(self) -> str:
        if self.engine_error is not None:
            return f"no: missing a Docker engine ({self.engine_error})"
        if self.unobtainable:
            return "no: missing " + "; ".join(f"image {tag} ({why})" for tag, why in self.unobtainable.items())
        counted: dict[str, int] = {}
        for source in self.sources.values():
            counted[source] = counted.get(source, 0) + 1
        return "yes: images " + ", ".join(f"{n} {source}" for source, n in counted.items())


def readiness(registry_name: str) -> Readiness:
    """This host's readiness for this run's versions, asking `registry_name` (if any) what it holds."""
    wanted = images.current().all
    build_lacks = list(dict.fromkeys(lack for image in wanted for lack in images.own_tools_missing(image)))
    try:
        docker_client()
    except DockerUnavailable as error:
        return Readiness(str(error), build_lacks)
    sources, unobtainable = {}, {}
    for image in images.current().all:
        if images.present(image):
            sources[image.tag] = "present"
            continue
        why = registry.holds(registry_name, image.tag) if registry_name else "not present, no registry given"
        lacking = images.tools_missing(image)
        if why is None:
            sources[image.tag] = f"in {registry_name}"
        elif not lacking:
            sources[image.tag] = "to be built here"
        else:
            unobtainable[image.tag] = f"{why}; building it takes {', '.join(lacking)}"
    return Readiness(None, build_lacks, sources, unobtainable)
