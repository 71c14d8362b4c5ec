"""The cascade with a guarantee on a known mixture: a cheap judge certain on 60% of the items (right on all but a
few of them) and torn on the rest. The threshold chosen on a calibration set is the one a plain loop with scipy's
binomial test chooses on entropies computed by scipy; it is frozen with its target, delta and calibration into the
cascade's hashed record; on new data drawn alike the cascade keeps about the calibration's share, people agree on
the kept items at about the calibration's rate, and the report says what the guarantee covers; on items the cheap
judge is unsure of throughout, the kept share says the new data is not drawn like the calibration."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from runner_helpers import dimension
from scipy import stats

from geval_core.diagnostics.cascade import _cascade, get_cascade, score_cascade
from geval_core.diagnostics.escalate import calibrate_guarantee, freeze_guaranteed, guarantee_report
from geval_core.errors import InputError
from geval_core.providers.scripted import ScriptedJudge
from geval_core.run import RunOptions, run_scoring
from geval_core.stats.guarantee import threshold_grid
from geval_core.types import Item, JudgeSettings
from prompt_library import Library

CHEAP = JudgeSettings(provider="scripted", model="scripted-cheap")
STRONG = JudgeSettings(provider="scripted", model="scripted-strong")
MARK = re.compile(r"\[h=(\d)\]\[sure=(\d)\]\[wrong=(\d)\]")


def marks(request) -> tuple[int, bool, bool]:
    human, sure, wrong = MARK.search("".join(m["content"] for m in request.messages)).groups()
    return int(human), sure == "1", wrong == "1"


def cheap_script(request):
    human, sure, wrong = marks(request)
    if sure:  # certain: right, or (rarely) certain and two points off
        point = (human + 2 - 1) % 5 + 1 if wrong else human
        return {str(point): 0.95, "The": 0.05}
    return {"1": 0.1, "2": 0.2, "3": 0.3, "4": 0.2, "5": 0.1, "The": 0.1}  # torn: the middle of the scale


def strong_script(request):
    human, _, _ = marks(request)
    return {str(human): 0.9, "The": 0.1}


def judge_for(settings):
    return ScriptedJudge(cheap_script if settings.model == CHEAP.model else strong_script)


def items(count: int, prefix: str, rng, sure_share: float = 0.6) -> list[Item]:
    out = []
    for k in range(count):
        human = int(rng.integers(1, 6))
        sure, wrong = int(rng.random() < sure_share), int(rng.random() < 0.04)
        out.append(
            Item(
                f"{prefix}{k:03d}",
                {
                    "document": f"Document {prefix}{k}.",
                    "summary": f"S [h={human}][sure={sure}][wrong={wrong}]",
                },
                {"coherence": float(human)},
                f"{prefix}{k // 4:03d}",
            )
        )
    return out


@pytest.fixture
def lib(tmp_path):
    rng = np.random.default_rng(5)
    library = Library(tmp_path / "lib.db", seed_examples=False)
    library.import_items("calibration", items(200, "c", rng))
    library.import_items("fresh", items(120, "f", rng))
    library.import_items("unsure", items(60, "u", rng, sure_share=0.0))
    cheap = library.freeze(dimension(CHEAP), name="cheap").prompt
    strong = library.freeze(dimension(STRONG, definition="Coherence, read closely."), name="strong").prompt
    yield library, cheap, strong
    library.close()


def scored(library, prompt, settings, dataset: str) -> str:
    run_id = library.create_run(prompt.id, dataset, settings)
    run_scoring(
        prompt,
        library.dataset_items(dataset),
        judge_for(settings),
        library,
        run_id,
        RunOptions(settings=settings),
    )
    return run_id


def by_hand(library, run_id: str, target: float, delta: float) -> tuple[float | None, int, int]:
    """Entropies by scipy, agreement within half a point, and the paper's loop with scipy's binomial test."""
    people = {i.id: i.human["coherence"] for i in library.dataset_items("calibration")}
    rows = {r["item_id"]: r for r in library.judgments(run_id)}
    u, ok = [], []
    for item_id, human in people.items():
        dist = rows[item_id]["distribution"]  # the allowed ratings only
        u.append(float(stats.entropy(list(dist.values()), base=2)))
        ok.append(abs(rows[item_id]["score"] - human) <= 0.5)
    u, ok = np.array(u), np.array(ok)
    chosen = None
    for t in threshold_grid(math.log2(5)):
        keep = u <= t
        if keep.sum() < 30:
            continue
        if (
            stats.binomtest(int((~ok[keep]).sum()), int(keep.sum()), 1 - target, alternative="less").pvalue
            > delta
        ):
            break
        chosen = t
    keep = u <= chosen if chosen is not None else np.zeros(len(u), dtype=bool)
    return chosen, int(keep.sum()), int((~ok[keep]).sum())


def test_the_threshold_is_the_papers_rule_computed_by_scipy(lib):
    library, cheap, strong = lib
    run_id = scored(library, cheap, CHEAP, "calibration")
    strong_run = scored(library, strong, STRONG, "calibration")
    g = calibrate_guarantee(library, run_id, "coherence", "entropy", 0.85, 0.1, strong_run=strong_run)
    assert (g["threshold"], g["kept"], g["disagree"]) == by_hand(library, run_id, 0.85, 0.1)
    assert g["threshold"] is not None and 0.5 < g["kept_share"] < 0.7  # the certain items, about 60%
    assert g["lower_bound"] >= 0.85 and g["calibration"]["items"] == 200
    assert g["strong"]["agreement_on_sent"] == 1.0 and g["strong"]["sent"] == 200 - g["kept"]
    assert "distribution shift" in " ".join(g["does_not_cover"]) and "at least 85%" in g["covers"]


def test_frozen_with_its_guarantee_and_reported_on_new_data(lib):
    library, cheap, strong = lib
    g = calibrate_guarantee(library, scored(library, cheap, CHEAP, "calibration"), "coherence", target=0.85)
    cascade, created = freeze_guaranteed(library, "sure", g, strong.label)
    assert created and get_cascade(library, "sure") == cascade
    frozen = cascade["guarantee"]
    assert (frozen["target"], frozen["delta"], frozen["within"]) == (0.85, 0.1, 0.5)
    assert cascade["threshold"] == g["threshold"] and frozen["calibration"]["kept"] == g["kept"]
    assert frozen["calibration"]["run"] == g["calibration"]["run"] and "fixed-sequence" in frozen["method"]
    record = library.records("cascade", "sure")[-1]
    edited = {**record, "body": {**record["body"], "guarantee": {**frozen, "target": 0.5}}}
    with pytest.raises(InputError, match="does not match its hash"):
        _cascade("sure", edited)  # the guarantee is part of what the hash holds

    fresh = library.get_dataset("fresh").id
    result = score_cascade(library, cascade, fresh, judge_for)
    people = library.human_means(fresh, "coherence")
    report = guarantee_report(cascade, result, people)
    assert report["kept"] == sum(r["by"] == "cheap" for r in result["rows"])
    assert abs(report["kept_share"] - report["calibration_kept_share"]) < 0.15 and not report["shift_warning"]
    assert report["rated_kept"] == report["kept"] and report["rated_kept_agreement"] >= 0.85
    unsure = score_cascade(library, cascade, library.get_dataset("unsure").id, judge_for)
    assert "not be drawn like the calibration" in guarantee_report(cascade, unsure)["shift_warning"]
    assert guarantee_report({**cascade, "guarantee": None}, result) is None


def test_refusals(lib):
    library, cheap, strong = lib
    run_id = scored(library, cheap, CHEAP, "calibration")
    hopeless = calibrate_guarantee(library, run_id, "coherence", target=0.99, delta=0.01)
    assert hopeless["threshold"] is None and hopeless["kept"] == 0
    with pytest.raises(InputError, match="no threshold reaches 99%"):
        freeze_guaranteed(library, "never", hopeless, strong.label)
    other = library.create_run(cheap.id, "calibration", STRONG)  # the cheap prompt scored by another judge
    run_scoring(
        cheap,
        library.dataset_items("calibration"),
        judge_for(STRONG),
        library,
        other,
        RunOptions(settings=STRONG),
    )
    with pytest.raises(InputError, match="not by its prompt's own judge"):
        calibrate_guarantee(library, other, "coherence")
    with pytest.raises(InputError, match="human rating 'fluency'"):
        calibrate_guarantee(library, run_id, "fluency")
