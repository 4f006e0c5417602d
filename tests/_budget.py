"""How many examples each hypothesis test runs: its budget in the suite, scaled up for a soak.

The suite keeps near a minute with the budgets the tests give. ``HYPOTHESIS_PROFILE=long``
(see ``conftest``) multiplies every budget by ``SOAK_EXAMPLES`` and every state machine's
story length by ``SOAK_STEPS``: a test that names its own budget would otherwise ignore the
profile, and the soak would run exactly the suite.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

LONG = os.environ.get("HYPOTHESIS_PROFILE") == "long"
SOAK_EXAMPLES = 20 if LONG else 1
SOAK_STEPS = 4 if LONG else 1


def budget(max_examples: int, stateful_step_count: int | None = None) -> settings:
    """Settings for a test that runs ``max_examples`` examples in the suite (stories of
    ``stateful_step_count`` steps for a state machine), more under the ``long`` profile.
    No deadline and no too-slow health check: this kind of machine is shared and noisy.
    The soak's long stories make even the smallest one large, which hypothesis would
    otherwise refuse as a health-check failure."""
    quiet = [HealthCheck.too_slow, HealthCheck.large_base_example]
    if stateful_step_count is None:
        return settings(
            max_examples=max_examples * SOAK_EXAMPLES, deadline=None, suppress_health_check=quiet
        )
    return settings(
        max_examples=max_examples * SOAK_EXAMPLES,
        stateful_step_count=stateful_step_count * SOAK_STEPS,
        deadline=None,
        suppress_health_check=quiet,
    )
