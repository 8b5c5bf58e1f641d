"""The unary request pool (manager/client/http11.py): HTTP/1.1 framing and connection handling against a
scripted server (for answers no API server would choose to send: chunked, close-delimited, broken), and
the ApiClient over it against kubesim, over plain HTTP and TLS."""

from __future__ import annotations

import asyncio
import base64
import ssl
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import trustme

from kubesim import KubeSim
from manager.apimachinery.resources import CONFIGMAPS
from manager.client import ApiClient, ConnectError, Disconnected, NotFound, create_client
from manager.client.http11 import Http11Pool
from tests.helpers import exec_plugin_user, wait_for, write_kubeconfig

Script = Callable[[int, bytes], bytes | None]  # (request number on this connection, request) -> answer


class ScriptedServer:
    """Answers each request with `script(n, request)`; None closes the connection without answering."""

    def __init__(
        self, script: Script, close_after_answer: bool = False, ssl_context: ssl.SSLContext | None = None
    ) -> None:
        self.script = script
        self.close_after_answer = close_after_answer
        self.ssl_context = ssl_context
        self.connections = 0
        self.requests: list[bytes] = []
        self.client_names: list[str] = []  # the common name of each connection's client certificate
        self._server: asyncio.Server | None = None
        self.port = 0

    async def __aenter__(self) -> ScriptedServer:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.ssl_context)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        peer = writer.get_extra_info("peercert")
        if peer:
            self.client_names.append(dict(field[0] for field in peer["subject"])["commonName"])
        n = 0
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                request = head + (await reader.readexactly(length) if length else b"")
                self.requests.append(request)
                answer = self.script(n, request)
                n += 1
                if answer is None:
                    break
                writer.write(answer)
                await writer.drain()
                if self.close_after_answer:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


def ok(body: bytes, extra: bytes = b"") -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n%s" % (len(body), extra, body)


def get(path: str = "/x") -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: test\r\n\r\n".encode()


@pytest.fixture
async def pool_factory() -> AsyncIterator[Callable[..., Http11Pool]]:
    pools: list[Http11Pool] = []

    def make(port: int, **kwargs: Any) -> Http11Pool:
        pools.append(Http11Pool("127.0.0.1", port, **kwargs))
        return pools[-1]

    yield make
    for pool in pools:
        pool.close()


async def test_keep_alive_reuses_one_connection(pool_factory: Callable[..., Http11Pool]) -> None:
    async with ScriptedServer(lambda n, _: ok(b"answer %d" % n)) as server:
        pool = pool_factory(server.port)
        bodies = [(await pool.request(get(), 5)).body for _ in range(20)]
    assert bodies == [b"answer %d" % n for n in range(20)]
    assert server.connections == 1


async def test_chunked_answer_is_decoded(pool_factory: Callable[..., Http11Pool]) -> None:
    chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
    async with ScriptedServer(lambda n, _: chunked) as server:
        pool = pool_factory(server.port)
        first = await pool.request(get(), 5)
        second = await pool.request(get(), 5)
    assert first.body == second.body == b"hello world"
    assert server.connections == 1


async def test_answer_delimited_by_close(pool_factory: Callable[..., Http11Pool]) -> None:
    answer = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end"
    async with ScriptedServer(lambda n, _: answer, close_after_answer=True) as server:
        pool = pool_factory(server.port)
        first = await pool.request(get(), 5)
        second = await pool.request(get(), 5)
    assert first.body == second.body == b"until the end"
    assert server.connections == 2  # "Connection: close" is honoured: no reuse


async def test_headers_are_readable(pool_factory: Callable[..., Http11Pool]) -> None:
    async with ScriptedServer(lambda n, _: ok(b"{}", b"Retry-After: 3\r\n")) as server:
        answer = await pool_factory(server.port).request(get(), 5)
    assert answer.header("retry-after") == "3" and answer.header("X-Missing") is None


async def test_server_closing_without_answer_is_disconnected(pool_factory: Callable[..., Http11Pool]) -> None:
    async with ScriptedServer(lambda n, _: None) as server:
        pool = pool_factory(server.port)
        with pytest.raises(Disconnected):
            await pool.request(get(), 5)
    assert pool.open_connections == 0


async def test_malformed_answer_is_disconnected(pool_factory: Callable[..., Http11Pool]) -> None:
    async with ScriptedServer(lambda n, _: b"NOT HTTP AT ALL\r\n\r\n") as server:
        pool = pool_factory(server.port)
        with pytest.raises(Disconnected, match="malformed"):
            await pool.request(get(), 5)
    assert pool.open_connections == 0


async def test_timeout_closes_the_connection(pool_factory: Callable[..., Http11Pool]) -> None:
    # The server never answers the first request: it times out and its connection is dropped.
    server = ScriptedServer(lambda n, _: b"" if len(server.requests) == 1 else ok(b"late"))
    async with server:
        pool = pool_factory(server.port)
        with pytest.raises(TimeoutError):
            await pool.request(get(), 0.2)
        assert pool.open_connections == 0
        answer = await pool.request(get(), 5)
    assert answer.body == b"late" and server.connections == 2


async def test_each_request_times_out_at_its_own_deadline(pool_factory: Callable[..., Http11Pool]) -> None:
    # The pool keeps one timer for the earliest deadline: a short timeout after a long one still expires
    # on time, the long one later, and an answered request leaves nothing that expires a later request.
    server = ScriptedServer(lambda n, request: ok(b"now") if b"/fast" in request else b"")
    async with server:
        pool = pool_factory(server.port)
        loop = asyncio.get_running_loop()
        assert (await pool.request(get("/fast"), 0.3)).body == b"now"
        started = loop.time()
        long = asyncio.ensure_future(pool.request(get("/slow-long"), 1.0))
        await asyncio.sleep(0)
        with pytest.raises(TimeoutError):
            await pool.request(get("/slow-short"), 0.2)
        short_took = loop.time() - started
        assert not long.done()
        with pytest.raises(TimeoutError):
            await long
        long_took = loop.time() - started
        assert (await pool.request(get("/fast"), 0.3)).body == b"now"
    assert 0.15 < short_took < 0.9, short_took
    assert 0.95 < long_took < 3.0, long_took


def _live_timers(loop: asyncio.AbstractEventLoop, pool: Http11Pool) -> list[asyncio.TimerHandle]:
    """The pool's timers scheduled on the loop (cancelled ones included: each is a heap entry)."""
    scheduled: list[asyncio.TimerHandle] = loop._scheduled  # type: ignore[attr-defined]  # asyncio's timer heap
    callbacks = ((handle, handle._callback) for handle in scheduled)  # type: ignore[attr-defined]
    return [handle for handle, callback in callbacks if getattr(callback, "__self__", None) is pool]


@pytest.mark.slow
async def test_one_timer_serves_consecutive_requests_and_an_idle_pool_has_none(
    pool_factory: Callable[..., Http11Pool],
) -> None:
    # Paced requests (one in flight at a time) share the timer armed by the first: nothing is armed or
    # cancelled per request. After the last answer it fires once, finds nothing awaited and re-arms nothing.
    async with ScriptedServer(lambda n, _: ok(b"now")) as server:
        pool = pool_factory(server.port)
        loop = asyncio.get_running_loop()
        await pool.request(get(), 2.0)  # long enough for the next five requests, even on a busy machine
        first = pool._timer
        assert first is not None and not first.cancelled()
        for _ in range(5):
            await pool.request(get(), 2.0)
        assert pool._timer is first
        assert _live_timers(loop, pool) == [first]  # no cancelled handles left in the heap either
        await wait_for(lambda: pool._timer is None, timeout=10)
        assert _live_timers(loop, pool) == []  # idle: nothing left to wake the process


@pytest.mark.slow
async def test_a_stalled_answer_times_out_at_its_deadline_behind_an_earlier_timer(
    pool_factory: Callable[..., Http11Pool],
) -> None:
    # The timer armed by an answered request (deadline 1 s) fires first, finds nothing due and re-arms for
    # the stalled request's own deadline (2 s), which then fails: neither early nor late.
    server = ScriptedServer(lambda n, request: ok(b"now") if b"/fast" in request else b"")
    async with server:
        pool = pool_factory(server.port)
        loop = asyncio.get_running_loop()
        assert (await pool.request(get("/fast"), 1.0)).body == b"now"
        armed = pool._timer
        started = loop.time()
        stalled = asyncio.ensure_future(pool.request(get("/slow"), 2.0))
        await wait_for(lambda: len(server.requests) == 2, timeout=5)
        assert pool._timer is armed  # a later deadline arms nothing
        await wait_for(lambda: pool._timer is not armed, timeout=5)  # fired: re-armed for the stalled one
        assert not stalled.done() and pool._timer is not None
        with pytest.raises(TimeoutError):
            await stalled
        took = loop.time() - started
        assert pool._timer is None and _live_timers(loop, pool) == []
    assert 1.95 < took < 4.0, took


async def test_idle_connection_closed_by_the_server_is_not_reused(
    pool_factory: Callable[..., Http11Pool],
) -> None:
    # A keep-alive answer, then the server drops the idle connection (as an API server does after its idle
    # timeout): the pool notices and the next request opens a new connection instead of failing.
    async with ScriptedServer(lambda n, _: ok(b"a"), close_after_answer=True) as server:
        pool = pool_factory(server.port)
        await pool.request(get(), 5)
        await wait_for(lambda: pool.open_connections == 0, message="the pool notices the close")
        answer = await pool.request(get(), 5)
    assert answer.body == b"a" and server.connections == 2


async def test_connection_limit_is_respected(pool_factory: Callable[..., Http11Pool]) -> None:
    async with ScriptedServer(lambda n, _: ok(b"x")) as server:
        pool = pool_factory(server.port, limit=3)
        answers = await asyncio.gather(*(pool.request(get(), 5) for _ in range(30)))
    assert all(a.body == b"x" for a in answers)
    assert server.connections <= 3


async def test_a_request_cancelled_while_waiting_for_a_connection_gives_its_turn_on(
    pool_factory: Callable[..., Http11Pool],
) -> None:
    # One connection allowed: the first request holds it until it times out; the second, waiting, is
    # cancelled; the third gets the connection and the pool ends with its one slot free.
    server = ScriptedServer(lambda n, request: ok(b"now") if b"/fast" in request else b"")
    async with server:
        pool = pool_factory(server.port, limit=1)
        holder = asyncio.ensure_future(pool.request(get("/slow"), 0.3))
        await wait_for(lambda: len(server.requests) == 1, message="the first request sent")
        cancelled = asyncio.ensure_future(pool.request(get("/fast"), 5))
        third = asyncio.ensure_future(pool.request(get("/fast"), 5))
        await asyncio.sleep(0)
        cancelled.cancel()
        with pytest.raises(TimeoutError):
            await holder
        assert (await asyncio.wait_for(third, 5)).body == b"now"
        assert cancelled.cancelled() and len(server.requests) == 2
        assert pool.open_connections <= 1
        assert (await pool.request(get("/fast"), 5)).body == b"now"


async def test_refused_connection_is_connect_error(pool_factory: Callable[..., Http11Pool]) -> None:
    async with ScriptedServer(lambda n, _: None) as server:
        port = server.port
    with pytest.raises(ConnectError):
        await pool_factory(port).request(get(), 5)


async def test_api_client_requests_reuse_connections(kubesim: KubeSim) -> None:
    client = await create_client(kubeconfig=kubesim.kubeconfig, qps=0)
    try:
        for i in range(25):
            await client.create(
                CONFIGMAPS, {"metadata": {"name": f"cm-{i}"}, "data": {"i": str(i)}}, "default"
            )
        listed = await client.list(CONFIGMAPS, "default", label_selector="!absent")
        with pytest.raises(NotFound):
            await client.get(CONFIGMAPS, "missing", "default")
        assert client.pool.open_connections == 1
    finally:
        await client.close()
    assert {f"cm-{i}" for i in range(25)} <= {item["metadata"]["name"] for item in listed["items"]}


@pytest.fixture(scope="module")
def certificate_authority() -> trustme.CA:
    return trustme.CA()


async def tls_sim(ca: trustme.CA) -> KubeSim:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1", "localhost").configure_cert(context)
    return await KubeSim(nodes=1, ssl_context=context, ca_pem=ca.cert_pem.bytes().decode()).start()


async def test_api_client_over_tls_verifies_the_server(certificate_authority: trustme.CA) -> None:
    sim = await tls_sim(certificate_authority)
    try:
        assert sim.url.startswith("https://")
        client = await create_client(kubeconfig=sim.kubeconfig, qps=0)
        try:
            created = await client.create(CONFIGMAPS, {"metadata": {"name": "over-tls"}}, "default")
            fetched = await client.get(CONFIGMAPS, "over-tls", "default")
        finally:
            await client.close()
        assert fetched["metadata"]["uid"] == created["metadata"]["uid"]
    finally:
        await sim.stop()


async def test_api_client_refuses_a_server_signed_by_another_ca(certificate_authority: trustme.CA) -> None:
    sim = await tls_sim(trustme.CA())  # a certificate from a CA that the client below does not trust
    try:
        loaded = await create_client(kubeconfig=sim.kubeconfig, qps=0)
        await loaded.close()
        config = loaded.config
        config.ssl_context = ssl.create_default_context()
        certificate_authority.configure_trust(config.ssl_context)
        client = ApiClient(config, max_retries=0)
        try:
            with pytest.raises(ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
                await client.get(CONFIGMAPS, "anything", "default")
        finally:
            await client.close()
    finally:
        await sim.stop()


async def test_many_watches_and_requests_at_once(kubesim: KubeSim) -> None:
    # More watches than any fixed pool would hold, each on its own connection, while requests still flow.
    client = await create_client(kubeconfig=kubesim.kubeconfig, qps=0)
    try:
        rv = (await client.list(CONFIGMAPS, "default"))["metadata"]["resourceVersion"]
        opening = (
            client.watch(CONFIGMAPS, "default", resource_version=rv, timeout_seconds=30).open()
            for _ in range(130)
        )
        streams = await asyncio.wait_for(asyncio.gather(*opening), 20)
        await client.create(CONFIGMAPS, {"metadata": {"name": "seen-by-all"}}, "default")

        async def first(stream: Any) -> str:
            async for event_type, obj in stream:
                return f"{event_type} {obj['metadata']['name']}"
            return "ended"

        seen = await asyncio.wait_for(asyncio.gather(*(first(s) for s in streams)), 20)
        for stream in streams:
            await stream.aclose()
    finally:
        await client.close()
    assert seen == ["ADDED seen-by-all"] * 130


def cert_exec_plugin(tmp_path: Path, ca: trustme.CA, runs: int) -> dict[str, Any]:
    """An exec credential plugin handing out client certificate client-<run> (pre-issued by `ca`)."""
    for n in range(1, runs + 1):
        issued = ca.issue_cert(f"client-{n}.example", common_name=f"client-{n}")
        (tmp_path / f"cert-{n}").write_bytes(b"".join(blob.bytes() for blob in issued.cert_chain_pems))
        (tmp_path / f"key-{n}").write_bytes(issued.private_key_pem.bytes())
    counter = tmp_path / "runs"
    counter.write_text("0")
    script = (
        "import json,pathlib;"
        f"d=pathlib.Path({str(tmp_path)!r});n=int((d/'runs').read_text())+1;(d/'runs').write_text(str(n));"
        "print(json.dumps({'apiVersion':'client.authentication.k8s.io/v1','kind':'ExecCredential','status':"
        "{'clientCertificateData':(d/f'cert-{n}').read_text(),'clientKeyData':(d/f'key-{n}').read_text()}}))"
    )
    return exec_plugin_user(script)


async def test_exec_plugin_client_certificate_is_replaced_after_401(
    tmp_path: Path, certificate_authority: trustme.CA
) -> None:
    # The server requires client certificates and refuses the first one with 401, as an API server refuses
    # an expired or revoked credential: the client runs the plugin again, loads the new certificate and
    # repeats the request on a new connection.
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    certificate_authority.issue_cert("127.0.0.1").configure_cert(server_context)
    certificate_authority.configure_trust(server_context)
    server_context.verify_mode = ssl.CERT_REQUIRED
    unauthorized = b'{"kind":"Status","code":401,"reason":"Unauthorized","message":"expired"}'

    def script(n: int, _: bytes) -> bytes:
        if server.client_names[-1] == "client-1":
            return b"HTTP/1.1 401 Unauthorized\r\nContent-Length: %d\r\n\r\n%s" % (
                len(unauthorized),
                unauthorized,
            )
        return ok(b'{"kind":"ConfigMap","metadata":{"name":"x"}}')

    server = ScriptedServer(script, ssl_context=server_context)
    async with server:
        path = write_kubeconfig(
            tmp_path,
            {
                "server": f"https://127.0.0.1:{server.port}",
                "certificate-authority-data": base64.b64encode(
                    certificate_authority.cert_pem.bytes()
                ).decode(),
            },
            cert_exec_plugin(tmp_path, certificate_authority, 3),
        )
        client = await create_client(kubeconfig=path, qps=0)
        try:
            got = await client.get(CONFIGMAPS, "x", "default")
            again = await client.get(CONFIGMAPS, "x", "default")
        finally:
            await client.close()
    assert got["metadata"]["name"] == again["metadata"]["name"] == "x"
    assert server.client_names == ["client-1", "client-2"]  # one new connection, reused afterwards
    assert (tmp_path / "runs").read_text() == "2"


async def test_unquoted_path_characters_are_quoted(kubesim: KubeSim) -> None:
    client = await create_client(kubeconfig=kubesim.kubeconfig, qps=0)
    try:
        await client.create(CONFIGMAPS, {"metadata": {"name": "plain"}}, "default")
        # A raw path with a space and a non-ASCII letter still makes a valid request line.
        with pytest.raises(NotFound):
            await client.request_raw("GET", "/api/v1/namespaces/default/configmaps/no such-é")
        assert await client.request_raw("GET", "/api/v1/namespaces/default/configmaps/plain")
    finally:
        await client.close()
