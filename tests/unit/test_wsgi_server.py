"""volattach.wsgi_server: the daemons' gunicorn settings and runner."""
from volattach import wsgi_server


def test_gunicorn_workers_are_gthread_even_with_one_thread():
    options = wsgi_server.gunicorn_options("127.0.0.1:8776", workers=2)
    assert options["worker_class"] == "gthread"
    assert options["threads"] == 1
    assert options["workers"] == 2
    assert options["bind"] == "127.0.0.1:8776"
    # [wsgi] keepalive_timeout's default, not gunicorn's 2 s
    assert options["keepalive"] == 60
    assert wsgi_server.gunicorn_options("h:1", keepalive=0.5)["keepalive"] == 1


def test_run_passes_the_options_to_gunicorn(monkeypatch):
    ran = []

    class FakeApplication:
        def __init__(self, app_uri, options):
            ran.append((app_uri, options))

        def run(self):
            ran.append("ran")
    monkeypatch.setattr(wsgi_server, "_Application", FakeApplication)
    wsgi_server.run("volattach.volume.wsgi:application", bind="127.0.0.1:1", workers=3,
                    extra={"keepalive": 5})
    (uri, options), state = ran
    assert (uri, state) == ("volattach.volume.wsgi:application", "ran")
    assert options["worker_class"] == "gthread"
    assert (options["workers"], options["keepalive"]) == (3, 5)
