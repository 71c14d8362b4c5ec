"""Runs (one prompt on one dataset version with one judge), their judgments, and the judge cache."""

from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import asdict
from datetime import datetime, timezone
from typing import Any

from geval_core.errors import InputError, IntegrityError, NotFoundError
from geval_core.judgment import Judgment
from geval_core.prompts import canonical_hash, canonical_json
from geval_core.records import Run
from geval_core.types import Dimension, JudgeSettings, Scale

from .base import LibraryBase, collections_paused, dumps, insert_row, loads, loads_column, now, update_row
from .cache_origin import ORIGIN_COLUMNS, ORIGIN_SQL, reply_problem
from .hashes import as_stored, row_hash
from .judgment_rows import JUDGMENT_COLUMNS, decoded, encoded, latest_attempts
from .prompts import PromptsMixin, split_label
from .run_streams import DIGEST_ROWS, RunStreamsMixin

_judgment = decoded  # the one decoder of a stored judgment row, by the name other modules import
__all__ = ["JUDGMENT_COLUMNS", "RunsMixin", "latest_attempts", "new_run_id"]

RUN_STATUSES = ("running", "done", "cancelled", "failed")
RUN_COLUMNS = (
    "status",
    "finished_at",
    "model_version",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "items_total",
)

_RUN_SELECT = """
SELECT r.*, p.name || '@' || p.version AS prompt_label, d.name || '@' || d.version AS dataset_label,
  (SELECT COUNT(DISTINCT j.item_id) FROM judgments j WHERE j.run_id = r.id) AS judged,
  (SELECT COUNT(DISTINCT j.item_id) FROM judgments j WHERE j.run_id = r.id)
    - (SELECT COUNT(*) FROM judgments j WHERE j.run_id = r.id AND j.error IS NULL) AS errors
FROM runs r JOIN prompts p ON p.id = r.prompt_id JOIN datasets d ON d.id = r.dataset_id
"""


def new_run_id() -> str:
    """A readable, time-sortable id: 20250102-130405-1a2b3c."""
    return datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(3)


class RunsMixin(RunStreamsMixin, PromptsMixin, LibraryBase):
    """Runs, judgments and the judge cache."""

    def create_run(
        self, prompt_id: str, dataset_id: str, judge: JudgeSettings, item_ids: list[str] | None = None
    ) -> str:
        """Start a run record (status "running"); prompt and dataset may be given by id or name."""
        prompt = self.get_prompt(prompt_id)
        dataset = self.get_dataset(dataset_id)
        if item_ids is not None:
            known = {i.id for i in self.dataset_items(dataset.id)}
            unknown = [i for i in item_ids if i not in known]
            if unknown:
                raise InputError(f"items {unknown[:5]} are not in dataset {dataset.label}")
        run_id = new_run_id()
        with self._write() as db:
            insert_row(
                db,
                "runs",
                self._hashed(
                    "runs",
                    {
                        "id": run_id,
                        "prompt_id": prompt.id,
                        "dataset_id": dataset.id,
                        "judge": dumps(asdict(judge)),
                        "item_ids": dumps(list(item_ids)) if item_ids is not None else None,
                        "status": "running",
                        "items_total": len(item_ids) if item_ids is not None else dataset.item_count,
                        "created_at": now(),
                        "extra": dumps({}),
                    },
                ),
            )
        return run_id

    def find_run(
        self,
        prompt_id: str,
        dataset_id: str,
        judge: JudgeSettings,
        statuses: tuple[str, ...] = RUN_STATUSES,
        item_ids: list[str] | None = None,
    ) -> Run | None:
        """The newest run of this prompt, dataset and judge on exactly `item_ids` (None: the whole dataset) whose
        status is in `statuses`; None when there is none (looking records nothing)."""
        wanted = None if item_ids is None else tuple(item_ids)
        for run in self.list_runs(prompt=prompt_id, dataset=dataset_id):
            if run.status in statuses and run.judge == judge and run.item_ids == wanted:
                return run
        return None

    def find_or_create_run(
        self,
        prompt_id: str,
        dataset_id: str,
        judge: JudgeSettings,
        statuses: tuple[str, ...],
        item_ids: list[str] | None = None,
    ) -> tuple[str, bool]:
        """(run id, created): find_run's run, else a new run on those items; one transaction, so two commands
        started together share one run."""
        with self._write():
            found = self.find_run(prompt_id, dataset_id, judge, statuses, item_ids)
            if found is not None:
                return found.id, False
            return self.create_run(prompt_id, dataset_id, judge, item_ids), True

    def get_run(self, run_id: str) -> Run:
        """One run with its judge settings, labels and counts (judged, errors); a unique id prefix works."""
        row = self._one(_RUN_SELECT + " WHERE r.id = ?", [run_id])
        if row is None:
            rows = self._rows(_RUN_SELECT + " WHERE r.id LIKE ? LIMIT 2", [run_id + "%"])
            row = rows[0] if len(rows) == 1 and run_id else None
        if row is None:
            raise NotFoundError(f"no run {run_id!r}; `geval runs list` shows the runs")
        return _run(row)

    def list_runs(self, prompt: str | None = None, dataset: str | None = None) -> list[Run]:
        """Runs, newest first; `prompt`/`dataset` filter by id, name (every version) or name@version."""
        where: list[str] = []
        params: list[str | int] = []
        for value, table, column in ((prompt, "p", "prompt_id"), (dataset, "d", "dataset_id")):
            if value is None:
                continue
            name, version = split_label(value)
            if version is None:
                where.append(f"({table}.name = ? OR r.{column} = ?)")
                params += [name, name]
            else:
                where.append(f"({table}.name = ? AND {table}.version = ?)")
                params += [name, version]
        sql = (
            _RUN_SELECT
            + (" WHERE " + " AND ".join(where) if where else "")
            + " ORDER BY r.created_at DESC, r.rowid DESC"  # within a second: the order they were made
        )
        return [_run(r) for r in self._rows(sql, params)]

    def set_run_fields(self, run_id: str, **fields: Any) -> None:
        """Update run columns (model_version, tokens, cost_usd, ...); unknown names go to `extra`."""
        run = self.get_run(run_id)
        if "status" in fields and fields["status"] not in RUN_STATUSES:
            raise InputError(f"run status must be one of {', '.join(RUN_STATUSES)}, got {fields['status']!r}")
        columns = {k: v for k, v in fields.items() if k in RUN_COLUMNS}
        extra = {k: v for k, v in fields.items() if k not in RUN_COLUMNS}
        with self._write() as db:
            if extra:
                stored = loads(db.execute("SELECT extra FROM runs WHERE id = ?", [run.id]).fetchone()[0], {})
                columns["extra"] = dumps({**stored, **extra})
            if columns:
                update_row(db, "runs", ("id", run.id), columns)

    def finish_run(self, run_id: str, status: str = "done", **totals: Any) -> None:
        """Mark a run finished (done, cancelled or failed), store its totals and the digest of its judgments."""
        with self._write() as db:
            run = self.get_run(run_id)
            # Set at every finish where judgments were added (a resumed session adds some, or successors of
            # errored ones); judgments are append-only, so an unchanged count is an unchanged digest.
            rows = self.judgment_row_count(run.id)
            if run.digest is None or run.extra.get(DIGEST_ROWS) != rows:
                db.execute("UPDATE runs SET digest = ? WHERE id = ?", [self.streamed_digest(run.id), run.id])
                totals[DIGEST_ROWS] = rows
            self.set_run_fields(run.id, status=status, finished_at=now(), **totals)

    def judged_item_ids(self, run_id: str, include_errors: bool = False) -> set[str]:
        """Items that already have a judgment; errored ones are left out (a resume retries them)."""
        # Only an errored attempt has a successor, so the error-free rows are exactly the final judgments.
        sql = "SELECT item_id FROM judgments WHERE run_id = ?" + (
            "" if include_errors else " AND error IS NULL"
        )
        return {r["item_id"] for r in self._rows(sql, [run_id])}

    def scored_count(self, run_id: str) -> int:
        """How many of a run's items have a score, over every session of the run."""
        row = self._one(
            "SELECT COUNT(*) AS n FROM judgments WHERE run_id = ? AND score IS NOT NULL AND error IS NULL",
            [run_id],
        )
        return int(row["n"]) if row else 0

    def save_judgment(self, run_id: str, judgment: Judgment) -> bool:
        """Write one item's judgment in one transaction; returns False when it was already stored.

        A stored judgment is never changed: an errored one gets a successor (its next attempt, which
        the reads return), so a resumed run neither duplicates nor loses an item, and the failure stays on record.
        """
        return self.save_next_attempt(run_id, judgment)[0]

    def save_next_attempt(self, run_id: str, judgment: Judgment) -> tuple[bool, dict[str, Any] | None]:
        """save_judgment, also returning the errored attempt the new row succeeds (its stored row), if any:
        what a run's running totals take out."""
        row = encoded(run_id, judgment, now())
        with self._write(savepoint=False) as db:  # one write statement, which undoes itself if it fails
            # The triggers refuse an INSERT that is not the next attempt after an errored one, so look
            # first: under the write lock nobody can change the answer meanwhile.
            cursor = db.execute(
                "SELECT * FROM judgments WHERE run_id = ? AND item_id = ? ORDER BY attempt DESC LIMIT 1",
                [run_id, judgment.item_id],
            )
            latest = cursor.fetchone()
            if latest is None:
                row["attempt"], previous = 0, None
            else:
                previous = dict(zip([c[0] for c in cursor.description], latest, strict=True))
                if previous["error"] is None:
                    return False, None
                row["attempt"] = previous["attempt"] + 1
            insert_row(db, "judgments", self._hashed("judgments", row))
            return True, previous

    def _hashed(self, table: str, row: dict[str, Any]) -> dict[str, Any]:
        """A row to insert, in its stored types, with its row hash."""
        stored = as_stored(row, self._affinities(table))
        return {**stored, "row_hash": row_hash(table, stored)}

    def judgments(self, run_id: str) -> list[dict[str, Any]]:
        """Every judgment of a run in dataset order; distribution as {int: float}, replies as a list."""
        run = self.get_run(run_id)
        # Sorted here, not by an ORDER BY over a join: SQLite would sort the whole rows in a temporary
        # B-tree, which is slower for a large run. Items not in the dataset come first, as NULLs do.
        with collections_paused():
            with self._lock:  # the connection is shared by threads: no read inside another's write
                position = dict(
                    self.conn.execute(
                        "SELECT item_id, position FROM items WHERE dataset_id = ?", [run.dataset_id]
                    ).fetchall()
                )
            rows = latest_attempts(self._rows("SELECT * FROM judgments WHERE run_id = ?", [run.id]))
            rows.sort(key=lambda r: (r["item_id"] in position, position.get(r["item_id"], 0), r["item_id"]))
            distributions = loads_column([r["distribution"] for r in rows])
            replies = loads_column([r["replies"] for r in rows], [])
            return [decoded(r, d, p) for r, d, p in zip(rows, distributions, replies, strict=True)]

    # --- judge cache --------------------------------------------------------------------------------
    def cache_get(self, key: str) -> dict[str, Any] | None:
        """A stored reply dict for an identical request, or None (also for an entry that names no judgment, or one
        that does not exist); IntegrityError when it fails its hash or differs from its origin judgment."""
        with self._lock:  # asked once per item: the plain cursor, not a query's dict rows
            row = self.conn.execute(
                "SELECT reply, hash, origin FROM judge_cache WHERE key = ?", [key]
            ).fetchone()
        if row is None:
            return None
        reply, digest, origin = row
        if not cache_entry_ok(key, reply, digest):
            raise IntegrityError(f"judge cache entry {key[:12]} does not match its hash; it is asked again")
        data = loads(reply)
        # Anyone can recompute the hash; only the whole reply some stored judgment was scored from is replayed.
        why, contradicted = self._origin_verdict(origin, data)
        if contradicted:  # vouched for by a judgment it differs from: a forged or edited entry
            raise IntegrityError(f"judge cache entry {key[:12]}: {why}; it is asked again")
        return data if why is None else None

    def origin_problem(self, origin: str | None, reply: Any) -> str | None:
        """Why a cache entry's origin does not vouch for its reply (None when a judgment of it was scored from
        exactly this reply: texts, model version, tokens and log-probabilities)."""
        return self._origin_verdict(origin, reply)[0]

    def _origin_verdict(self, origin: str | None, reply: Any) -> tuple[str | None, bool]:
        """(origin_problem, whether the origin judgment exists and contradicts the reply)."""
        if not origin:
            return "names no judgment it came from", False
        run_id, _, item_id = origin.partition("/")
        with self._lock:
            cursor = self.conn.execute(ORIGIN_SQL, [run_id, item_id])
            stored = [dict(zip(ORIGIN_COLUMNS, r, strict=True)) for r in cursor.fetchall()]
        if not stored:
            return f"its origin judgment {origin} does not exist", False
        problems = [reply_problem(reply, row, self._origin_scale) for row in stored]  # latest attempt first
        if None in problems:
            return None, False
        return f"its reply is not the one its origin judgment {origin} was scored from ({problems[0]})", True

    def _origin_scale(self, row: dict[str, Any]) -> Scale | None:
        """The scale of an origin judgment's prompt (prompts never change: kept per prompt id)."""
        scales = self.__dict__.setdefault("_origin_scales", {})
        if row["prompt_id"] not in scales:
            try:
                scales[row["prompt_id"]] = Dimension.from_dict(loads(row["dimension"])).scale
            except (AttributeError, KeyError, TypeError, ValueError):  # a damaged prompt row: nothing vouches
                scales[row["prompt_id"]] = None
        return scales[row["prompt_id"]]

    def cache_put(self, key: str, reply: dict[str, Any], origin: str | None = None) -> None:
        """Store a reply dict under its request key, naming the judgment it is scored into (origin: RUN/ITEM);
        a verified entry is kept, a bad one replaced."""
        # Stored as canonical JSON, so its hash is taken over the same text with no second encoding. The
        # reply is JSON-ready (string keys; json writes tuples as lists), as JudgeReply.to_dict makes it.
        text = canonical_json(reply)
        row = [key, text, _entry_hash(key, text), now(), origin]
        with self._write(savepoint=False) as db:  # one statement at most changes the row
            added = db.execute(
                "INSERT INTO judge_cache (key, reply, hash, created_at, origin) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT(key) DO NOTHING",
                row,
            ).rowcount
            if added:
                return
            reply_text, digest, stored_origin = db.execute(
                "SELECT reply, hash, origin FROM judge_cache WHERE key = ?", [key]
            ).fetchone()
            if (
                cache_entry_ok(key, reply_text, digest)
                and self.origin_problem(stored_origin, loads(reply_text)) is None
            ):
                return
            # The one overwrite of a cache row: a fresh reply replacing an entry that fails its checks.
            db.execute(
                "UPDATE judge_cache SET reply = ?, hash = ?, created_at = ?, origin = ? WHERE key = ?",
                row[1:] + [key],
            )


def cache_hash(key: str, reply_text: str) -> str:
    """The hash a cache entry carries: over its key and its reply's canonical JSON."""
    return canonical_hash({"key": key, "reply": loads(reply_text)})


def _entry_hash(key: str, canonical_text: str) -> str:
    """`cache_hash` of a reply already in canonical JSON: the canonical JSON of {"key", "reply"} is made by
    joining the texts (no parse, no second encoding)."""
    joined = '{"key":' + json.dumps(key, ensure_ascii=False) + ',"reply":' + canonical_text + "}"
    return hashlib.sha256(joined.encode("utf-8")).hexdigest()


def cache_entry_ok(key: str, reply_text: str | None, stored_hash: str | None) -> bool:
    """Whether a cache row's reply is the one its hash was computed over."""
    if stored_hash is None or reply_text is None:
        return False
    if _entry_hash(key, reply_text) == stored_hash:  # stored canonical (the current write format)
        return True
    try:
        return cache_hash(key, reply_text) == stored_hash
    except (TypeError, ValueError):  # not JSON text at all
        return False


def _run(row: dict[str, Any]) -> Run:
    """The one decoding of a stored run: its judge, item ids and extra facts."""
    return Run.from_stored(row, loads(row["judge"], {}), loads(row["item_ids"]), loads(row["extra"], {}))
