"""Where the tests find the project and the shared datasets (../shared beside the checkout)."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
