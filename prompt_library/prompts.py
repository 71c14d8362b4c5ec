"""Drafts (mutable) and frozen prompt versions (immutable, content-hashed)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

from geval_core.errors import InputError, IntegrityError, NotFoundError
from geval_core.files.prompt_files import LoadedExport
from geval_core.prompts import content_hash, metric_fields, template_of
from geval_core.prompts.checks import errors
from geval_core.prompts.names import check_dimension_name, check_name, look_alike, slug
from geval_core.providers.capabilities import check_dimension
from geval_core.types import Dimension, FrozenPrompt

from .base import LibraryBase, dumps, insert_row, loads, now, update_row


@dataclass(frozen=True)
class FreezeResult:
    """What freeze() did: the frozen prompt, whether it is new, and the warnings to show."""

    prompt: FrozenPrompt
    created: bool
    warnings: list[str] = field(default_factory=list)
    note: str = ""  # what an import did ("imported as coherence@5: a new version; ...")
    agreement: dict[str, Any] | None = None  # an import's attached agreement that passed its own hash


def content_differences(a: Dimension, b: Dimension) -> list[str]:
    """The hashed fields in which two dimensions differ: "steps", "definition", "judge.model", ..."""
    fa, fb = metric_fields(a), metric_fields(b)
    found = [k for k in fa if k != "judge" and fa[k] != fb[k]]
    return found + [f"judge.{k}" for k in fa["judge"] if fa["judge"][k] != fb["judge"][k]]


def import_note(result: FreezeResult, before: list[FrozenPrompt], imported: FrozenPrompt) -> str:
    """What an import did: "imported as coherence@5 (hash): a new version; its content differs from ... in steps"."""
    label = f"{result.prompt.label} ({result.prompt.id[:12]})"
    if not result.created:
        other = (
            ""
            if imported.label == result.prompt.label
            else f"; the file calls it {imported.label} (unverified metadata)"
        )
        return f"already in the library as {label}{other}"
    if not before:
        return f"imported as {label}: a new prompt"
    latest = before[-1]
    changed = content_differences(latest.dimension, result.prompt.dimension)
    return (
        f"imported as {label}: a new version; its content differs from {latest.label} in {', '.join(changed)}"
    )


def split_label(name_or_id: str, version: int | None = None) -> tuple[str, int | None]:
    """'coherence@3' -> ('coherence', 3); a bare name keeps the version given (or None)."""
    if "@" in name_or_id:
        name, _, ver = name_or_id.rpartition("@")
        if not ver.isdigit():
            raise InputError(f"{name_or_id!r}: the version after @ must be a number, e.g. {name}@1")
        return name, int(ver)
    return name_or_id, version


class PromptsMixin(LibraryBase):
    """Drafts and frozen prompts."""

    # --- drafts -------------------------------------------------------------------------------------
    def save_draft(self, dimension: Dimension, draft_id: int | None = None) -> int:
        """Create a draft, or overwrite draft `draft_id`; returns its id."""
        row = {
            "name": dimension.name,
            "dimension": dumps(dimension.to_dict()),
            "steps_model": dimension.steps_model,
            "updated_at": now(),
        }
        with self._write() as db:
            if draft_id is None:
                return insert_row(db, "drafts", {**row, "created_at": row["updated_at"]})
            if not db.execute("SELECT 1 FROM drafts WHERE id = ?", [draft_id]).fetchone():
                raise NotFoundError(f"no draft {draft_id}")
            update_row(db, "drafts", ("id", draft_id), row)
            return int(draft_id)

    def get_draft(self, draft_id: int) -> Dimension:
        """The draft's dimension."""
        row = self._one("SELECT dimension FROM drafts WHERE id = ?", [draft_id])
        if row is None:
            raise NotFoundError(f"no draft {draft_id}")
        return Dimension.from_dict(loads(row["dimension"]))

    def list_drafts(self) -> list[dict[str, Any]]:
        """Every draft: id, name, updated_at (newest first)."""
        return self._rows("SELECT id, name, updated_at FROM drafts ORDER BY updated_at DESC, id DESC")

    def set_steps(self, draft_id: int, steps: list[str], model: str) -> None:
        """Store evaluation steps on a draft with the model version that wrote them (or HAND_WRITTEN)."""
        dim = self.get_draft(draft_id)
        clean = tuple(s.strip() for s in steps if s and s.strip())
        self.save_draft(replace(dim, steps=clean, steps_model=model), draft_id)

    # --- freezing -----------------------------------------------------------------------------------
    def freeze(self, dimension_or_draft_id: Dimension | int, name: str | None = None) -> FreezeResult:
        """Freeze a dimension (or draft) into an immutable version; identical content returns the existing one.

        Raises InputError listing every failed check. `name` defaults to the slug of the dimension name.
        """
        dim = dimension_or_draft_id
        if not isinstance(dim, Dimension):
            dim = self.get_draft(int(dim))
        findings = check_dimension(dim)
        failed = errors(findings)
        if failed:
            raise InputError(
                "cannot freeze: " + "; ".join(f"{c.field}: {c.message}" for c in failed),
                field=failed[0].field,
            )
        warnings = [f"{c.field}: {c.message}" for c in findings if c.level == "warning"]
        check_dimension_name(dim.name)
        label = check_name(name or slug(dim.name))
        known = [r["name"] for r in self._rows("SELECT DISTINCT name FROM prompts")]
        twin = look_alike(label, known)
        if twin is not None:
            raise InputError(
                f"the name {label!r} looks like the library's {twin!r} but is spelled with other "
                f"characters; freeze under {twin!r} or choose a name that does not look like it",
                field="name",
            )
        # Store the full template, so a later change to the default template cannot alter this version.
        # No server URL: where a run sends its requests (and the key) is chosen by the user at run time.
        dim = replace(dim, template=template_of(dim), judge=replace(dim.judge, base_url=None))
        prompt_id = content_hash(dim)
        with self._write() as db:
            existing = db.execute("SELECT id FROM prompts WHERE id = ?", [prompt_id]).fetchone()
            if existing:
                return FreezeResult(self.get_prompt(prompt_id), False, warnings)
            version = db.execute(
                "SELECT COALESCE(MAX(version), 0) + 1 FROM prompts WHERE name = ?", [label]
            ).fetchone()[0]
            insert_row(
                db,
                "prompts",
                {
                    "id": prompt_id,
                    "name": label,
                    "version": version,
                    "dimension": dumps(dim.to_dict()),
                    "steps_model": dim.steps_model,
                    "judge": dim.judge.judge_id,
                    "created_at": now(),
                },
            )
        return FreezeResult(self.get_prompt(prompt_id), True, warnings)

    def import_checked(self, loaded: LoadedExport) -> FreezeResult:
        """Freeze a checked export under its (unverified) name; the note says whether its content is new."""
        prompt = loaded.prompt
        before = self.prompt_versions(prompt.name)
        result = self.freeze(prompt.dimension, name=prompt.name)
        note = import_note(result, before, prompt)
        # The pre-freeze check's warnings matter for new content only; a known version was checked before.
        checks = result.warnings if result.created else []
        return replace(result, warnings=[*loaded.warnings, *checks], note=note, agreement=loaded.agreement)

    # --- frozen prompts -----------------------------------------------------------------------------
    def _prompt_row(self, name_or_id: str, version: int | None) -> dict[str, Any] | None:
        name, version = split_label(name_or_id, version)
        if version is not None:
            return self._one("SELECT * FROM prompts WHERE name = ? AND version = ?", [name, version])
        row = self._one("SELECT * FROM prompts WHERE id = ?", [name])
        if row is None:
            row = self._one("SELECT * FROM prompts WHERE name = ? ORDER BY version DESC LIMIT 1", [name])
        if row is None and len(name) >= 6 and re.fullmatch(r"[0-9a-fA-F]+", name):
            rows = self._rows("SELECT * FROM prompts WHERE id LIKE ? LIMIT 2", [name.lower() + "%"])
            if len(rows) > 1:
                raise NotFoundError(
                    f"hash prefix {name!r} matches several prompts "
                    f"({', '.join(r['name'] + '@' + str(r['version']) for r in rows)}, ...); "
                    "give more characters of the hash"
                )
            row = rows[0] if rows else None
        return row

    def get_prompt(self, name_or_id: str, version: int | None = None) -> FrozenPrompt:
        """A frozen prompt by id (or unique id prefix), name (latest version), name@version or name+version."""
        row = self._prompt_row(str(name_or_id), version)
        if row is None:
            known = ", ".join(sorted({r["name"] for r in self._rows("SELECT name FROM prompts")})) or "none"
            raise NotFoundError(
                f"no frozen prompt {name_or_id!r}"
                + (f" version {version}" if version else "")
                + f"; known prompts: {known}"
            )
        return _frozen(row)

    def list_prompts(self, latest_only: bool = False, probes: bool = False) -> list[dict[str, Any]]:
        """One dict per frozen version (or per name with latest_only), sorted by name then version; the variants a
        rubric-form probe froze (NAME.probe-FORM) only with `probes`: they are the probe's, not the user's prompts."""
        from geval_core.prompts.rubric_forms import is_probe_name

        rows = self._rows(
            "SELECT p.*, (SELECT COUNT(*) FROM prompts q WHERE q.name = p.name) AS versions "
            "FROM prompts p ORDER BY name, version"
        )
        if not probes:
            rows = [r for r in rows if not is_probe_name(r["name"])]
        if latest_only:
            # Versions of a name are numbered 1..n without gaps (rows are never deleted).
            rows = [r for r in rows if r["version"] == r["versions"]]
        return [_summary(r) for r in rows]

    def prompt_versions(self, name: str) -> list[FrozenPrompt]:
        """Every frozen version of one name, oldest first."""
        return [
            _frozen(r) for r in self._rows("SELECT * FROM prompts WHERE name = ? ORDER BY version", [name])
        ]


def _frozen(row: dict[str, Any]) -> FrozenPrompt:
    data = loads(row["dimension"])
    # Versions frozen before URLs were left out may hold the sidebar's server here: a run must never use it.
    (data.get("judge") or {}).pop("base_url", None)
    dim = Dimension.from_dict(data)
    if content_hash(dim) != row["id"]:
        raise IntegrityError(
            f"stored prompt {row['name']}@{row['version']} does not match its hash "
            f"{row['id'][:12]}; the library file was altered outside the workbench"
        )
    return FrozenPrompt(row["id"], row["name"], row["version"], dim, row["created_at"])


def _summary(row: dict[str, Any]) -> dict[str, Any]:
    dim = loads(row["dimension"])
    return {
        "id": row["id"],
        "name": row["name"],
        "version": row["version"],
        "label": f"{row['name']}@{row['version']}",
        "dimension": dim["name"],
        "definition": dim["definition"],
        "scale": f"{dim['scale']['min']}-{dim['scale']['max']}",
        "inputs": dim["inputs"],
        "judge": row["judge"],
        "mode": dim["judge"]["mode"],
        "steps_model": row["steps_model"],
        "created_at": row["created_at"],
        "versions": row["versions"],
    }
