"""volattach.wsgi.body: reading a capped body, announced or chunked."""
import io

import pytest

from volattach.wsgi import body


def _environ(raw, length=True, chunked=False):
    env = {"wsgi.input": io.BytesIO(raw)}
    if length:
        env["CONTENT_LENGTH"] = str(len(raw))
    if chunked:
        env["HTTP_TRANSFER_ENCODING"] = "chunked"
    return env


def test_announced_length_over_the_cap_is_refused_unread():
    env = _environ(b"x" * 11)
    with pytest.raises(body.BodyTooLarge):
        body.read_body(env, 10)
    assert env["wsgi.input"].tell() == 0


def test_chunked_body_over_the_cap_is_refused():
    env = _environ(b"x" * 11, length=False, chunked=True)
    with pytest.raises(body.BodyTooLarge):
        body.read_body(env, 10)


def test_chunked_body_under_the_cap_is_put_back_with_its_length():
    env = _environ(b"{}", length=False, chunked=True)
    assert body.read_body(env, 10) == b"{}"
    assert env["wsgi.input"].read() == b"{}"
    assert env["CONTENT_LENGTH"] == "2"


def test_no_length_and_not_chunked_reads_nothing():
    env = _environ(b"ignored", length=False)
    assert body.read_body(env, 10) == b""
    assert env["wsgi.input"].tell() == 0


@pytest.mark.parametrize("raw, deep", [
    (b"[" * 100 + b"]" * 100, False),
    (b"[" * 101 + b"]" * 101, True),
    (b'{"a": "' + b"[" * 500 + b'"}', False),
    (b'{"a": "\\"' + b"[" * 500 + b'"}', False),
    (b'[{"a": [' * 40 + b"]}]" * 40, True),
    (b"[]" * 1000, False),
])
def test_too_deep(raw, deep):
    assert body.too_deep(raw) is deep


def test_check_answers_status_and_message():
    assert body.check(_environ(b"x" * 11), 10)[0] == 413
    assert body.check(_environ(b"[" * 200 + b"]" * 200), 1000) == (
        400, "Malformed request body")
    assert body.check(_environ(b'{"a": 1}'), 1000) is None
