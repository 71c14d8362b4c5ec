"""The workbench's error hierarchy: every message says what is wrong, where, and how to fix it."""

from __future__ import annotations


class GEvalError(Exception):
    """Base of every error the workbench raises on purpose."""


class ConfigError(GEvalError):
    """A setting is missing or out of bounds."""


class MissingKeyError(ConfigError):
    """A hosted judge needs an API key that is not set; the message names the variable."""


class InputError(GEvalError):
    """Bad input data; the message names the file, the line and the field."""

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None,
                 field: str | None = None) -> None:
        where = ", ".join(p for p in (file and f"{file}", line and f"line {line}",
                                      field and f"field {field!r}") if p)
        super().__init__(f"{where}: {message}" if where else message)
        self.file, self.line, self.field = file, line, field


class NotFoundError(GEvalError):
    """A prompt, dataset or run that was asked for does not exist."""


class IntegrityError(GEvalError):
    """Stored or exported content does not match its hash, or a frozen row would change."""


class JudgeError(GEvalError):
    """A judge call failed for good (bad request, refused option, unusable reply)."""


class RetryableJudgeError(JudgeError):
    """A judge call failed in a way worth retrying (429, 5xx, timeout, connection)."""

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class LogprobsUnavailableError(JudgeError):
    """Log-probabilities were asked for but the judge returned none."""
