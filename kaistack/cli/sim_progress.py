"""Progress lines for the commands that run the simulator (`simulate`, `check`, `diagnose`), on stderr.

Each action's time as it ends, and every PROGRESS_EVERY seconds while it runs, where it is: an eviction
search on a busy cluster can take minutes on one job, and a silent terminal for that long looks hung.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kaistack.progress import Progress

if TYPE_CHECKING:  # the placement package is imported when a command runs, not when the CLI starts
    from placement.watch import Beat

# Seconds between progress lines while an action runs.
PROGRESS_EVERY = 5.0


def simulation_progress(progress: Progress) -> dict[str, Any]:
    """Keyword arguments for placement's `simulate`: the callbacks when progress is on, nothing otherwise."""
    if not progress.enabled:
        return {}

    def on_step(cycle: int, action: str, seconds: float) -> None:
        progress.note(f"cycle {cycle}: {action} {seconds:.1f} s")

    def on_progress(beat: Beat) -> None:
        line = f"cycle {beat.cycle}: {beat.action} {beat.seconds:.0f} s, {beat.jobs} jobs searched, "
        line += f"{beat.scenarios} scenarios"
        if beat.job is not None:
            line += f"; on {beat.job} ({beat.job_scenarios} scenarios, {beat.job_seconds:.0f} s)"
        progress.note(line)

    return {"on_step": on_step, "on_progress": on_progress, "progress_every": PROGRESS_EVERY}
