"""benchmarks.wire_b: what it reads from rabbitmqctl and the access logs."""
from benchmarks import wire_b


def test_connections_are_summed_per_daemon_by_the_pid_in_their_name():
    counters = dict.fromkeys(wire_b.RABBIT_COUNTERS, 1)
    sums = wire_b.by_daemon({
        "volattach-conductor:12:a": dict(counters, recv_cnt=5),
        "volattach-conductor:12:b": counters,
        "volattach-compute:13:c": counters,
        "somebody-else": counters,
    }, {12: "conductor", 13: "compute1"})
    assert sums["conductor"]["recv_cnt"] == 6
    assert sums["conductor"]["connections"] == 2
    assert sums["compute1"]["send_cnt"] == 1
    assert sums["other"]["connections"] == 1


def test_deltas_of_nested_counters_count_new_keys_from_zero():
    assert wire_b._delta({"pg": {"nova": {"x": 7}, "volume": {"x": 2}}},
                         {"pg": {"nova": {"x": 5}}}) == {
        "pg": {"nova": {"x": 2}, "volume": {"x": 2}}}


def test_an_access_log_line_gives_its_method_and_path():
    line = ('2026-11-26 13:00:00.000 1 INFO volattach.wsgi.access_log '
            '[req-1 - - - - -] 127.0.0.1 "GET /v3/p/volumes/'
            '0b5d5a3e-6a55-4d6c-9c9e-3d1f4d7c2a10" status: 200 len: 10 '
            'microversion: 3.0 time: 0.001')
    method, path = wire_b._REQUEST.search(line).groups()
    assert (method, path) == (
        "GET", "/v3/p/volumes/0b5d5a3e-6a55-4d6c-9c9e-3d1f4d7c2a10")
