"""The library's schema as sqlite-utils migrations; add a new function to change it, never edit one."""

from __future__ import annotations

from sqlite_utils import Database, Migrations

migrations = Migrations("geval_library")


def _refuse_changes(db: Database, table: str, what: str) -> None:
    # Triggers, not application code, so even plain SQL from another tool cannot change history.
    for action in ("UPDATE", "DELETE"):
        db.execute(
            f"CREATE TRIGGER IF NOT EXISTS {table}_no_{action.lower()} BEFORE {action} ON {table} "
            f"BEGIN SELECT RAISE(ABORT, '{what} are immutable: {action} refused'); END"
        )


@migrations()
def m001_schema(db: Database) -> None:
    """Drafts, frozen prompts, datasets and items, runs and judgments, the judge cache, settings."""
    _design_tables(db)
    _run_tables(db)
    _refuse_changes(db, "prompts", "frozen prompts")
    _refuse_changes(db, "datasets", "dataset versions")
    _refuse_changes(db, "items", "dataset items")


def _design_tables(db: Database) -> None:
    db["meta"].create({"key": str, "value": str}, pk="key")
    db["drafts"].create(
        {"id": int, "name": str, "dimension": str, "steps_model": str, "created_at": str, "updated_at": str},
        pk="id", not_null={"dimension"},
    )
    db["prompts"].create(
        {"id": str, "name": str, "version": int, "dimension": str, "steps_model": str, "judge": str,
         "created_at": str},
        pk="id", not_null={"name", "version", "dimension", "created_at"},
    )
    db["prompts"].create_index(["name", "version"], unique=True)
    db["datasets"].create(
        {"id": str, "name": str, "version": int, "source": str, "mapping": str, "item_count": int,
         "fields": str, "human": str, "created_at": str},
        pk="id", not_null={"name", "version", "created_at"},
    )
    db["datasets"].create_index(["name", "version"], unique=True)
    db["items"].create(
        {"dataset_id": str, "item_id": str, "position": int, "fields": str, "human": str, "group_id": str},
        pk=("dataset_id", "item_id"), foreign_keys=[("dataset_id", "datasets", "id")],
    )


def _run_tables(db: Database) -> None:
    db["runs"].create(
        {"id": str, "prompt_id": str, "dataset_id": str, "judge": str, "item_ids": str, "status": str,
         "items_total": int, "created_at": str, "finished_at": str, "model_version": str,
         "input_tokens": int, "output_tokens": int, "cost_usd": float, "extra": str},
        pk="id", foreign_keys=[("prompt_id", "prompts", "id"), ("dataset_id", "datasets", "id")],
    )
    db["runs"].create_index(["prompt_id"])
    db["runs"].create_index(["dataset_id"])
    db["judgments"].create(
        {"run_id": str, "item_id": str, "score": float, "raw_score": float, "top_score": float,
         "distribution": str, "valid_mass": float, "replies": str, "parsed": int, "unparsed": int,
         "ambiguous": int, "mode": str, "fallback": int, "model_version": str, "input_tokens": int,
         "output_tokens": int, "latency_s": float, "cached": int, "error": str, "extra": str,
         "created_at": str},
        pk=("run_id", "item_id"), foreign_keys=[("run_id", "runs", "id")],
    )
    db["judge_cache"].create({"key": str, "reply": str, "created_at": str}, pk="key")


@migrations()
def m002_judgment_fields(db: Database) -> None:
    """Judgment fields named for what they hold: top_rating/first_rating, valid_mass/parsed_share, differs.

    Before, `top_score` held the likeliest rating in logprobs mode and the first parsed reply in sampling
    mode, and `valid_mass` held the probability on allowed ratings or the share of replies that parsed.
    """
    db.execute("ALTER TABLE judgments RENAME COLUMN top_score TO top_rating")
    for column, kind in (("first_rating", "FLOAT"), ("parsed_share", "FLOAT"), ("differs", "INTEGER")):
        db.execute(f"ALTER TABLE judgments ADD COLUMN {column} {kind}")
    db.execute("UPDATE judgments SET first_rating = top_rating, top_rating = NULL, parsed_share = valid_mass, "
               "valid_mass = NULL WHERE mode = 'sampling'")
    db.execute("UPDATE judgments SET differs = COALESCE(json_extract(extra, '$.differs'), 0), "
               "extra = json_remove(extra, '$.differs') WHERE extra IS NOT NULL")


def pending(db: Database) -> bool:
    """Whether any migration still has to run (read-only)."""
    return bool(migrations.pending(db))


def apply(db: Database) -> None:
    """Apply pending migrations (the caller holds the write lock)."""
    migrations.apply(db)
