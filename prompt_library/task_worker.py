"""The worker process of a task of the library (`python -m prompt_library.task_worker LIBRARY KIND KEY`): it
does the task the page recorded, writes its progress and its result (or error) back, and stops when asked."""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from geval_core.errors import GEvalError

from .leases import process_start
from .library import Library
from .task_jobs import stop_requested, task, update_task

STOP_POLL_S = 0.25
Progress = Callable[[int, int], None]


def stability_task(
    lib: Library, spec: dict[str, Any], progress: Progress, cancel: threading.Event
) -> dict[str, Any]:
    """The stability check of a draft: its repeats judged in memory with the planned judge and server."""
    from geval_core.diagnostics.stability import dimension_stability
    from geval_core.providers import get_judge
    from geval_core.run.plan import plan_settings
    from geval_core.types import Dimension, JudgeSettings

    dimension = Dimension.from_dict(spec["dimension"])
    wanted = list(spec["item_ids"])
    by_id = {item.id: item for item in lib.dataset_items(spec["dataset_id"])}
    items = [by_id[i] for i in wanted if i in by_id]
    planned = plan_settings(JudgeSettings(**spec["settings"]), lib)
    result = dimension_stability(
        dimension,
        items,
        get_judge(planned.settings),
        int(spec["repeats"]),
        regenerate_steps=bool(spec.get("regenerate")),
        settings=planned.settings,
        on_repeat=progress,
        cancel=cancel,
    )
    return {**result.to_dict(), "judge": planned.describe()}


def steps_task(
    lib: Library, spec: dict[str, Any], progress: Progress, cancel: threading.Event
) -> dict[str, Any]:
    """One steps-generation call of a draft with the planned judge: the steps and the model that wrote them."""
    from geval_core.prompts.steps import generate_steps
    from geval_core.types import Dimension

    settings, judge = _judge(lib, spec)
    steps, model = _cancellable(
        lambda: generate_steps(Dimension.from_dict(spec["dimension"]), judge, settings), cancel
    )
    return {"steps": list(steps), "model": model}


def variation_task(
    lib: Library, spec: dict[str, Any], progress: Progress, cancel: threading.Event
) -> dict[str, Any]:
    """The steps of a draft generated k times with the planned judge and compared (the Design page's step
    variation)."""
    from geval_core.prompts.steps import drift
    from geval_core.types import Dimension

    settings, judge = _judge(lib, spec)
    dimension = Dimension.from_dict(spec["dimension"])
    return _cancellable(
        lambda: drift(dimension, judge, int(spec["k"]), settings, on_generation=progress).to_dict(), cancel
    )


def suggest_task(
    lib: Library, spec: dict[str, Any], progress: Progress, cancel: threading.Event
) -> dict[str, Any]:
    """One designer-model call suggesting a revised definition and anchors from the disputed items."""
    from geval_core.diagnostics.suggest import suggest_edits
    from geval_core.types import Dimension

    settings, judge = _judge(lib, spec)
    return _cancellable(
        lambda: suggest_edits(Dimension.from_dict(spec["dimension"]), spec["rows"], judge, settings), cancel
    )


def rubric_task(
    lib: Library, spec: dict[str, Any], progress: Progress, cancel: threading.Event
) -> dict[str, Any]:
    """A rubric-form probe of a stored run: one run per form, planned and scored with the run's own judge."""
    from geval_core.diagnostics.rubric_probes import rubric_probe

    return rubric_probe(
        lib,
        spec["run_id"],
        None,
        int(spec["sample"]),
        tuple(spec["variants"]),
        int(spec.get("seed") or 0),
        on_items=progress,
        cancel=cancel,
    )


def drift_task(
    lib: Library, spec: dict[str, Any], progress: Progress, cancel: threading.Event
) -> dict[str, Any]:
    """A drift watch's check: its anchors re-scored through the one plan, the check appended to the watch."""
    from geval_core.diagnostics.drift import check_task

    return check_task(lib, spec, progress, cancel)


def _judge(lib: Library, spec: dict[str, Any]) -> tuple[Any, Any]:
    """(settings, judge): the spec's judge planned as a run's is (its server kept, else the environment's)."""
    from geval_core.providers import get_judge
    from geval_core.run.plan import plan_settings
    from geval_core.types import JudgeSettings

    settings = plan_settings(JudgeSettings(**spec["settings"]), lib).settings
    return settings, get_judge(settings)


def _cancellable(work: Callable[[], Any], cancel: threading.Event) -> Any:
    """The work's result, done in a thread so a stop request ends the task at once (one long model call cannot be
    interrupted; the process ends and the call with it)."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["result"] = work()
        except BaseException as exc:  # handed to the waiting thread
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    while thread.is_alive():
        if cancel.wait(STOP_POLL_S):
            raise GEvalError("stopped")
    if "error" in box:
        raise box["error"]
    return box["result"]


TASKS: dict[str, Callable[[Library, dict[str, Any], Progress, threading.Event], dict[str, Any]]] = {
    "stability": stability_task,
    "steps": steps_task,
    "steps_variation": variation_task,
    "suggest": suggest_task,
    "rubric": rubric_task,
    "drift": drift_task,
}


def _watch_stop(path: str, kind: str, key: str, cancel: threading.Event, done: threading.Event) -> None:
    with Library(path, seed_examples=False) as lib:  # its own connection: a connection belongs to its thread
        while not done.wait(STOP_POLL_S):
            if stop_requested(lib, kind, key):
                cancel.set()
                return


def main(argv: list[str]) -> int:
    """Do one task of one library and record how it ended; the exit code says the same."""
    path, kind, key = argv
    cancel, done = threading.Event(), threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: cancel.set())
    with Library(path, seed_examples=False) as lib:
        spec = (task(lib, kind, key) or {}).get("spec")
        update_task(lib, kind, key, pid=os.getpid(), process_start=process_start(os.getpid()))
        watcher = threading.Thread(target=_watch_stop, args=(path, kind, key, cancel, done), daemon=True)
        watcher.start()
        try:
            if kind not in TASKS or spec is None:
                raise GEvalError(f"no task {kind}:{key} to do")
            result = TASKS[kind](lib, spec, lambda d, t: update_task(lib, kind, key, progress=[d, t]), cancel)
            if cancel.is_set():  # what was judged before the stop is not a report of the check asked for
                raise GEvalError("stopped")
        except BaseException as exc:  # whatever it was, the task must not look running for good
            message = (
                "stopped"
                if cancel.is_set()
                else (str(exc) if isinstance(exc, GEvalError) else f"{type(exc).__name__}: {exc}")
            )
            update_task(lib, kind, key, ended_at=_now(), error=message)
            return 1
        finally:
            done.set()
        update_task(lib, kind, key, ended_at=_now(), result=result)
    return 0


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
