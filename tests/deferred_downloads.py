"""Read what an AppTest page's deferred download button (data given as a callable) serves.

Such a button carries no file: Streamlit runs the callable when the user clicks. The reader below
does what a click does, on the media file manager of the page's last script run.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest


def deferred_reader(monkeypatch: pytest.MonkeyPatch) -> Callable[..., str]:
    """Record every AppTest run's media file manager; returns read(at, label_start) -> the file's text."""
    from streamlit.runtime.media_file_manager import MediaFileManager
    from streamlit.testing.v1 import app_test

    managers: list[MediaFileManager] = []

    class Recording(MediaFileManager):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            managers.append(self)

    monkeypatch.setattr(app_test, "MediaFileManager", Recording)

    def read(at, label_start: str = "") -> str:
        [button] = [b for b in at.get("download_button") if b.proto.label.startswith(label_start)]
        assert button.proto.deferred_file_id, "the button carries its file: it was written on the rerun"
        url = managers[-1].execute_deferred(button.proto.deferred_file_id)  # what the click does
        name = url.rsplit("/", 1)[-1]
        return managers[-1]._storage.get_file(name).content.decode("utf-8")  # the test storage keeps it in memory

    return read
