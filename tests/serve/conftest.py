"""A real uvicorn server on a loopback port, in a thread, for the serve tests."""
import json
import socket
import threading
import time
import urllib.error
import urllib.request

import pytest



class Server:
    """uvicorn serving `app` on 127.0.0.1:<free port> until `stop()`."""

    def __init__(self, app):
        import uvicorn          # the test modules skip without it
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port,
                                                    log_level="critical"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.time() + 20
        while not self.server.started:
            if time.time() > deadline:
                raise RuntimeError("server did not start")
            time.sleep(0.01)

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}"

    def request(self, path, body=None, content_type="application/json", headers=None,
                method=None):
        """(status, headers, body bytes) of one request."""
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        req = urllib.request.Request(self.url(path), data=body, method=method)
        if body is not None:
            req.add_header("Content-Type", content_type)
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, dict(r.headers), r.read()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read()

    def stop(self):
        self.server.should_exit = True
        self.thread.join(timeout=30)


@pytest.fixture
def serve_app():
    servers = []

    def start(app):
        s = Server(app)
        servers.append(s)
        return s
    yield start
    for s in servers:
        s.stop()
