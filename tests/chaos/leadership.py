"""Who wrote what, and whether it was the leader then.

Writes come from kubesim's audit log (one line per mutating request, with the client's `ip:port`). The port
is mapped to the manager process whose socket it is (Linux /proc: /proc/net/tcp gives the socket inode of a
local port, /proc/<pid>/fd the process holding that inode), and the process to its leader-election identity
(logged at start). Leadership comes from the Lease as the test's watch sees it: each holder from its
acquireTime, valid until its last renewTime plus the lease duration.
"""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

# A write's `time` is when the server received it; the lease times are the manager's clock when it sent the
# renewal. The slack covers a request in flight across that boundary (the managers and kubesim share a clock).
SLACK_SECONDS = 1.0
NOT_ELECTION = ("/leases",)
SPLIT_BRAIN_AFTERMATH = 5.0  # the elector's own writes are how a replica becomes leader: never counted


def parse_micro_time(value: str) -> float:
    return datetime.datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.UTC).timestamp()


@dataclass
class LeaseTimeline:
    """Every (holder, acquireTime, renewTime) the Lease showed, in order."""

    lease_duration: float
    records: list[tuple[str, float, float]] = field(default_factory=list)

    def observe(self, lease: dict[str, Any]) -> None:
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        if holder and spec.get("acquireTime") and spec.get("renewTime"):
            record = (holder, parse_micro_time(spec["acquireTime"]), parse_micro_time(spec["renewTime"]))
            if not self.records or self.records[-1] != record:
                self.records.append(record)

    @property
    def holder(self) -> str:
        return self.records[-1][0] if self.records else ""

    def holders(self) -> list[str]:
        seen: list[str] = []
        for holder, _, _ in self.records:
            if not seen or seen[-1] != holder:
                seen.append(holder)
        return seen

    def leader_then(self, when: float) -> str:
        """Who held the Lease at `when` as the watch saw it, and how long before its last renewal was."""
        held = [r for r in self.records if r[1] <= when]
        if not held:
            return "none yet"
        holder, acquired = held[-1][0], held[-1][1]
        renewed = max([r[2] for r in held if r[0] == holder and r[2] <= when], default=acquired)
        return f"{holder} (acquired {when - acquired:.1f}s, renewed {when - renewed:.1f}s before)"

    def leader_at(self, identity: str, when: float) -> str | None:
        """None if `identity` may write at `when`, else why not."""
        mine = [r for r in self.records if r[0] == identity and r[1] <= when + SLACK_SECONDS]
        if not mine:
            return "had never acquired the lease"
        acquired = mine[-1][1]
        renewed = max(r[2] for r in mine if r[2] <= when + SLACK_SECONDS)
        if when > renewed + self.lease_duration + SLACK_SECONDS:
            return f"its lease expired {when - renewed - self.lease_duration:.1f}s before"
        taken = [r for r in self.records if r[0] != identity and acquired < r[1] < when - SLACK_SECONDS]
        if taken:
            return f"{taken[0][0]} acquired the lease {when - taken[0][1]:.1f}s before"
        return None


@dataclass(frozen=True)
class Write:
    time: float
    verb: str
    path: str
    code: int
    user_agent: str
    port: int


def parse_audit_line(line: bytes) -> Write | None:
    try:
        entry = orjson.loads(line)
        port = int(str(entry["peer"]).rsplit(":", 1)[1])
        return Write(entry["time"], entry["verb"], entry["path"], entry["code"], entry["userAgent"], port)
    except (orjson.JSONDecodeError, KeyError, IndexError, ValueError, TypeError):
        return None  # a line cut by a kill of the server


def _socket_inodes(pid: int) -> set[int]:
    inodes = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(int(target[8:-1]))
    except OSError:
        pass  # the process is gone
    return inodes


def _client_ports(server_port: int) -> dict[int, int]:
    """socket inode -> local port of every IPv4 connection to `server_port`."""
    ports = {}
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, remote, inode = fields[1], fields[2], int(fields[9])
        if int(remote.split(":")[1], 16) == server_port and inode:
            ports[inode] = int(local.split(":")[1], 16)
    return ports


class SocketOwners:
    """Which process owns the client end of each connection to the API server, sampled as often as asked
    (a connection opened and closed between two samples stays unknown)."""

    def __init__(self, server_port: int) -> None:
        self.server_port = server_port
        self.owner_of_port: dict[int, int] = {}

    def sample(self, pids: list[int]) -> None:
        ports = _client_ports(self.server_port)
        for pid in pids:
            for inode in _socket_inodes(pid) & ports.keys():
                self.owner_of_port[ports[inode]] = pid


@dataclass
class WriteAudit:
    """Attributes the audit log's writes to manager identities and judges them against the timeline."""

    path: Path
    owners: SocketOwners
    identity_of_pid: dict[int, str] = field(default_factory=dict)
    attributed: list[tuple[str, Write]] = field(default_factory=list)
    unattributed: list[Write] = field(default_factory=list)
    _offset: int = 0
    _waiting: list[tuple[int, Write]] = field(default_factory=list)

    def poll(self, pids: list[int], final: bool = False) -> None:
        """Sample the sockets, then read the new lines; a line is given two polls to be attributed (none
        more when `final`)."""
        self.owners.sample(pids)
        waiting, self._waiting = self._waiting, []
        for tries, write in waiting + [(0, w) for w in self._read_new()]:
            pid = self.owners.owner_of_port.get(write.port)
            identity = self.identity_of_pid.get(pid) if pid is not None else None
            if identity is not None:
                self.attributed.append((identity, write))
            elif tries < 2 and not final:
                self._waiting.append((tries + 1, write))
            else:
                self.unattributed.append(write)

    def _read_new(self) -> list[Write]:
        if not self.path.exists():
            return []
        with self.path.open("rb") as f:
            f.seek(self._offset)
            data = f.read()
        complete = data[: data.rfind(b"\n") + 1]
        self._offset += len(complete)
        writes = [parse_audit_line(line) for line in complete.splitlines()]
        return [w for w in writes if w is not None and w.user_agent.startswith("aiokcm/")]

    def stale_writes(self, timeline: LeaseTimeline) -> list[tuple[float, str]]:
        """(time, description) of each write from a replica that was not the leader then."""
        found = []
        for identity, write in self.attributed:
            if any(marker in write.path for marker in NOT_ELECTION):
                continue
            why = timeline.leader_at(identity, write.time)
            if why is not None:
                found.append((write.time, f"{write.verb} {write.path} -> {write.code} by {identity}: {why}"))
        return found


def split_brain_windows(
    times: list[float], after: float = SPLIT_BRAIN_AFTERMATH
) -> list[tuple[float, float]]:
    """The spans in which two replicas wrote: from a stale write to `after` seconds past the last one near
    it (what the two wrote at once shows up in the objects within that time)."""
    windows: list[tuple[float, float]] = []
    for when in sorted(times):
        if windows and when <= windows[-1][1]:
            windows[-1] = (windows[-1][0], when + after)
        else:
            windows.append((when - SLACK_SECONDS, when + after))
    return windows
