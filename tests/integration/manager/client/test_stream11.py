"""Watch streams (manager/client/stream11.py): chunked framing across network reads, errors, the read-idle
timeout, backpressure and closing, against a scripted server on 127.0.0.1 (for byte layouts and silences
an API server would not choose) and against kubesim."""

from __future__ import annotations

import asyncio
import gzip
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import orjson
import pytest

from kubesim import KubeSim
from manager.apimachinery.resources import CONFIGMAPS, GroupVersionResource
from manager.client import ApiClient, ConnectError, Disconnected, NotFound, TooManyRequests, create_client
from manager.client.config import RestConfig
from manager.client.stream11 import HIGH_WATER, StreamResponse, open_stream
from tests.helpers import wait_for

Handler = Callable[[asyncio.StreamWriter], Awaitable[None]]
CHUNKED_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"


class StreamServer:
    """Accepts connections; reads each request's head, then lets `handler` write the answer. Records the
    requests and notices when the client closes its end."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.requests: list[bytes] = []
        self.client_closed = asyncio.Event()
        self.writers: list[asyncio.StreamWriter] = []
        self._server: asyncio.Server | None = None
        self.port = 0

    async def __aenter__(self) -> StreamServer:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for writer in self.writers:
            writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.writers.append(writer)
        try:
            self.requests.append(await reader.readuntil(b"\r\n\r\n"))
            handling = asyncio.ensure_future(self.handler(writer))
            await reader.read()  # returns b"" when the client closes its end
            self.client_closed.set()
            handling.cancel()
        except (asyncio.IncompleteReadError, ConnectionError):
            self.client_closed.set()


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def event(name: str, kind: str = "ADDED") -> bytes:
    obj = {"kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}}
    return orjson.dumps({"type": kind, "object": obj}) + b"\n"


@pytest.fixture
async def clients() -> AsyncIterator[Callable[..., ApiClient]]:
    made: list[ApiClient] = []

    def make(port: int, **kwargs: Any) -> ApiClient:
        made.append(ApiClient(RestConfig(host=f"http://127.0.0.1:{port}"), qps=0, **kwargs))
        return made[-1]

    yield make
    for client in made:
        await client.close()


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> asyncio.Event:
    """Set after every network read a StreamResponse handles: a scripted server waits on it between
    writes, so that each write arrives as a read of its own."""
    read = asyncio.Event()
    original = StreamResponse.data_received

    def data_received(self: StreamResponse, data: bytes) -> None:
        original(self, data)
        read.set()

    monkeypatch.setattr(StreamResponse, "data_received", data_received)
    return read


async def test_lines_and_chunks_split_across_reads(
    clients: Callable[..., ApiClient], reads: asyncio.Event
) -> None:
    one, two, three, four = event("a"), event("b", "MODIFIED"), event("c"), event("d", "DELETED")
    body = chunk(one) + chunk(two[:10]) + chunk(two[10:] + three) + chunk(four)
    # Reads cut mid-line, mid-chunk-size, mid-CRLF, and one read carrying several chunks and lines.
    cuts = [5, len(chunk(one)) + 1, len(chunk(one)) + 9, len(body) - 3]
    pieces = [CHUNKED_HEAD + body[: cuts[0]]]
    pieces += [body[a:b] for a, b in zip(cuts, [*cuts[1:], len(body)], strict=True)]
    pieces.append(b"0\r\n\r\n")

    async def answer(writer: asyncio.StreamWriter) -> None:
        for piece in pieces:
            reads.clear()
            writer.write(piece)
            await writer.drain()
            await asyncio.wait_for(reads.wait(), 10)

    async with StreamServer(answer) as server:
        client = clients(server.port)
        stream = client.watch(CONFIGMAPS, "default", resource_version="7", timeout_seconds=60)
        seen = [(kind, obj["metadata"]["name"]) async for kind, obj in stream]
        assert seen == [("ADDED", "a"), ("MODIFIED", "b"), ("ADDED", "c"), ("DELETED", "d")]
        await asyncio.wait_for(server.client_closed.wait(), 10)  # a clean end closes the connection
        assert client.open_watches == 0
    head = server.requests[0].decode()
    request_line, *lines = head.split("\r\n")
    assert request_line.startswith("GET /api/v1/namespaces/default/configmaps?watch=true&resourceVersion=7&")
    assert "timeoutSeconds=60" in request_line and request_line.endswith(" HTTP/1.1")
    headers = {line.split(": ", 1)[0]: line.split(": ", 1)[1] for line in lines if line}
    assert headers["Host"] == f"127.0.0.1:{server.port}"
    assert headers["Accept"] == "application/json" and headers["Accept-Encoding"] == "gzip, deflate"
    assert headers["User-Agent"] == client.user_agent


async def test_gzip_encoded_stream_is_decoded(clients: Callable[..., ApiClient]) -> None:
    data = gzip.compress(event("a") + event("b"))

    async def answer(writer: asyncio.StreamWriter) -> None:
        head = CHUNKED_HEAD.replace(b"\r\n\r\n", b"\r\nContent-Encoding: gzip\r\n\r\n")
        writer.write(head + chunk(data[:7]) + chunk(data[7:]) + b"0\r\n\r\n")

    async with StreamServer(answer) as server:
        stream = clients(server.port).watch(CONFIGMAPS, "default", timeout_seconds=60)
        assert [obj["metadata"]["name"] async for _, obj in stream] == ["a", "b"]


async def test_whole_answer_with_its_head_then_closed_ends_cleanly(clients: Callable[..., ApiClient]) -> None:
    async def answer(writer: asyncio.StreamWriter) -> None:
        writer.write(CHUNKED_HEAD + chunk(event("a")) + b"0\r\n\r\n")
        await writer.drain()
        writer.close()

    async with StreamServer(answer) as server:
        client = clients(server.port)
        stream = await client.watch(CONFIGMAPS, "default", timeout_seconds=60).open()
        await asyncio.wait_for(server.client_closed.wait(), 10)
        assert [obj["metadata"]["name"] async for _, obj in stream] == ["a"]
        assert client.open_watches == 0


async def test_connection_lost_mid_stream_is_disconnected(clients: Callable[..., ApiClient]) -> None:
    async def answer(writer: asyncio.StreamWriter) -> None:
        writer.write(CHUNKED_HEAD + chunk(event("a")) + b"40\r\n{")
        await writer.drain()
        writer.close()

    async with StreamServer(answer) as server:
        seen = []
        with pytest.raises(Disconnected):
            async for _, obj in clients(server.port).watch(CONFIGMAPS, "default", timeout_seconds=60):
                seen.append(obj["metadata"]["name"])
        assert seen == ["a"]


async def test_error_answers_become_typed_errors(clients: Callable[..., ApiClient]) -> None:
    status = orjson.dumps({"kind": "Status", "code": 429, "reason": "TooManyRequests", "message": "slow"})

    async def answer(writer: asyncio.StreamWriter) -> None:
        writer.write(CHUNKED_HEAD.replace(b"200 OK", b"429 Too Many Requests") + chunk(status) + b"0\r\n\r\n")

    async with StreamServer(answer) as server:
        client = clients(server.port)
        with pytest.raises(TooManyRequests, match="slow"):
            await client.watch(CONFIGMAPS, "default", timeout_seconds=60).open()
        await asyncio.wait_for(server.client_closed.wait(), 10)
        assert client.open_watches == 0


async def test_kubesim_refusals_are_typed_errors(kubesim: KubeSim) -> None:
    client = await create_client(kubeconfig=kubesim.kubeconfig, qps=0)
    try:
        missing = GroupVersionResource("example.com", "v1", "widgets", "Widget")
        with pytest.raises(NotFound):
            await client.watch(missing, "default", timeout_seconds=5).open()
        kubesim.faults.fail(429, verb="watch", resource="configmaps", retry_after=3, count=1)
        with pytest.raises(TooManyRequests) as refused:
            await client.watch(CONFIGMAPS, "default", timeout_seconds=5).open()
        assert refused.value.status == 429
        # The next watch is served: nothing of the refused one lingers.
        rv = (await client.list(CONFIGMAPS, "default"))["metadata"]["resourceVersion"]
        after = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "after", "namespace": "default"},
        }
        await client.create(CONFIGMAPS, after)
        async with client.watch(CONFIGMAPS, "default", resource_version=rv, timeout_seconds=5) as stream:
            async for kind, obj in stream:
                assert (kind, obj["metadata"]["name"]) == ("ADDED", "after")
                break
        assert client.open_watches == 0
    finally:
        await client.close()


async def test_refused_connection_is_connect_error(clients: Callable[..., ApiClient]) -> None:
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()
    with pytest.raises(ConnectError):
        await clients(port).watch(CONFIGMAPS, "default", timeout_seconds=5).open()


@pytest.mark.slow
async def test_read_idle_timeout_ends_a_silent_stream(clients: Callable[..., ApiClient]) -> None:
    async def answer(writer: asyncio.StreamWriter) -> None:
        writer.write(CHUNKED_HEAD + chunk(event("a")))  # then silence, the connection left open

    async with StreamServer(answer) as server:
        client = clients(server.port, watch_read_margin=0.3)
        loop = asyncio.get_running_loop()
        seen = []
        started = loop.time()
        with pytest.raises(TimeoutError):
            async for _, obj in client.watch(CONFIGMAPS, "default", timeout_seconds=0):
                seen.append(obj["metadata"]["name"])
        assert seen == ["a"] and 0.25 <= loop.time() - started < 10
        await asyncio.wait_for(server.client_closed.wait(), 10)
        # Without a read timeout (the reflector's choice) the same silence does not end the stream.
        quiet = client.watch(CONFIGMAPS, "default", timeout_seconds=0, read_timeout=False)
        spans = quiet.spans()
        assert len(await anext(spans)) == 1
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(anext(spans), 0.6)
        await quiet.aclose()


async def test_backpressure_pauses_and_resumes_reading() -> None:
    line = b"x" * 1023 + b"\n"
    total = 16 * HIGH_WATER
    transports: list[asyncio.Transport] = []

    async def answer(writer: asyncio.StreamWriter) -> None:
        transports.append(writer.transport)  # type: ignore[arg-type]
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % total)
        for _ in range(total // (64 * 1024)):
            writer.write(line * 64)
            await writer.drain()

    async with StreamServer(answer) as server:
        request = b"GET /stream HTTP/1.1\r\nHost: test\r\n\r\n"
        response = await open_stream(
            "127.0.0.1",
            server.port,
            request,
            ssl_context=None,
            server_hostname=None,
            connect_timeout=5,
            idle_timeout=None,
        )
        try:
            chunks = response.content.iter_any()
            # Nobody reads: the client stops reading above its high-water mark; the server's writes back up.
            await wait_for(lambda: response._paused, message="reading paused")
            await wait_for(lambda: transports[0].get_write_buffer_size() > 0, message="the server backed up")
            assert response._paused
            assert response._buffered <= HIGH_WATER + 256 * 1024  # at most one socket read past the mark
            received = 0
            async for data in chunks:  # draining resumes reading until the end
                received += len(data)
                assert len(data) <= HIGH_WATER + 256 * 1024
            assert received == total and not response._paused
        finally:
            response.close()


async def test_close_and_cancel_close_the_connection(clients: Callable[..., ApiClient]) -> None:
    async def answer(writer: asyncio.StreamWriter) -> None:
        writer.write(CHUNKED_HEAD + chunk(event("a")))

    async with StreamServer(answer) as server:
        client = clients(server.port)
        stream = await client.watch(CONFIGMAPS, "default", timeout_seconds=60).open()
        assert client.open_watches == 1
        await stream.aclose()
        await asyncio.wait_for(server.client_closed.wait(), 10)
        assert client.open_watches == 0

    async with StreamServer(answer) as server:
        client = clients(server.port)
        stream = client.watch(CONFIGMAPS, "default", timeout_seconds=60)
        first = asyncio.Event()

        async def read() -> None:
            async for _ in stream.spans():
                first.set()

        reader = asyncio.create_task(read())
        await asyncio.wait_for(first.wait(), 10)
        reader.cancel()  # waiting for the next read: the connection goes with the reader
        with pytest.raises(asyncio.CancelledError):
            await reader
        await asyncio.wait_for(server.client_closed.wait(), 10)
        assert client.open_watches == 0

    async with StreamServer(answer) as server:
        client = clients(server.port)
        await client.watch(CONFIGMAPS, "default", timeout_seconds=60).open()
        await client.close()  # closing the client closes its watches
        await asyncio.wait_for(server.client_closed.wait(), 10)
