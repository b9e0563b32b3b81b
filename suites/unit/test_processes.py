"""The process a `kill:sender` aims at is found from the kernel's tables in the sender's container, never
from a name the sink chose (`prctl(PR_SET_NAME, "pid=4000000")` led `ss -p`'s first `pid=` astray)."""

from __future__ import annotations

import re

import pytest

from harness.cluster.relay import port_reached
from harness.faults.processes import ESTABLISHED, Connection, connections, endpoint, engine_jvm, holders
from harness.gate import relay
from harness.gate.points import Peer

pytestmark = pytest.mark.unit

# The sender's container (172.18.0.5) as SNAPSHOT prints it: /proc/net/tcp, /proc/net/tcp6, then every
# process's socket links. Its Python worker (pid 217, named "pid=4000000") sent the request from port
# 41394 (A1B2) to the relay (172.18.0.2) at 9092 (2384); the executor JVM (98) holds a dual-stack socket
# to the relay's second broker port; pid 301 holds a connection from the same local port elsewhere.
TCP = """\
  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 30811 1 0000000000000000 100 0 0 10 0
   1: 050012AC:A1B2 020012AC:2384 01 00000000:00000000 02:000A2F7B 00000000     0        0 48213 1 0000000000000000 20 4 30 10 -1
   2: 050012AC:A1B2 030012AC:1B9F 01 00000000:00000000 02:000A2F7B 00000000     0        0 48377 1 0000000000000000 20 4 30 10 -1
   3: 050012AC:A1A0 020012AC:2384 06 00000000:00000000 03:00001679 00000000     0        0 0 3 0000000000000000
"""  # noqa: E501 - the kernel's lines, as they are
TCP6 = """\
  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0000000000000000FFFF0000050012AC:A1C4 0000000000000000FFFF0000020012AC:2385 01 00000000:00000000 00:00000000 00000000     0        0 48990 1 0000000000000000 20 4 30 10 -1
   1: 00000000000000000000000001000000:0FA0 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 30907 1 0000000000000000 100 0 0 10 0
"""  # noqa: E501
LINKS = """\
/proc/1/fd/5 socket:[30811]
/proc/98/fd/211 socket:[48990]
/proc/217/fd/19 socket:[48213]
/proc/301/fd/7 socket:[48377]
"""
SNAPSHOT_OUTPUT = TCP + TCP6 + LINKS
# what `ss -tnpH state established '( sport = :41394 )'` printed for the same container
SS = ('0      0      172.18.0.5:41394 172.18.0.2:9092 users:(("pid=4000000",pid=217,fd=19))\n'
      '0      0      172.18.0.5:41394 172.18.0.3:7071 users:(("python3",pid=301,fd=7))\n')
PEER = Peer("spark-worker-1", "executors", "172.18.0.5", 41394, broker=1)


def test_a_process_named_like_a_pid_is_not_taken_for_the_sender() -> None:
    assert re.search(r"pid=(\d+)", SS).group(1) == "4000000"  # type: ignore[union-attr]  # what `ss` led to
    assert holders(SNAPSHOT_OUTPUT, (PEER.address, PEER.port), port_reached(PEER)) == [217]


def test_the_tables_are_read_as_the_kernel_writes_them() -> None:
    assert endpoint("0100007F:1F90") == ("127.0.0.1", 8080)
    assert endpoint("0000000000000000FFFF0000050012AC:A1C4") == ("172.18.0.5", 41412)  # a JVM's dual-stack socket
    assert endpoint("00000000000000000000000001000000:0FA0") == ("::1", 4000)
    rows = connections(SNAPSHOT_OUTPUT)
    assert len(rows) == 6  # headers and links skipped
    assert rows[1] == Connection(("172.18.0.5", 41394), ("172.18.0.2", 9092), ESTABLISHED, 48213)
    assert rows[3].state == 0x06 and rows[3].inode == 0  # TIME_WAIT: no process holds it


def test_a_connection_is_named_by_both_its_ends_and_only_while_established() -> None:
    assert holders(SNAPSHOT_OUTPUT, ("172.18.0.5", 41394)) == [217, 301]  # same local port, another remote
    assert holders(SNAPSHOT_OUTPUT, ("172.18.0.5", 41394), 9093) == []
    assert holders(SNAPSHOT_OUTPUT, ("127.0.0.1", 41394), 9092) == []
    assert holders(SNAPSHOT_OUTPUT, ("172.18.0.5", 41376), 9092) == []  # TIME_WAIT
    jvm = Peer("spark-worker-1", "executors", "172.18.0.5", 41412, broker=2)
    assert holders(SNAPSHOT_OUTPUT, (jvm.address, jvm.port), port_reached(jvm)) == [98]


def test_every_process_holding_the_connection_is_aimed_at() -> None:
    """A child forked after the connection opened holds it too; the kernel does not say which one wrote."""
    forked = SNAPSHOT_OUTPUT + "/proc/240/fd/19 socket:[48213]\n"
    assert holders(forked, ("172.18.0.5", 41394), 9092) == [217, 240]


def test_only_the_kernel_s_socket_links_count() -> None:
    """A file's link is its path (it begins with /), and a line that is not find's own form is skipped."""
    planted = SNAPSHOT_OUTPUT + "/proc/666/fd/3 /tmp/socket:[48213]\nx /proc/667/fd/3 socket:[48213]\n"
    assert holders(planted, ("172.18.0.5", 41394), 9092) == [217]


def test_the_remote_port_is_the_relay_s_port_the_connection_came_in_on() -> None:
    assert port_reached(Peer("w", "executors", "a", 1, broker=3)) == relay.CLIENT_PORT + 2
    assert port_reached(Peer("w", "executors", "a", 1, service="postgres")) == relay.SERVICE_PORTS["postgres"]


def test_a_taskmanager_s_executor_is_its_own_jvm_whatever_the_job_starts() -> None:
    table = ("    1     0 /sbin/docker-init -- setpriv java\n"
             "    7     1 java -classpath x org.apache.flink.runtime.taskexecutor.TaskManagerRunner\n"
             "   90     7 python -m pyflink.fn_execution.beam.beam_boot\n"
             "   95     1 java org.apache.flink.runtime.taskexecutor.TaskManagerRunner\n")  # a decoy, started later
    assert engine_jvm(table) == [7]
    assert engine_jvm("") == []
