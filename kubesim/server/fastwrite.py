"""Sending a plain `web.Response` (a bytes body, nothing streamed, compressed or cookied) in one step: the
same header block and bytes that aiohttp's `prepare` + `write_eof` produce, without their chain of eight
coroutines, the body-kind checks and the response-prepare signal walk.

Nearly every answer kubesim gives is such a response (an object, a list, a Status), so this runs on almost
every request; anything else (watches, HEAD, 204/304, a response already prepared, a response-prepare signal
registered, access logging on) is left to aiohttp. It relies on aiohttp's private response state, so
`supported()` checks that state exists and the protocol handler uses this only then."""

from __future__ import annotations

from typing import Any

from aiohttp import hdrs, web
from aiohttp.helpers import rfc822_formatted_time
from aiohttp.http import SERVER_SOFTWARE, HttpVersion10, HttpVersion11
from aiohttp.http_writer import StreamWriter, _serialize_headers
from aiohttp.web_request import BaseRequest

_STATE = (
    *("_headers", "_body", "_chunked", "_compression", "_cookies", "_keep_alive", "_eof_sent"),
    *("_payload_writer", "_req", "_body_length", "_must_be_empty_body", "_compressed_body", "_reason"),
)
_WRITER = (
    *("_headers_buf", "_headers_written", "_eof", "chunked", "_compress", "_on_headers_sent"),
    *("_on_chunk_sent", "on_body_write", "_writelines", "_write", "protocol", "write_headers"),
)
_EMPTY_BODY_STATUSES = (204, 304)


def supported() -> bool:
    """The installed aiohttp keeps the response and writer state this module reads and sets (3.14 does)."""
    probe = web.Response(body=b"")
    writer = StreamWriter(None, None)  # type: ignore[arg-type]
    return all(hasattr(probe, name) for name in _STATE) and all(hasattr(writer, name) for name in _WRITER)


def sendable(request: BaseRequest, resp: Any) -> bool:
    """`resp` is a plain Response with a bytes body that aiohttp would send as one Content-Length message
    with no hook to run: the cases `send` reproduces exactly."""
    if type(resp) is not web.Response or resp._payload_writer is not None or resp._eof_sent:
        return False
    body = resp._body
    if body is not None and type(body) is not bytes:
        return False
    if resp._chunked or resp._compression or resp._cookies or resp._compressed_body is not None:
        return False
    status = resp._status
    if (
        status < 200
        or status in _EMPTY_BODY_STATUSES
        or request.method in (hdrs.METH_HEAD, hdrs.METH_CONNECT)
    ):
        return False
    headers = resp._headers
    if hdrs.CONTENT_LENGTH in headers or hdrs.TRANSFER_ENCODING in headers:
        return False
    match_info = getattr(request, "_match_info", None)
    if match_info is None:
        return True
    for app in match_info._apps:  # noqa: SIM110 (a loop: any() over a generator costs more, per request)
        if app.on_response_prepare:
            return False
    return True


def _bare(writer: StreamWriter) -> bool:
    return (
        type(writer) is StreamWriter
        and not writer._headers_buf
        and not writer._headers_written
        and not writer._eof
        and not writer.chunked
        and writer._compress is None
        and writer._on_headers_sent is None
        and writer._on_chunk_sent is None
        and writer.on_body_write is None
    )


def send_usual(request: BaseRequest, resp: web.Response) -> bool:
    """`send` without an await, for kubesim's usual answer (see `_usual_head`) on a writer with no hooks:
    True once it is written (the caller drains if the transport is paused), False if it is not usual (then
    nothing was touched)."""
    writer = request._payload_writer
    if type(writer) is not StreamWriter or not _bare(writer):
        return False
    keep_alive = resp._keep_alive
    if keep_alive is None:
        keep_alive = request.keep_alive
    body: bytes = resp._body or b""  # type: ignore[assignment]
    head = _usual_head(resp, request.version, body) if keep_alive else None
    if head is None:
        return False
    resp._keep_alive = keep_alive
    resp._must_be_empty_body = False
    writer.length = len(body)
    # StreamWriter.write_headers + write_eof: the header block and the body in one transport write
    writer._headers_written = True
    if body:
        writer._writelines((head, body))
    else:
        writer._write(head)
    writer._eof = True
    resp._eof_sent = True
    resp._body_length = writer.output_size
    return True


async def send(request: BaseRequest, resp: web.Response) -> None:
    """What `await resp.prepare(request); await resp.write_eof()` does for a `sendable` response."""
    body: bytes = resp._body or b""  # type: ignore[assignment]
    writer = request._payload_writer
    resp._must_be_empty_body = False
    resp._req = request
    resp._payload_writer = writer
    keep_alive = resp._keep_alive
    if keep_alive is None:
        keep_alive = resp._keep_alive = request.keep_alive
    writer.length = len(body)
    head = _head(request, resp, body, keep_alive, request.version)
    if isinstance(head, bytes):
        assert isinstance(writer, StreamWriter)
        # as in send_usual, then a drain only if the transport is paused
        writer._headers_written = True
        if body:
            writer._writelines((head, body))
        else:
            writer._write(head)
        if writer.protocol.writing_paused:
            await writer.drain()
        writer._eof = True
    else:
        await writer.write_headers(head, resp._headers)
        await writer.write_eof(body)
    resp._eof_sent = True
    resp._req = None
    resp._body_length = writer.output_size
    resp._payload_writer = None


def _head(
    request: BaseRequest, resp: web.Response, body: bytes, keep_alive: bool, version: Any
) -> str | bytes:
    """Response._start, then StreamResponse._prepare_headers: the same headers, set in the same order. The
    serialised header block for a bare writer, else the status line (for StreamWriter.write_headers)."""
    headers = resp._headers
    headers[hdrs.CONTENT_LENGTH] = str(len(body))
    if body:
        headers.setdefault(hdrs.CONTENT_TYPE, "application/octet-stream")
    if hdrs.DATE not in headers:
        headers[hdrs.DATE] = rfc822_formatted_time()
    headers.setdefault(hdrs.SERVER, SERVER_SOFTWARE)
    if hdrs.CONNECTION not in headers:
        if keep_alive:
            if version == HttpVersion10:
                headers[hdrs.CONNECTION] = "keep-alive"
        elif version == HttpVersion11:
            headers[hdrs.CONNECTION] = "close"
    status_line = f"HTTP/{version[0]}.{version[1]} {resp._status} {resp._reason}"
    bare = isinstance(request._payload_writer, StreamWriter) and _bare(request._payload_writer)
    return _serialize_headers(status_line, headers) if bare else status_line


_STARTS: dict[tuple[int, str], bytes] = {}  # (status, reason) -> the status line and "Content-Type: "
_DATE: list[Any] = ["", b""]  # aiohttp's formatted time (one string per second) and its bytes
_SERVER_END = f"\r\nServer: {SERVER_SOFTWARE}\r\n\r\n".encode()


_CONTENT_TYPES: dict[str | None, bytes] = {}  # a Content-Type seen -> its bytes


def _content_type(value: str | None) -> bytes | None:
    """A Content-Type's bytes, remembered; None for none or an unusual one (aiohttp refuses control
    characters: anything but printable ASCII takes its path)."""
    if value is None or not (value.isascii() and value.isprintable()) or len(_CONTENT_TYPES) > 64:
        return None
    data = _CONTENT_TYPES[value] = value.encode()
    return data


def _usual_head(resp: web.Response, version: Any, body: bytes) -> bytes | None:
    """The header block `_head` serialises, built straight as bytes for kubesim's usual answer: HTTP/1.1,
    keep-alive, a Content-Type its only header (Content-Length, Date and Server follow it, as aiohttp adds
    them). The response's header multidict is left as it was: nothing reads it once the answer is sent."""
    headers = resp._headers
    if len(headers) != 1 or version != HttpVersion11:
        return None
    content_type = _CONTENT_TYPES.get(headers.get(hdrs.CONTENT_TYPE))
    if content_type is None:
        content_type = _content_type(headers.get(hdrs.CONTENT_TYPE))
        if content_type is None:
            return None
    start = _STARTS.get((resp._status, resp._reason))
    if start is None:
        reason = resp._reason
        if not (reason.isascii() and reason.isprintable()) or len(_STARTS) > 256:
            return None
        start = _STARTS[resp._status, reason] = f"HTTP/1.1 {resp._status} {reason}\r\nContent-Type: ".encode()
    date = rfc822_formatted_time()
    if date is not _DATE[0]:
        _DATE[0], _DATE[1] = date, date.encode()
    length = str(len(body)).encode()
    return b"".join(
        (start, content_type, b"\r\nContent-Length: ", length, b"\r\nDate: ", _DATE[1], _SERVER_END)
    )
