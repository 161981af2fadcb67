"""bench/load_clients.py reads wrk's figures as wrk prints them, and its scripts carry no key."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bench.load_clients import KEY_VARIABLE, Traffic, lua_script, parse_wrk

WRK_OUTPUT = """Running 20s test @ http://127.0.0.1:8151
  1 threads and 8 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   477.28ms  436.18ms   1.75s    43.61%
    Req/Sec    23.79     16.03    90.00     64.90%
  Latency Distribution
     50%  662.00us
     75%    2.61ms
     90%    4.70ms
     99%    1.48s
  466 requests in 25.08s, 612.23KB read
  Socket errors: connect 0, read 1, write 0, timeout 2
  Non-2xx or 3xx responses: 3
Requests/sec:     18.58
Transfer/sec:     24.41KB
capreg: 466 answered, 4 not from the cache
"""

TRAFFIC = Traffic(
    url="http://127.0.0.1:1",
    key="capreg_secret_never_written",
    cached=["/v1/search?q=open+a+ticket"],
    fresh=["/v1/search?q=close+the+books"],
    schema_bodies=['{"ids":["crm/a","crm/b","crm/c"]}'],
)


def test_wrk_percentiles_are_read_in_milliseconds_whatever_unit_wrk_prints() -> None:
    timing = parse_wrk(WRK_OUTPUT)
    assert timing.p50 == pytest.approx(0.662)
    assert (timing.p90, timing.p99) == (4.7, 1480.0)
    assert timing.requests == 466
    assert timing.per_second == 18.58


def test_failed_answers_and_socket_errors_count_as_errors_and_misses_are_read() -> None:
    timing = parse_wrk(WRK_OUTPUT)
    assert timing.errors == 3 + 1 + 2
    assert timing.misses == 4


def test_output_without_a_latency_distribution_is_refused() -> None:
    with pytest.raises(ValueError, match="wrk --latency"):
        parse_wrk("466 requests in 25.08s\nRequests/sec: 18.58\n")


@pytest.mark.parametrize("plan", ["probe", "load"])
def test_scripts_read_the_key_from_the_environment_never_from_the_file(plan: str) -> None:
    script = lua_script(plan, TRAFFIC)  # type: ignore[arg-type]  # parametrised Literal
    assert TRAFFIC.key not in script
    assert f'os.getenv("{KEY_VARIABLE}")' in script
    assert ("not from the cache" in script) is (plan == "probe")


def test_a_path_that_is_not_printable_ascii_is_refused() -> None:
    with pytest.raises(ValueError, match="ASCII"):
        lua_script("probe", replace(TRAFFIC, cached=["/v1/search?q=café"]))
