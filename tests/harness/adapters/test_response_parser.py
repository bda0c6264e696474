"""FastTransport's one response parser (``_ResponseParser``), without sockets: the bytes of a
response fed to it in pieces, as a connection receives them, read whole (the direct path and
small httpx bodies) or streamed (larger httpx bodies). Whatever the pieces, the result is the
same; what the server leaves out or garbles is an httpx error saying what."""

from __future__ import annotations

import itertools

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.adapters.fast_transport import _ResponseParser

Parsed = tuple[int, list[tuple[bytes, bytes]], bytes, bool]
"""status, headers, body, whether the connection is reusable"""


def parse(
    pieces: list[bytes],
    *,
    whole: bool = True,
    head_only: bool = False,
    close_requested: bool = False,
    eof: bool = True,
    parser: _ResponseParser | None = None,
) -> Parsed:
    """Feed ``pieces`` one at a time, reading after each as a connection does; then, if the
    response is not complete, end the connection (``eof``) and read once more."""
    p = parser or _ResponseParser()
    p.start(close_requested, head_only)
    body: list[bytes] = []
    done = False

    def step() -> None:
        nonlocal done
        if p.head() is None:
            return
        while not done:
            got = p.body(whole)
            if got is None:
                return
            body.append(got[0])
            done = got[1]

    step()  # what the connection already holds
    for piece in pieces:
        if done:
            break
        p.buffer += piece
        step()
    if not done and eof:
        p.eof = True
        step()
    assert done, "the response did not complete"
    framing = p.framing
    assert framing is not None
    status, _, headers, _, _, keep = framing
    return status, headers, b"".join(body), keep


def splits(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({0, *(c % (len(data) + 1) for c in cuts), len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


CHUNKED_EXT_TRAILERS = (
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-A: 1\r\n\r\n"
    b"5;name=value\r\nhello\r\n"
    b"1;a=1;b\r\n,\r\n"
    b"6 \r\n world\r\n"
    b"0;last=yes\r\nX-Trailer: t\r\nX-Other: u\r\n\r\n"
)


@pytest.mark.parametrize("whole", [True, False], ids=["whole", "streamed"])
def test_chunked_with_extensions_and_trailers_at_every_split(whole: bool) -> None:
    expected = (200, [(b"Transfer-Encoding", b"chunked"), (b"X-A", b"1")], b"hello, world", True)
    for i in range(len(CHUNKED_EXT_TRAILERS) + 1):
        pieces = [CHUNKED_EXT_TRAILERS[:i], CHUNKED_EXT_TRAILERS[i:]]
        assert parse(pieces, whole=whole, eof=False) == expected, f"split at {i}"
    # one byte at a time
    one_by_one = [CHUNKED_EXT_TRAILERS[i : i + 1] for i in range(len(CHUNKED_EXT_TRAILERS))]
    assert parse(one_by_one, whole=whole, eof=False) == expected


def test_trailers_and_body_leave_the_next_response_in_place() -> None:
    parser = _ResponseParser()
    following = b"HTTP/1.1 201 Created\r\nContent-Length: 3\r\n\r\nyes"
    first = parse([CHUNKED_EXT_TRAILERS + following], parser=parser, eof=False)
    assert first[2] == b"hello, world"
    assert parser.buffer == following
    assert parse([], parser=parser, eof=False) == (
        201,
        [(b"Content-Length", b"3")],
        b"yes",
        True,
    )
    assert parser.buffer == b""


def test_content_length_zero() -> None:
    assert parse([b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"], eof=False) == (
        200,
        [(b"Content-Length", b"0")],
        b"",
        True,
    )


@pytest.mark.parametrize(
    "reply, head_only",
    [
        (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", True),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", True),
        (b"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n", False),
        (b"HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n", False),
    ],
    ids=["HEAD length", "HEAD chunked", "204", "304"],
)
def test_no_body_for_head_204_and_304_whatever_the_framing_says(
    reply: bytes, head_only: bool
) -> None:
    parser = _ResponseParser()
    following = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    status, _, body, keep = parse([reply + following], head_only=head_only, parser=parser)
    assert body == b"" and keep and status in (200, 204, 304)
    assert parser.buffer == following  # what follows is the next response, not this body


@pytest.mark.parametrize("whole", [True, False], ids=["whole", "streamed"])
def test_connection_close_without_length_reads_to_the_end(whole: bool) -> None:
    reply = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end"
    for i in range(len(reply) + 1):
        status, _, body, keep = parse([reply[:i], reply[i:]], whole=whole)
        assert (status, body, keep) == (200, b"until the end", False)


def test_keep_alive_depends_on_version_and_connection_header() -> None:
    ok = b"Content-Length: 0\r\n\r\n"
    assert parse([b"HTTP/1.1 200 OK\r\n" + ok])[3] is True
    assert parse([b"HTTP/1.1 200 OK\r\n" + ok], close_requested=True)[3] is False
    assert parse([b"HTTP/1.1 200 OK\r\nConnection: close\r\n" + ok])[3] is False
    assert parse([b"HTTP/1.0 200 OK\r\n" + ok])[3] is False
    assert parse([b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n" + ok])[3] is True


def test_informational_heads_are_skipped() -> None:
    reply = (
        b"HTTP/1.1 100 Continue\r\n\r\n"
        b"HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n"
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    )
    for i in range(len(reply) + 1):
        assert parse([reply[:i], reply[i:]], eof=False)[::2] == (200, b"ok")


@pytest.mark.parametrize(
    "reply, error, message",
    [
        (b"HTCPCP/1.0 418 I'm a teapot\r\n\r\n", httpx.RemoteProtocolError, "bad status line"),
        (b"HTTP/1.1 2000 OK\r\n\r\n", httpx.RemoteProtocolError, "bad status line"),
        (b"HTTP/1.1\r\n\r\n", httpx.RemoteProtocolError, "bad status line"),
        (b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n", httpx.RemoteProtocolError, "bad header line"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", httpx.RemoteProtocolError, "Length"),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n",
            httpx.RemoteProtocolError,
            "chunk size",
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nokay",
            httpx.RemoteProtocolError,
            "chunk terminator",
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + b"1" * 70000,
            httpx.RemoteProtocolError,
            "chunk line longer",
        ),
        (b"", httpx.RemoteProtocolError, "without sending a response"),
        (b"HTTP/1.1 200", httpx.RemoteProtocolError, "middle of the response head"),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nok",
            httpx.RemoteProtocolError,
            "complete message body",
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n",
            httpx.RemoteProtocolError,
            "incomplete chunked read",
        ),
    ],
)
@pytest.mark.parametrize("whole", [True, False], ids=["whole", "streamed"])
def test_malformed_or_cut_short_is_a_clear_protocol_error(
    reply: bytes, error: type[Exception], message: str, whole: bool
) -> None:
    with pytest.raises(error, match=message):
        parse([reply], whole=whole)


def test_a_failed_connection_is_a_read_error() -> None:
    p = _ResponseParser()
    p.start(False, False)
    p.buffer += b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nok"
    assert p.head() is not None and p.body(whole=True) is None
    p.eof = True
    p.error = ConnectionResetError("reset by peer")
    with pytest.raises(httpx.ReadError, match="reset by peer"):
        p.body(whole=True)


# -- any response, cut anywhere ---------------------------------------------------------------

bodies = st.binary(max_size=300)
tokens = st.text("abcdefghijklmnopqrstuvwxyz-", min_size=1, max_size=8)


@st.composite
def responses(draw: st.DrawFn) -> tuple[bytes, bytes, bool, bool]:
    """A response's bytes, its body as read, whether it keeps the connection, and whether it
    ends only when the connection does."""
    body = draw(bodies)
    framing = draw(st.sampled_from(["length", "chunked", "close"]))
    extra = draw(st.lists(st.tuples(tokens, tokens), max_size=3))
    head = b"HTTP/1.1 200 OK\r\n" + b"".join(
        b"X-%s: %s\r\n" % (n.encode(), v.encode()) for n, v in extra
    )
    if framing == "length":
        return head + b"Content-Length: %d\r\n\r\n" % len(body) + body, body, True, False
    if framing == "close":
        return head + b"Connection: close\r\n\r\n" + body, body, False, True
    cuts = sorted(draw(st.lists(st.integers(0, len(body)), max_size=4)))
    parts = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=False)]
    data = b""
    for part in parts:
        if part:
            ext = draw(st.sampled_from([b"", b";x=1", b" ;y"]))
            data += b"%x%s\r\n%s\r\n" % (len(part), ext, part)
    trailers = b"".join(b"X-T-%s: %s\r\n" % (n.encode(), v.encode()) for n, v in extra)
    head += b"Transfer-Encoding: chunked\r\n\r\n"
    return head + data + b"0\r\n" + trailers + b"\r\n", body, True, False


@settings(max_examples=300, deadline=None)
@given(responses(), st.lists(st.integers(0, 10_000), max_size=8), st.booleans())
def test_any_response_cut_anywhere_reads_the_same(
    response: tuple[bytes, bytes, bool, bool], cuts: list[int], whole: bool
) -> None:
    data, body, keep, until_close = response
    parser = _ResponseParser()
    status, _, got, kept = parse(splits(data, cuts), whole=whole, eof=until_close, parser=parser)
    assert (status, got, kept) == (200, body, keep)
    assert parser.buffer == b""
