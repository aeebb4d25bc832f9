"""Uploaded files: where they are saved (next to the database) and the dataset name they suggest."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path


def upload_dir(db: Path) -> Path:
    """``data/uploads`` next to the database."""
    return Path(db).parent / "uploads"


def save_upload(db: Path, filename: str, content: bytes) -> Path:
    """Save an uploaded file under ``uploads/<content hash>/<name>`` and return its path.

    The name keeps only its last component and safe characters; the hash
    folder means two different files of the same name never overwrite each
    other, and saving the same content again is a no-op.
    """
    name = Path(str(filename).replace("\\", "/")).name
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", name).lstrip(".") or "upload.csv"
    digest = hashlib.sha256(content).hexdigest()[:16]
    path = upload_dir(db) / digest / name
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".part")
        tmp.write_bytes(content)
        tmp.replace(path)
    return path


def dataset_name_from(filename: str) -> str:
    """A default dataset name for a file: its stem, lower case, safe characters only."""
    stem = Path(str(filename)).stem
    return re.sub(r"[^a-z0-9_-]+", "_", stem.lower()).strip("_") or "dataset"
