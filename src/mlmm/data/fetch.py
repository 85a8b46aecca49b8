"""Fetch a dataset file by file from a local mirror or a base URL, checked against a manifest.

The manifest is in ``sha256sum`` format ("<hex>  <relative path>" per line). Every file is written
to a temporary name beside its target, hashed, and renamed into place only when the hash matches,
so an interrupted or failed fetch never leaves a partial or unverified file under its real name.
A file already present with the right hash is kept, so re-running after a failure resumes. The
copy of the manifest (``MANIFEST.sha256`` in the output directory) is written last: it is the
marker that the whole copy is complete and verified.
"""

from __future__ import annotations

import http.client
import re
import shutil
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from tqdm import tqdm

from mlmm.errors import InputError
from mlmm.io import atomic_path, read_lines, sha256_file, write_text

MARKER = "MANIFEST.sha256"
_LINE = re.compile(r"^([0-9a-f]{64}) [ *](.+)$")
# HTTP statuses worth retrying: the server or a proxy is busy, not the file missing.
_TRANSIENT_HTTP = {408, 425, 429, 500, 502, 503, 504}


def read_manifest(path: str | Path) -> dict[str, str]:
    """Relative path -> sha256 hex digest; paths must stay inside the dataset directory."""
    entries: dict[str, str] = {}
    for number, line in enumerate(read_lines(path), start=1):
        match = _LINE.match(line)
        if match is None:
            raise InputError(path, "'<sha256 hex>  <relative path>'", repr(line[:80]), line=number)
        digest, rel = match.groups()
        parts = PurePosixPath(rel).parts
        if PurePosixPath(rel).is_absolute() or ".." in parts or rel in entries:
            raise InputError(path, "a unique relative path inside the dataset", rel, line=number)
        entries[rel] = digest
    if not entries:
        raise InputError(path, "at least one '<sha256>  <path>' line", "an empty manifest")
    return entries


def manifest_text(entries: dict[str, str]) -> str:
    return "".join(f"{digest}  {rel}\n" for rel, digest in sorted(entries.items()))


def make_manifest(root: str | Path, relpaths: list[str]) -> str:
    """The manifest text for files under ``root`` (used to write the committed manifest)."""
    missing = [rel for rel in relpaths if not (Path(root) / rel).is_file()]
    if missing:
        raise InputError(Path(root) / missing[0], "an existing file", "no such file")
    return manifest_text({rel: sha256_file(Path(root) / rel) for rel in relpaths})


def _copy_from_mirror(mirror: Path) -> Callable[[str, Path], str]:
    def fetch_one(rel: str, tmp: Path) -> str:
        source = mirror / rel
        if not source.is_file():
            raise InputError(source, "an existing file (listed in the manifest)", "no such file")
        shutil.copyfile(source, tmp)
        return str(source)

    return fetch_one


def _download(base_url: str, retries: int, backoff: float, timeout: float):
    def fetch_one(rel: str, tmp: Path) -> str:
        url = f"{base_url.rstrip('/')}/{rel}"
        for attempt in range(retries + 1):
            try:
                with (
                    urllib.request.urlopen(url, timeout=timeout) as response,
                    open(tmp, "wb") as out,
                ):
                    shutil.copyfileobj(response, out)
                    # http.client does not notice a connection closed early: check the length
                    length = response.headers.get("Content-Length")
                    if length is not None and out.tell() != int(length):
                        raise http.client.IncompleteRead(b"", int(length) - out.tell())
                return url
            except urllib.error.HTTPError as exc:
                if exc.code not in _TRANSIENT_HTTP or attempt == retries:
                    raise InputError(
                        url, "a downloadable file", f"HTTP {exc.code} {exc.reason}"
                    ) from None
            except (urllib.error.URLError, http.client.HTTPException, OSError) as exc:
                if attempt == retries:
                    reason = getattr(exc, "reason", exc)
                    raise InputError(
                        url, "a downloadable file", f"{reason} after {retries + 1} attempts"
                    ) from None
            time.sleep(backoff * 2**attempt)
        raise AssertionError("unreachable")

    return fetch_one


def fetch(
    manifest: str | Path,
    out: str | Path,
    mirror: str | Path | None = None,
    url: str | None = None,
    retries: int = 4,
    backoff: float = 2.0,
    timeout: float = 60.0,
    validate: Callable[[Path], object] | None = None,
) -> dict[str, int]:
    """Copy (``mirror``) or download (``url``) every manifest file to ``out``/<path>, verified.

    ``validate(out)`` runs on the complete copy before the marker is written, so a dataset that
    is intact byte for byte but malformed (e.g. a caption count off) gets no marker either.
    Returns how many files were fetched and how many were already present and verified.
    """
    if (mirror is None) == (url is None):
        raise ValueError("give exactly one of mirror and url")
    entries = read_manifest(manifest)
    out = Path(out)
    marker = out / MARKER
    marker.unlink(missing_ok=True)
    if mirror is not None:
        fetch_one = _copy_from_mirror(Path(mirror))
    else:
        fetch_one = _download(url, retries, backoff, timeout)
    counts = {"fetched": 0, "present": 0}
    for rel, expected in tqdm(sorted(entries.items()), desc="fetch", unit="file"):
        target = out / rel
        if target.is_file() and sha256_file(target) == expected:
            counts["present"] += 1
            continue
        with atomic_path(target) as tmp:
            source = fetch_one(rel, tmp)
            found = sha256_file(tmp)
            if found != expected:
                raise InputError(
                    source, f"sha256 {expected} (manifest {manifest})", f"sha256 {found}"
                )
        counts["fetched"] += 1
    if validate is not None:
        validate(out)
    write_text(marker, manifest_text(entries))
    return counts
