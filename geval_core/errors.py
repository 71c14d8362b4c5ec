"""The workbench's one error hierarchy: every message says what is wrong, where, and how to fix it.

    Exception
     └── GEvalError                  every error the workbench raises on purpose
          ├── ConfigError            a setting is missing or out of bounds      (also a ValueError)
          │    └── MissingKeyError   a hosted judge needs a key that is not set
          ├── InputError             bad input data: file, line, field          (also a ValueError)
          ├── NotFoundError          no such prompt, dataset or run
          ├── RunBusyError           another process is scoring this run right now
          ├── LibraryLockedError     another process has held the library's write lock too long
          ├── IntegrityError         content does not match its hash; a frozen row would change
          └── JudgeError             a judge call failed for good
               ├── LogprobsUnavailableError   log-probabilities asked for, none given
               ├── ContextLengthError         the item's prompt does not fit in the judge's context
               ├── RetryLaterError            asked to wait longer than the run may pause
               └── RetryableJudgeError        worth retrying: 429, 5xx, timeout, connection
                    ├── UnreachableError      the server could not be reached at all
                    └── InvalidReplyError     impossible log-probabilities (NaN, > 0, mass > 1)

Validation errors stay `ValueError` subclasses so code that guarded a constructor with
`except ValueError` keeps working. Judge errors carry `attempts`: how many calls the runner made
before giving up (1 when it did not retry), and `status`: the HTTP status when the judge answered one.
"""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "ContextLengthError",
    "GEvalError",
    "InputError",
    "IntegrityError",
    "InvalidReplyError",
    "JudgeError",
    "LibraryLockedError",
    "LogprobsUnavailableError",
    "MissingKeyError",
    "NotFoundError",
    "RetryLaterError",
    "RetryableJudgeError",
    "RunBusyError",
    "UnreachableError",
]


class GEvalError(Exception):
    """Base of every error the workbench raises on purpose."""


class ConfigError(GEvalError, ValueError):
    """A setting is missing or out of bounds."""


class MissingKeyError(ConfigError):
    """A hosted judge needs an API key that is not set; the message names the variable."""


class InputError(GEvalError, ValueError):
    """Bad input data; the message names the file, the line and the field."""

    def __init__(
        self, message: str, *, file: str | None = None, line: int | None = None, field: str | None = None
    ) -> None:
        where = ", ".join(
            p for p in (file and f"{file}", line and f"line {line}", field and f"field {field!r}") if p
        )
        super().__init__(f"{where}: {message}" if where else message)
        self.file, self.line, self.field = file, line, field


class NotFoundError(GEvalError):
    """A prompt, dataset or run that was asked for does not exist."""


class RunBusyError(GEvalError):
    """A run has one runner at a time; the message names the process that holds it and since when."""


class LibraryLockedError(GEvalError):
    """SQLite's lock on the library stayed taken past the busy timeout; the message says who may hold it."""


class IntegrityError(GEvalError):
    """Stored or exported content does not match its hash, or a frozen row would change."""


class JudgeError(GEvalError):
    """A judge call failed for good (bad request, refused option, unusable reply)."""

    def __init__(self, message: str, *, attempts: int = 1, status: int | None = None) -> None:
        super().__init__(message)
        self.attempts = attempts  # calls made for this request before giving up
        self.status = status  # the HTTP status the judge answered, when it answered one


class RetryLaterError(JudgeError):
    """The judge asked to wait longer than the run may pause (Retry-After above the cap): stop, resume later."""


class LogprobsUnavailableError(JudgeError):
    """Log-probabilities were asked for but the judge returned none."""


class ContextLengthError(JudgeError):
    """An item's prompt (with the reply budget) is longer than the judge reads: never sent, never scored."""


class RetryableJudgeError(JudgeError):
    """A judge call failed in a way worth retrying (429, 5xx, timeout, connection)."""

    def __init__(
        self, message: str, *, retry_after: float | None = None, attempts: int = 1, status: int | None = None
    ) -> None:
        super().__init__(message, attempts=attempts, status=status)
        self.retry_after = retry_after


class UnreachableError(RetryableJudgeError):
    """The judge's server could not be reached at all (connection refused, unknown host)."""


class InvalidReplyError(RetryableJudgeError):
    """The judge answered with log-probabilities that cannot be (NaN, infinite, above 0, a mass above 1).

    Retryable: a glitch in one answer should cost a retry, not the item; if it persists the item
    carries this error (what the judge sent), never a score.
    """
