"""A queue's preemptMinRuntime / reclaimMinRuntime must be durations KAI can read.

KAI's Queue CRD types both as plain strings, so the API server stores anything, but KAI decodes them as
*metav1.Duration (KAI-Scheduler@v0.17.0:pkg/apis/scheduling/v2/queue_types.go:40-46), whose UnmarshalJSON is
time.ParseDuration (kubernetes/apimachinery@v0.35.2:pkg/apis/meta/v1/duration.go:32-45). A value it refuses would
reach the cluster and fail there, after the platform is up.
"""

from __future__ import annotations

import pytest

from kaistack.declaration.parse import ConfigError, parse_config


def _stack(**queue: object) -> dict[str, object]:
    return {
        "cluster": {"provider": "kind", "nodePools": [{"name": "gpu", "count": 1, "gpus": 2}]},
        "gpu": {"mode": "fake"},
        "queues": [{"name": "a", **queue}],
    }


@pytest.mark.parametrize("value", ["10m", "90s", "1h30m", "1.5h", ".5h", "-5m", "+1s", "0", "250ms", "1h0m0s"])
def test_go_durations_are_accepted(value: str) -> None:
    (queue,) = parse_config(_stack(preemptMinRuntime=value, reclaimMinRuntime=value)).queues
    assert (queue.preempt_min_runtime, queue.reclaim_min_runtime) == (value, value)


@pytest.mark.parametrize(
    "value",
    [
        "10",  # a bare number has no unit (only 0 may go without)
        "10 minutes",
        "1d",  # Go has no day unit
        "10M",
        "",
        "m",
        "9999999999h",  # past time.Duration's ~292 years
    ],
)
@pytest.mark.parametrize("key", ["preemptMinRuntime", "reclaimMinRuntime"])
def test_a_value_time_parse_duration_refuses_is_refused_naming_the_key(key: str, value: str) -> None:
    with pytest.raises(ConfigError, match=rf"queues\[0\]\.{key}: .*is not a Go duration.*'10m'"):
        parse_config(_stack(**{key: value}))
