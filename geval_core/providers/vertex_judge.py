"""The Vertex AI judge: the Gemini adapter's code on Vertex AI (google-genai with vertexai=True).

Authentication is Google Cloud's: application default credentials (`gcloud auth application-default
login`, a service account, or the metadata server), looked up by the SDK when the first request goes
out. The project and location come from GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION; nothing is
stored. Requests go to https://{location}-aiplatform.googleapis.com/.../publishers/google/models/MODEL.
"""

from __future__ import annotations

import os
from typing import Any

from ..errors import ConfigError
from ..types import JudgeRequest, JudgeSettings
from .gemini_judge import GeminiJudge

PROJECT_VARIABLE, LOCATION_VARIABLE = "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION"
DEFAULT_LOCATION = "global"  # the SDK's own default; logprobs-capable regional endpoints need it set


def vertex_project() -> tuple[str, str]:
    """(project, location) from the environment; ConfigError naming the variable when the project is unset."""
    project = os.environ.get(PROJECT_VARIABLE, "").strip()
    if not project:
        raise ConfigError(
            f"the vertex judge needs a Google Cloud project: set {PROJECT_VARIABLE} (and "
            f"{LOCATION_VARIABLE}, default {DEFAULT_LOCATION}); credentials are application default "
            "credentials (gcloud auth application-default login)"
        )
    return project, os.environ.get(LOCATION_VARIABLE, "").strip() or DEFAULT_LOCATION


class VertexJudge(GeminiJudge):
    """generateContent on Vertex AI with application default credentials (or the ones given)."""

    provider = "vertex"

    def __init__(
        self,
        model: str,
        project: str,
        location: str,
        base_url: str | None = None,
        timeout: float = 60.0,
        credentials: Any = None,
    ) -> None:
        self.project, self.location, self._credentials = project, location, credentials
        super().__init__(model, "", base_url, timeout)

    def _make_client(self, timeout: float) -> Any:
        from google import genai

        # No api_key: the SDK would prefer it (express mode) over the project's credentials.
        return genai.Client(
            vertexai=True,
            project=self.project,
            location=self.location,
            credentials=self._credentials,
            http_options=self._http_options(timeout),
        )

    def _where(self) -> str:
        where = self.base_url or f"{self.location}, project {self.project}"
        return f"Vertex AI ({where})"

    def _elsewhere(self, request: JudgeRequest) -> str:
        return f" (or another location than {self.location}: set {LOCATION_VARIABLE})"


def build(settings: JudgeSettings, api_key: str | None = None, timeout: float = 60.0) -> VertexJudge:
    """The registry's builder: no key; application default credentials, looked up at the first request."""
    return VertexJudge(settings.model, *vertex_project(), base_url=settings.base_url, timeout=timeout)
