"""The production snippet's import: `from geval_core.export import load_prompt, score_item` (and
`score_items` for many rows at once).

Files and scoring live in their layers (files.prompt_files, run.one_item); this module keeps the documented
names where the snippet and its users find them.
"""

from .files import prompt_files
from .files.prompt_files import *  # noqa: F403  (its __all__: the file functions the snippet's users call)
from .run.many_items import score_items
from .run.one_item import score_item

__all__ = ["score_item", "score_items"]
__all__ += prompt_files.__all__
