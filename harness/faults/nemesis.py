"""The nemesis carries out fault steps on the cluster, records each fault's effect, and heals them all.

Every fault has its heal: killed containers are started again (at once; a Kafka node of several stays
down until healing, so that the others take over), a killed driver is replaced by a new spark-submit on
the same checkpoint, paused processes and containers resume, cut links are restored,
isolated containers reconnected, held requests released or dropped. A PostgreSQL commit's connection
dropped in place of its answer (`drop`) needs no heal: the client has its error, the server its commit.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from docker.errors import APIError, NotFound
from docker.models.containers import Container

from harness.cluster.brokers import in_sync_stable_s
from harness.cluster.kafka import KafkaBroker
from harness.cluster.relay import port_reached
from harness.cluster.service import Service
from harness.cluster.topology import REPLICATION, ROLES, Cluster, link_name
from harness.faults.nodes import resolve_node
from harness.faults.processes import PROCESS_TABLE, SNAPSHOT, engine_jvm, executors, holders, plural
from harness.faults.signals import send, signal_until_gone, started
from harness.faults.spec import ANSWERED_POINTS, FaultStep, is_node
from harness.gate.points import GateEvent, Held, Hold
from harness.history import History

IN_SYNC_WAIT_S = 120.0  # after a Kafka node's fault heals: how long every replica may take to catch up


FREEZE_ATTEMPTS = 5  # runc gives up freezing a cgroup whose process is busy in the kernel; it thaws it and says so
FREEZE_RETRY_S = 0.2


def freeze(container: Container) -> None:
    """`docker pause`, tried again where runc could not freeze the container's cgroup in time ("unable to
    freeze", seen with a JVM busy in the kernel on a loaded host): it left the container running, so another
    try is the same fault a moment later, where giving up would leave the row without its fault."""
    for attempt in range(1, FREEZE_ATTEMPTS + 1):
        try:
            container.pause()
            return
        except APIError as error:
            if "unable to freeze" not in str(error) or attempt == FREEZE_ATTEMPTS:
                raise
            time.sleep(FREEZE_RETRY_S)


class Nemesis:
    """Faults as operations on the cluster; `restart_driver` is the scenario's (it owns the driver)."""

    def __init__(self, cluster: Cluster, history: History, driver: Callable[[], Service],
                 replace_driver: Callable[[Callable[[], None]], None]) -> None:
        self.cluster = cluster
        self.history = history
        self.driver = driver
        self.replace_driver = replace_driver
        self._heals: list[tuple[str, Callable[[], None]]] = []
        self._kafka_faults: list[FaultStep] = []  # faults on Kafka's nodes: healing waits for a full ISR
        self._lock = threading.Lock()
        self._closed = threading.Event()  # watchers stop when the scenario is over

    # -- entry point -------------------------------------------------------------------------------

    def inject(self, step: FaultStep, event: GateEvent | None, hold: Held | None) -> None:
        """Carry out one step (on a worker thread); a failure to inject is recorded, never swallowed."""
        name = str(step)
        self.history.record("fault.inject", fault=name, detail=name, trigger=event.fields() if event else None)
        try:
            getattr(self, f"_{step.action}")(step, event, hold)
        except Exception as error:  # noqa: BLE001 - recorded as an effect the scenario reports
            self.history.record("fault.error", fault=name, error=repr(error))
            if hold is not None:
                hold.drop()

    def heal_all(self) -> None:
        """Undo every fault still in force, oldest first; release every hold."""
        with self._lock:
            heals, self._heals = self._heals, []
        for name, heal in heals:
            try:
                heal()
                self.history.record("fault.heal", fault=name)
            except Exception as error:  # noqa: BLE001
                self.history.record("fault.error", fault=name, error=f"heal failed: {error!r}")
        if self.cluster.gate is not None:
            self.cluster.gate.settle_all(forward=True)
        if self._kafka_faults:
            self._wait_in_sync()

    def _wait_in_sync(self) -> None:
        """Kafka is healed when every partition has its every replica in sync again."""
        started = time.monotonic()
        kafka = self.cluster.kafka
        stable = in_sync_stable_s(len(kafka.brokers), {step.action for step in self._kafka_faults})
        behind = kafka.wait_in_sync(IN_SYNC_WAIT_S, stable)
        names = [str(step) for step in self._kafka_faults]
        if behind:
            self.history.record("fault.error", fault=names[0],
                                error=f"after healing, {len(behind)} partitions out of sync for "
                                      f"{IN_SYNC_WAIT_S:g} s: {', '.join(behind[:5])}")
        else:
            self.history.record("kafka.in_sync", faults=names, seconds=round(time.monotonic() - started, 1),
                                stable_s=stable)
        self._kafka_faults.clear()

    def close(self) -> None:
        """The scenario is over: watchers stop before its history closes."""
        self._closed.set()

    def _later(self, name: str, seconds: float, heal: Callable[[], None]) -> None:
        """Heal after `seconds`, unless heal_all comes first."""
        entry = (name, heal)
        with self._lock:
            self._heals.append(entry)

        def fire() -> None:
            with self._lock:
                if entry not in self._heals:
                    return
                self._heals.remove(entry)
            heal()
            self.history.record("fault.heal", fault=name)

        threading.Timer(seconds, fire).start()

    # -- targets -----------------------------------------------------------------------------------

    def _container(self, step: FaultStep, event: GateEvent | None) -> Service:
        if step.target == "driver":
            return self.driver()
        if is_node(step.target):
            return self._node(step, event)
        if event is not None and (step.target == "sender" or event.peer.role == "executors"):
            return self._service(event.peer.container)
        return self._worker_with_executor()  # an executor or worker fault triggered by the driver's request

    def _node(self, step: FaultStep, event: GateEvent | None, target: str | None = None) -> KafkaBroker:
        """The Kafka node a step names (or `target` names for it), as things stand now; recorded with why."""
        node, why = resolve_node(target or step.target, event, self.cluster.kafka, self.cluster.gate)
        self.history.record("fault.target", fault=str(step), container=node.alias, node=node.node_id, why=why)
        with self._lock:
            self._kafka_faults.append(step)
        return node

    def _service(self, alias: str) -> Service:
        for service in self.cluster.services:
            if service.alias == alias:
                return service
        if alias == self.driver().alias:
            return self.driver()
        raise LookupError(f"no service {alias}")

    def _worker_with_executor(self) -> Service:
        for worker in self.cluster.executor_hosts:
            if self._executors(worker):
                return worker
        raise LookupError("no worker runs an executor")

    def _executors(self, service: Service) -> list[int]:
        """The executor JVMs of a worker container, by parentage (harness.faults.processes.executors), or a
        TaskManager's own JVM."""
        status, table = service.output(PROCESS_TABLE)
        if status != 0:
            raise RuntimeError(f"ps in {service.alias} failed (status {status}): {table.strip()[:200]}")
        return engine_jvm(table) if self.cluster.executor_is_host_jvm else executors(table)

    def _senders(self, service: Service, event: GateEvent) -> list[int]:
        """The pids holding the gate connection's client end, from the kernel's tables in the container
        (harness.faults.processes: never a name the sink chose)."""
        peer = event.peer
        _, snapshot = service.output(["sh", "-c", SNAPSHOT])
        pids = holders(snapshot, (peer.address, peer.port), port_reached(peer))
        if not pids:
            raise LookupError(f"no process holds the connection from {peer.address}:{peer.port} in {service.alias}")
        return pids

    def _processes(self, step: FaultStep, event: GateEvent | None) -> tuple[Service, list[int]]:
        """(container, pids) of what a step aims at: the sender (every holder of its connection) or an
        executor JVM."""
        service = self._container(step, event)
        if step.target == "sender" and event is not None:
            return service, self._senders(service, event)
        pids = self._executors(service)
        if not pids:
            raise LookupError(f"no executor process in {service.alias}")
        return service, pids[:1]

    # -- actions -----------------------------------------------------------------------------------

    def _kill(self, step: FaultStep, event: GateEvent | None, hold: Held | None, signal: str = "KILL") -> None:
        name = str(step)
        if step.target in ("driver", "worker") or is_node(step.target) or (step.target == "sender" and event and
                                                                         event.peer.role == "driver"):
            container = self._container(step, event) if step.target != "sender" else self.driver()
            self._kill_container(name, container, signal, hold)
            return
        service, pids = self._processes(step, event)
        before = set(self._all_executor_pids())
        signal_until_gone(service, pids, signal)
        self.history.record("effect", fault=name, effect=f"SIG{signal} to {plural(pids)} in {service.alias}: gone")
        if any(alias == service.alias and pid in pids for alias, _, pid in before):  # else a Python worker
            threading.Thread(target=self._watch_relaunch, args=(name, before), daemon=True).start()
        if hold is not None:
            hold.drop()

    def _stop(self, step: FaultStep, event: GateEvent | None, hold: Held | None) -> None:
        self._kill(step, event, hold, signal="TERM")

    def _kill_container(self, name: str, container: Service, signal: str, hold: Held | None) -> None:
        """Kill a container (a driver is replaced, a broker of several stays down until healing), then settle
        the hold. A driver's is settled the moment it is gone, before its replacement starts: a table's
        point checks then that its fault came before Spark's commit (harness.run.table_watch)."""
        def kill(target: Service = container) -> None:
            wrapped = target.get_wrapped_container()
            wrapped.kill(signal=f"SIG{signal}")
            wrapped.wait(timeout=60)
            self.history.record("effect", fault=name, effect=f"container {target.alias} gone (SIG{signal})")

        def kill_driver() -> None:
            kill(self.driver())
            if hold is not None:
                hold.drop()

        if container.alias == self.driver().alias:
            # the driver when the replacement begins: another kill's replacement may come first
            self.replace_driver(kill_driver)
            self.history.record("recovery", fault=name, detail=f"driver {container.alias} restarted on its checkpoint")
            return
        if isinstance(container, KafkaBroker) and len(self.cluster.kafka.brokers) > 1:
            kill()  # down until healing: the others take its partitions and transactions over

            def restart() -> None:
                container.get_wrapped_container().start()
                self.history.record("recovery", fault=name, detail=f"container {container.alias} started again")

            with self._lock:
                self._heals.append((name, restart))
        else:
            kill()
            container.get_wrapped_container().start()
            self.history.record("recovery", fault=name, detail=f"container {container.alias} started again")
        if hold is not None:
            hold.drop()

    def _all_executor_pids(self) -> list[tuple[str, str, int]]:
        """(host, when it started, pid) of every executor running now: a host started again is new, its pids
        too, whatever their numbers. A host that is not running, or stops while read, runs none."""
        found = []
        for host in self.cluster.executor_hosts:
            since = started(host)
            if since is None:
                continue
            try:
                found += [(host.alias, since, pid) for pid in self._executors(host)]
            except APIError:
                if started(host) == since:
                    raise
        return found

    def _relaunched(self, before: set[tuple[str, str, int]]) -> str | None:
        new = set(self._all_executor_pids()) - before
        return f"new executor process {sorted((alias, pid) for alias, _, pid in new)}" if new else None

    def _watch_relaunch(self, name: str, before: set[tuple[str, str, int]]) -> None:
        """Record the executor's relaunch as the recovery, or say after 60 s that none came, unless the
        scenario ends first."""
        deadline = time.monotonic() + 60
        while not self._closed.wait(0.5):
            seen = self._relaunched(before)
            if seen is not None:
                self.history.record("recovery", fault=name, detail=seen)
                return
            if time.monotonic() > deadline:
                self.history.record("fault.note", fault=name, note="no new executor process within 60 s")
                return

    def _pause(self, step: FaultStep, event: GateEvent | None, hold: Held | None) -> None:
        name = str(step)
        assert step.duration is not None
        paused = self.cluster.gate.paused if self.cluster.gate is not None else set()  # a copy's evidence
        if step.target in ("driver", "worker") or is_node(step.target):
            service = self._container(step, event)
            container = service.get_wrapped_container()
            freeze(container)
            paused.add(service.alias)
            self.history.record("effect", fault=name, effect=f"container {container.name} paused")

            def resume() -> None:
                paused.discard(service.alias)
                try:
                    container.unpause()
                except NotFound:  # replaced while paused (a driver killed meanwhile): nothing left to resume
                    self.history.record("fault.note", fault=name, note=f"container {container.name} gone while paused")
                except APIError as error:
                    if "not paused" not in str(error):  # killed and started again while paused: it runs
                        raise
                if hold is not None:
                    hold.release()
        else:
            service, pids = self._processes(step, event)
            status, said = send(service, pids, "STOP")
            if status != 0:
                raise RuntimeError(f"kill -STOP {' '.join(map(str, pids))} in {service.alias} failed: {said.strip()}")
            paused.add(service.alias)
            self.history.record("effect", fault=name, effect=f"{plural(pids)} in {service.alias} stopped")

            def resume() -> None:
                paused.discard(service.alias)
                send(service, pids, "CONT")
                if hold is not None:
                    hold.release()  # the zombie's late request goes out as it wakes
        self._later(name, step.duration, resume)

    def _partition(self, step: FaultStep, event: GateEvent | None, hold: Held | None) -> None:
        """Cut toxiproxy links: a role's to every broker, the system under test's to one node, or (followers)
        the route the other brokers replicate from a leader by."""
        name = str(step)
        assert step.duration is not None
        brokers = [broker.alias for broker in self.cluster.kafka.brokers]
        if step.point in ANSWERED_POINTS:  # a role's link to the commit's server (spec: only a role there)
            names = [self.cluster.service_link(event.peer.service if event else "postgres", step.target)]
        elif step.target in ROLES:
            names = [link_name(step.target, broker) for broker in brokers]
        elif step.target == "followers":
            names = [link_name(REPLICATION, self._node(step, event, target="leader").alias)]
        else:
            node = self._node(step, event).alias
            names = [link_name(role, node) for role in ROLES]
        client = self.cluster.toxiproxy.client()
        proxies = [client.get_proxy(link) for link in names]
        for proxy in proxies:
            proxy.disable()
        self.history.record("effect", fault=name, effect=f"link{'s' if len(names) > 1 else ''} {', '.join(names)} cut")
        if hold is not None:
            hold.drop()

        def restore() -> None:
            for proxy in proxies:
                proxy.enable()

        self._later(name, step.duration, restore)

    def _isolate(self, step: FaultStep, event: GateEvent | None, hold: Held | None) -> None:
        name = str(step)
        assert step.duration is not None
        service = self._container(step, event)
        network = service._network  # its role's (harness.cluster.topology)
        assert network is not None, "every service is on a network"
        network._unwrap_network.disconnect(service.get_wrapped_container(), force=True)
        self.history.record("effect", fault=name, effect=f"{service.alias} disconnected from the network")
        if hold is not None:
            hold.drop()

        def reconnect() -> None:
            try:
                network.connect(service.get_container_id(), network_aliases=[service.alias])
            except (APIError, NotFound) as error:
                if "already exists" not in str(error):
                    raise

        self._later(name, step.duration, reconnect)

    def _fail(self, step: FaultStep, event: GateEvent | None, hold: Held | None) -> None:
        """The commit went through, its answer is held: answer the step's status in its place."""
        assert isinstance(hold, Hold) and step.status is not None, "a fail step holds an HTTP answer"
        hold.fail(step.status, step.retry_after)
        after = "" if step.retry_after is None else f" (Retry-After: {step.retry_after})"
        self.history.record("effect", fault=str(step), effect=f"the commit applied, answered {step.status}{after} in "
                                                               "its place and its connection closed")

    def _drop(self, step: FaultStep, event: GateEvent | None, hold: Held | None) -> None:
        """The commit went through, its answer is held: close the connection in its place."""
        assert hold is not None
        hold.drop()
        self.history.record("effect", fault=str(step), effect="the commit's answer dropped, its connection closed")

    def _delay(self, step: FaultStep, event: GateEvent | None, hold: Held | None) -> None:
        assert step.duration is not None and hold is not None
        self.history.record("effect", fault=str(step), effect=f"{hold.what} held for {step.duration:g} s")
        self._later(str(step), step.duration, hold.release)
