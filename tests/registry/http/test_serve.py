"""`capreg serve --http`: the listener's address rules, and one process serving gRPC and HTTP
together that stops on SIGTERM."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import grpc
import httpx2
import pytest

from capreg.cli import build_parser
from capreg.cli.errors import CommandError
from capreg.cli.serve import serve_config
from registry.auth.keys import add_key
from registry.proto import registry_pb2 as pb
from registry.proto import registry_pb2_grpc as pb_grpc
from tests.conftest import copy_db
from tests.support.server_process import free_port, wait_serving


def _config_args(tmp_path: Path, *extra: str) -> list[str]:
    return ["serve", "--db", str(tmp_path / "x.db"), *extra]


def test_http_off_loopback_needs_tls_or_the_insecure_http_override(tmp_path: Path) -> None:
    keys = tmp_path / "keys.yaml"
    add_key(keys, "ops", ["registry:admin", "*"])
    exposed = _config_args(tmp_path, "--keys", str(keys), "--http", "0.0.0.0:8080")
    with pytest.raises(CommandError, match="--insecure-http"):
        serve_config(build_parser().parse_args(exposed))
    proxied = serve_config(build_parser().parse_args([*exposed, "--insecure-http"]))
    assert proxied.http_listen == "0.0.0.0:8080"
    tls = ["--tls-cert", str(tmp_path / "c.pem"), "--tls-key", str(tmp_path / "k.pem")]
    assert serve_config(build_parser().parse_args([*exposed, *tls])).http_listen


def test_http_off_loopback_needs_credentials_even_with_the_override(tmp_path: Path) -> None:
    args = _config_args(tmp_path, "--http", "0.0.0.0:8080", "--insecure-http")
    with pytest.raises(CommandError, match="without credentials"):
        serve_config(build_parser().parse_args(args))


def test_loopback_http_is_the_default_rule_and_a_bad_address_is_named(tmp_path: Path) -> None:
    config = serve_config(build_parser().parse_args(_config_args(tmp_path, "--http", "[::1]:0")))
    assert config.http_listen == "[::1]:0"
    with pytest.raises(CommandError, match="--http: listen address 'nowhere'"):
        serve_config(build_parser().parse_args(_config_args(tmp_path, "--http", "nowhere")))


def test_one_process_serves_grpc_and_http_and_stops_both_on_sigterm(
    sample_db: Path, tmp_path: Path
) -> None:
    keys = tmp_path / "keys.yaml"
    key = add_key(keys, "ops", ["registry:admin", "*"])
    grpc_address = f"127.0.0.1:{free_port()}"
    http_url = f"http://127.0.0.1:{free_port()}"
    command = [
        sys.executable,
        "-m",
        "capreg.cli",
        "serve",
        "--db",
        str(copy_db(sample_db, tmp_path)),
    ]
    command += ["--keys", str(keys), "--listen", grpc_address, "--http", http_url[7:]]
    log = tmp_path / "serve.log"
    with log.open("w") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=sink)
        try:
            wait_serving(grpc_address, process, seconds=120, log=log)
            headers = {"authorization": f"Bearer {key}"}
            with httpx2.Client(base_url=http_url, headers=headers, timeout=30.0) as http:
                ready = http.get("/readyz")
                over_http = http.get("/v1/search", params={"q": "approve a leave request"})
            with grpc.insecure_channel(grpc_address) as channel:
                stub = pb_grpc.CapabilityRegistryStub(channel)
                request = pb.SearchRequest(query="approve a leave request")
                over_grpc = stub.Search(request, metadata=(("authorization", f"Bearer {key}"),))
        finally:
            process.send_signal(signal.SIGTERM)
            code = process.wait(timeout=60)
    assert code == 0, log.read_text()
    assert ready.status_code == 200
    assert [h["id"] for h in over_http.json()["hits"]] == [h.id for h in over_grpc.hits]
    assert f"HTTP API at {http_url}" in log.read_text()
    with pytest.raises(httpx2.ConnectError):
        httpx2.get(f"{http_url}/healthz", timeout=5.0)


def test_forwarded_addresses_are_believed_only_from_the_proxies_named(tmp_path: Path) -> None:
    assert serve_config(build_parser().parse_args(_config_args(tmp_path))).trusted_proxies == ()
    named = ["--trusted-proxies", "10.0.0.0/8, 192.168.1.7,::1"]
    config = serve_config(build_parser().parse_args(_config_args(tmp_path, *named)))
    assert config.trusted_proxies == ("10.0.0.0/8", "192.168.1.7/32", "::1/128")
    for bad in ("*", "10.0.0.0/33", "proxy.example", "10.0.0.1/8", ""):
        with pytest.raises(CommandError, match="--trusted-proxies"):
            serve_config(
                build_parser().parse_args(_config_args(tmp_path, "--trusted-proxies", bad))
            )


def test_the_open_metrics_listener_stays_on_loopback(tmp_path: Path) -> None:
    for exposed in (":9464", "0.0.0.0:9464", "[::]:9464"):
        args = _config_args(tmp_path, "--metrics", exposed)
        with pytest.raises(CommandError, match="--metrics"):
            serve_config(build_parser().parse_args(args))
    local = _config_args(tmp_path, "--metrics", "127.0.0.1:9464")
    assert serve_config(build_parser().parse_args(local)).metrics_listen == "127.0.0.1:9464"


def test_with_keys_metrics_are_served_only_to_a_key(tmp_path: Path) -> None:
    keys = tmp_path / "keys.yaml"
    add_key(keys, "ops", ["registry:admin", "*"])
    args = _config_args(tmp_path, "--keys", str(keys), "--metrics", "127.0.0.1:9464")
    with pytest.raises(CommandError, match="registry:metrics"):
        serve_config(build_parser().parse_args(args))


def test_serve_believes_forwarded_addresses_from_the_proxies_it_is_told_of(
    sample_db: Path, tmp_path: Path
) -> None:
    keys = tmp_path / "keys.yaml"
    add_key(keys, "ops", ["registry:admin", "*"])
    grpc_address = f"127.0.0.1:{free_port()}"
    http_url = f"http://127.0.0.1:{free_port()}"
    command = [sys.executable, "-m", "capreg.cli", "serve", "--log-format", "json"]
    command += ["--db", str(copy_db(sample_db, tmp_path)), "--keys", str(keys)]
    command += ["--listen", grpc_address, "--http", http_url[7:]]
    command += ["--trusted-proxies", "127.0.0.0/8"]
    log = tmp_path / "serve.log"
    with log.open("w") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=sink)
        try:
            wait_serving(grpc_address, process, seconds=120, log=log)
            forged = {"authorization": "Bearer ck_nobody.wrong", "x-forwarded-for": "203.0.113.9"}
            refused = httpx2.get(f"{http_url}/v1/catalogs", headers=forged, timeout=30.0)
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=60)
    assert refused.status_code == 401
    failures = [
        json.loads(line)
        for line in log.read_text().splitlines()
        if line.startswith("{") and '"auth_failure"' in line
    ]
    assert [record.get("peer") for record in failures] == ["203.0.113.9"]
