"""`capreg bridge` options: read once at the edge, refused with one line when wrong."""

from __future__ import annotations

import pytest

from capreg.cli import build_parser, main
from mcp_bridge.cli import BridgeOptionError, bridge_config
from mcp_bridge.config import HttpListen


def test_stdio_is_the_default_and_the_key_comes_from_the_environment() -> None:
    args = build_parser().parse_args(["bridge", "--registry", "127.0.0.1:6000"])
    config = bridge_config(args, {"CAPREG_API_KEY": "capreg_0123abcd_secret"})
    assert config.http is None
    assert config.registry.address == "127.0.0.1:6000"
    assert config.api_key == "capreg_0123abcd_secret"
    # Secrets stay out of logs and tracebacks.
    assert "secret" not in repr(config)


def test_http_takes_a_host_and_port() -> None:
    args = build_parser().parse_args(["bridge", "--http", "127.0.0.1:8765", "--timeout", "2.5"])
    config = bridge_config(args, {})
    assert config.http == HttpListen(host="127.0.0.1", port=8765)
    assert config.registry.timeout == 2.5


@pytest.mark.parametrize(
    "options",
    [["--http", "nowhere"], ["--timeout", "0"], ["--ca-file", "/nonexistent/ca.pem"]],
)
def test_a_bad_option_is_refused(options: list[str]) -> None:
    args = build_parser().parse_args(["bridge", *options])
    with pytest.raises(BridgeOptionError):
        bridge_config(args, {})


def test_the_command_reports_a_bad_option_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bridge", "--http", "127.0.0.1:99999"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("capreg: --http")
    assert err.count("\n") == 1


def test_an_http_address_without_a_host_is_loopback() -> None:
    args = build_parser().parse_args(["bridge", "--http", ":0"])
    config = bridge_config(args, {})
    assert config.http is not None
    assert config.http.host == "127.0.0.1"


def test_clear_text_http_beyond_loopback_needs_tls_or_an_explicit_override() -> None:
    refused = build_parser().parse_args(["bridge", "--http", "0.0.0.0:8765"])
    with pytest.raises(BridgeOptionError, match="--insecure-http"):
        bridge_config(refused, {})
    allowed = build_parser().parse_args(["bridge", "--http", "0.0.0.0:8765", "--insecure-http"])
    assert bridge_config(allowed, {}).http is not None
    half = ["bridge", "--http", "0.0.0.0:8765", "--http-tls-cert", "c.pem"]
    with pytest.raises(BridgeOptionError, match="go together"):
        bridge_config(build_parser().parse_args(half), {})
    tls = build_parser().parse_args([*half, "--http-tls-key", "k.pem"])
    config = bridge_config(tls, {})
    assert config.http is not None
    assert config.http.tls_cert is not None
