"""engine/provider/tls.py: the TLS context a run prepares early, in a thread, is the one the SDK's
transport would have built, and the transport verifies servers with it."""

from __future__ import annotations

import ssl

import httpx2
import pytest

from engine.provider import tls
from engine.provider.gateway import requests


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tls, "_built", [])   # prepared once per process: a process of its own


def _same_trust(a: ssl.SSLContext, b: ssl.SSLContext) -> None:
    assert (a.verify_mode, a.check_hostname, a.minimum_version, a.options) == (
        b.verify_mode, b.check_hostname, b.minimum_version, b.options)
    assert a.verify_mode is ssl.CERT_REQUIRED and a.check_hostname
    assert a.cert_store_stats() == b.cert_store_stats()
    assert sorted(map(str, a.get_ca_certs())) == sorted(map(str, b.get_ca_certs()))


def test_without_prepare_the_sdk_builds_its_own(fresh: None) -> None:
    assert tls.context() is None
    client = requests.transport("https://api.openai.com/v1", 5.0)
    assert client is not None
    _same_trust(client._transport.ssl_context, httpx2.create_ssl_context())


def test_the_prepared_context_is_the_sdks_and_the_transport_uses_it(fresh: None) -> None:
    tls.prepare()
    tls.prepare()   # once per process
    prepared = tls.context()
    assert prepared is not None and tls.context() is prepared
    _same_trust(prepared, httpx2.create_ssl_context())
    for _ in range(2):   # every client (several providers: a gateway each) shares it
        client = requests.transport("https://api.openai.com/v1", 5.0)
        assert client is not None and client._transport.ssl_context is prepared


def test_a_context_that_cannot_be_built_fails_where_the_client_is_made(
        fresh: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", "/nonexistent/ca.pem")
    tls.prepare()
    with pytest.raises(OSError):
        requests.transport("https://api.openai.com/v1", 5.0)
