"""The Azure bootstrap's token-bearing requests are never sent on by a redirect.

clusterctl-bootstrap (clusterctl/cloud/node/bootstrap.py) gets a managed-identity token from the instance
metadata service and sends it as ``Authorization: Bearer`` to Blob storage (the configuration object) and Key
Vault (the MUNGE key). urllib's redirect handler copies a request's headers to the redirect target, whatever
its host or scheme: a 302 from the endpoint (or from anything on the way to it) handed the token to another
server. Now a redirect is an error, and the token is an unredirected header as well.

Two real HTTP servers on 127.0.0.1: ``service`` is the metadata service, Blob and Key Vault (through the
program's ``endpoint_overrides``, as tests/cloud/test_bootstrap_program.py uses them) and answers every
token-bearing request with a redirect to ``elsewhere``, which records every request it gets.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from clusterctl.cloud.node import bootstrap

TOKEN = "eyJ0eXAiOiJKV1QiLCJhbGciOi.secret-token"
BLOB = "https://acct1.blob.core.windows.net/clusterctl/config.tar.gz"
VAULT = "https://vault-c1.vault.azure.net/secrets/munge-key"


class _Server:
    def __init__(self, answer):
        self.requests: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                outer.requests.append({"path": self.path, "headers": dict(self.headers.items())})
                code, headers, body = answer(self.path)
                self.send_response(code)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


@pytest.fixture
def servers():
    elsewhere = _Server(lambda path: (200, {}, json.dumps({"value": "stolen", "access_token": "x"}).encode()))

    def service_answer(path):
        if path.startswith(bootstrap.IMDS_TOKEN):
            return 200, {"Content-Type": "application/json"}, json.dumps({"access_token": TOKEN}).encode()
        return 302, {"Location": elsewhere.url + "/collect" + path}, b""

    service = _Server(service_answer)
    yield service, elsewhere
    service.close()
    elsewhere.close()


def _cfg(service, imds=None) -> dict:
    return {"config_url": BLOB, "identity": "cid-1",
            "endpoint_overrides": {"http://169.254.169.254": imds or service.url,
                                   "https://acct1.blob.core.windows.net": service.url,
                                   "https://vault-c1.vault.azure.net": service.url}}


def _no_token_reached(elsewhere) -> None:
    assert all(TOKEN not in json.dumps(r["headers"]) for r in elsewhere.requests), elsewhere.requests
    assert elsewhere.requests == []  # a redirect is not followed at all


def test_a_redirected_blob_fetch_does_not_send_the_bearer_token_on(servers, tmp_path):
    service, elsewhere = servers
    with pytest.raises(bootstrap.NotThereYet, match="redirect"):
        bootstrap.fetch_once(_cfg(service), str(tmp_path / "config.tar.gz"), {})
    assert [r["path"] for r in service.requests][-1] == "/clusterctl/config.tar.gz"
    assert service.requests[-1]["headers"]["Authorization"] == f"Bearer {TOKEN}"  # the real endpoint got it
    _no_token_reached(elsewhere)
    assert not (tmp_path / "config.tar.gz").exists()


def test_a_redirected_key_vault_read_does_not_send_the_bearer_token_on(servers):
    service, elsewhere = servers
    with pytest.raises(bootstrap.StepError, match="redirect"):
        bootstrap.fetch_secret(_cfg(service), "vault_munge_key", {"azure-keyvault": VAULT}, {})
    _no_token_reached(elsewhere)


def test_a_redirected_token_request_is_refused(servers, tmp_path):
    """The metadata service itself answering with a redirect: no token is taken from another server."""
    service, elsewhere = servers
    redirecting_imds = _Server(lambda path: (307, {"Location": elsewhere.url + path}, b""))
    try:
        with pytest.raises(bootstrap.NotThereYet, match="redirect"):
            bootstrap.fetch_once(_cfg(service, imds=redirecting_imds.url), str(tmp_path / "c.tar.gz"), {})
    finally:
        redirecting_imds.close()
    assert elsewhere.requests == []
    assert [r["path"] for r in service.requests] == []  # without a token nothing is fetched
