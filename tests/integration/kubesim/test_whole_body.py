"""Request bodies taken by `kubesim.api.wholebody` (no resume round trip when reading is not paused): over
real HTTP, small, split, chunked, large (past aiohttp's flow-control mark, so reading pauses) and pipelined
bodies all arrive whole; the reader is left as `read_nowait` leaves it; and the installed aiohttp still keeps
the private state the fast path reads (this fails loudly when an upgrade renames it)."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest
from aiohttp import base_protocol, streams

from kubesim import KubeSim
from kubesim.api import wholebody
from kubesim.pytest_plugin import KubeSimFactory

CMS = "/api/v1/namespaces/default/configmaps"


@pytest.fixture
async def sim(kubesim_factory: KubeSimFactory) -> KubeSim:
    return await kubesim_factory(kubelet=False)


def test_installed_aiohttp_keeps_the_state_read() -> None:
    assert wholebody.SUPPORTED, "aiohttp's reader or protocol state changed: review kubesim.api.wholebody"


def configmap(name: str, size: int) -> bytes:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"v": "x" * size}}
    return orjson.dumps(body)


def request(path: str, host: str, body: bytes, chunked: bool = False) -> bytes:
    head = f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
    if chunked:
        return (head + "Transfer-Encoding: chunked\r\n\r\n").encode() + b"%x\r\n%b\r\n0\r\n\r\n" % (
            len(body),
            body,
        )
    return (head + f"Content-Length: {len(body)}\r\n\r\n").encode() + body


async def answers(reader: asyncio.StreamReader, count: int) -> list[tuple[int, Any]]:
    out = []
    for _ in range(count):
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
        status = int(head.split(b" ", 2)[1])
        fields = dict(f.partition(b": ")[::2] for f in head[:-4].split(b"\r\n")[1:])
        data = await asyncio.wait_for(reader.readexactly(int(fields[b"Content-Length"])), 30)
        out.append((status, orjson.loads(data)))
    return out


async def send(sim: KubeSim, pieces: list[bytes], count: int) -> list[tuple[int, Any]]:
    """Write `pieces` one after the other on one connection (a drain between them), read `count` answers."""
    host, port = sim.url.split("//", 1)[1].rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        for piece in pieces:
            writer.write(piece)
            await writer.drain()
        return await answers(reader, count)
    finally:
        writer.close()


@pytest.mark.parametrize(
    ("name", "size", "split", "chunked"),
    [
        ("small", 10, False, False),
        ("split", 2000, True, False),  # the body arrives in two reads: two chunks in the reader
        ("chunked", 2000, False, True),  # no Content-Length: read to the end
        ("large", 600_000, False, False),  # past twice the reader's limit: reading pauses, then resumes
    ],
)
async def test_bodies_arrive_whole(sim: KubeSim, name: str, size: int, split: bool, chunked: bool) -> None:
    host = sim.url.split("//", 1)[1]
    wire = request(CMS, host, configmap(name, size), chunked=chunked)
    pieces = [wire[: len(wire) - 500], wire[len(wire) - 500 :]] if split else [wire]
    [(status, obj)] = await send(sim, pieces, 1)
    assert status == 201, obj
    assert obj["metadata"]["name"] == name and obj["data"]["v"] == "x" * size


async def test_pipelined_requests_with_bodies_are_all_answered(sim: KubeSim) -> None:
    host = sim.url.split("//", 1)[1]
    names = [f"pipe-{i}" for i in range(12)]
    wire = b"".join(request(CMS, host, configmap(n, 50)) for n in names)  # one write: parsed together
    got = await send(sim, [wire], len(names))
    assert [(status, obj["metadata"]["name"]) for status, obj in got] == [(201, n) for n in names]


class Protocol(base_protocol.BaseProtocol):
    """A protocol that records resume_reading (the call the fast path leaves out)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(loop)
        self.resumed = 0

    def resume_reading(self, resume_parser: bool = True) -> None:
        self.resumed += 1
        super().resume_reading(resume_parser=False)


def reader_state(reader: streams.StreamReader) -> tuple[Any, ...]:
    return (list(reader._buffer), reader._buffer_offset, reader._size, reader._cursor, reader.total_bytes)


@pytest.mark.parametrize("paused", [None, "_reading_paused", "_buffer_paused"])
async def test_take_leaves_the_reader_as_read_nowait_does(paused: str | None) -> None:
    loop = asyncio.get_running_loop()
    states = []
    resumed = []
    for use_take in (False, True):
        protocol = Protocol(loop)
        reader = streams.StreamReader(protocol, 2**16, loop=loop)
        reader.feed_data(b'{"a":1}')
        reader.feed_eof()
        if paused is not None:
            setattr(protocol, paused, True)
        protocol.resumed = 0  # feed_eof resumes too
        data = wholebody.take(reader, 7) if use_take else reader.read_nowait()
        assert data == b'{"a":1}' and reader.is_eof()
        states.append(reader_state(reader))
        resumed.append(protocol.resumed)
    assert states[0] == states[1]
    # read_nowait resumes the protocol; take does too when reading was paused, and only then
    assert resumed == ([1, 1] if paused else [1, 0]), resumed


async def test_take_falls_back_for_several_chunks() -> None:
    loop = asyncio.get_running_loop()
    protocol = Protocol(loop)
    reader = streams.StreamReader(protocol, 2**16, loop=loop)
    reader.feed_data(b'{"a":')
    reader.feed_data(b"1}")
    reader.feed_eof()
    protocol.resumed = 0
    assert wholebody.take(reader, 7) == b'{"a":1}'
    assert protocol.resumed >= 1 and reader_state(reader)[:4] == ([], 0, 0, 7)


async def test_take_raises_what_read_nowait_raises() -> None:
    loop = asyncio.get_running_loop()
    failures = []
    for read in (lambda r: r.read_nowait(), lambda r: wholebody.take(r, 7)):
        reader = streams.StreamReader(Protocol(loop), 2**16, loop=loop)
        reader.feed_data(b'{"a":1}')
        reader.feed_eof()
        reader.set_exception(ConnectionResetError("gone"))
        with pytest.raises(ConnectionResetError) as raised:
            read(reader)
        failures.append(str(raised.value))
    assert failures == ["gone", "gone"]
