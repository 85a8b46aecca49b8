"""Fetch a dataset file by file from a local mirror or a base URL, checked against a manifest.

The manifest is in ``sha256sum`` format ("<hex>  <relative path>" per line). Every file is written
to a temporary name beside its target, hashed, and renamed into place only when the hash matches,
so an interrupted or failed fetch never leaves a partial or unverified file under its real name.
A file already present with the right hash is kept, so re-running after a failure resumes. The
copy of the manifest (``MANIFEST.sha256`` in the output directory) is written last: it is the
marker that the whole copy is complete and verified.

Every download of the project (Multi30K files, COCO archives, fastText vectors, MUSE
dictionaries) goes through ``download``: pooch's retries and sha256 check, with a downloader
that keeps what arrived in ``<name>.part`` and continues it with an HTTP Range request, a
timeout per read and a tqdm progress bar.
"""

from __future__ import annotations

import re
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from mlmm.errors import InputError
from mlmm.fingerprint import stale
from mlmm.io import (
    atomic_path,
    copy_file,
    discard,
    move_file,
    open_partial,
    read_json,
    read_lines,
    scratch,
    sha256_file,
    write_json,
    write_text,
)
from mlmm.logs import progress as progress_bar

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
        copy_file(source, tmp)
        return str(source)

    return fetch_one


# Client errors that a retry cannot fix (a missing file, no permission): stop at once.
_FINAL_HTTP = {400, 401, 403, 404, 405, 410}


class _ResumingDownloader:
    """A pooch downloader: streams ``url`` into ``<target>.part`` (appending with an HTTP Range
    request when an earlier attempt left one) and hands the complete file to pooch, which
    checks its sha256 and retries on network errors. file:// URLs are copied."""

    def __init__(self, target: Path, timeout: float, progress: bool):
        self.part = target.with_name(target.name + ".part")
        self.origin = target.with_name(target.name + ".part.json")  # the part's URL, validator
        self.timeout, self.progress = timeout, progress

    def _resumable_bytes(self, url: str) -> tuple[int, dict]:
        """Bytes of an earlier attempt to continue, and the headers asking for the rest: none
        when the part came from another URL (one line says so). ``If-Range`` with the part's
        ETag or Last-Modified makes a server whose file changed send all of it again."""
        if not self.part.is_file():
            return 0, {}
        recorded = (
            read_json(self.origin) if self.origin.is_file() else {}
        )
        if stale(self.part, {"url": recorded.get("url")}, {"url": url}):
            discard(self.part)
            return 0, {}
        done = self.part.stat().st_size
        headers = {"Range": f"bytes={done}-"} if done else {}
        if done and recorded.get("validator"):
            headers["If-Range"] = recorded["validator"]
        return done, headers

    def __call__(self, url: str, output_file: str, pooch_obj, check_only: bool = False):
        import requests

        if urllib.parse.urlsplit(url).scheme == "file":
            source = Path(urllib.request.url2pathname(urllib.parse.urlsplit(url).path))
            if not source.is_file():
                raise InputError(url, "a reachable URL of a file", "no such file")
            with scratch(output_file):
                copy_file(source, output_file)
            return
        done, headers = self._resumable_bytes(url)
        with requests.get(url, stream=True, timeout=self.timeout, headers=headers) as response:
            if response.status_code in _FINAL_HTTP:
                status = f"HTTP {response.status_code} {response.reason}"
                raise InputError(url, "a reachable URL of a file", status)
            if response.status_code != 416:  # 416: the part already holds every byte
                response.raise_for_status()
                if response.status_code != 206:  # the server ignored the range: start over
                    done = 0
                    validator = response.headers.get("ETag") or response.headers.get(
                        "Last-Modified"
                    )
                    write_json(self.origin, {"url": url, "validator": validator})
                size = int(response.headers.get("Content-Length", 0)) or None
                total = size + done if size else None
                with (
                    open_partial(self.part, append=bool(done)) as out,
                    progress_bar(total=total, initial=done, unit="B", unit_scale=True,
                                 desc=Path(url).name, disable=not self.progress) as bar,
                ):  # fmt: skip
                    for chunk in response.iter_content(chunk_size=1 << 20):
                        out.write(chunk)
                        bar.update(len(chunk))
                if total is not None and self.part.stat().st_size != total:
                    raise requests.exceptions.ChunkedEncodingError(
                        f"connection closed after {self.part.stat().st_size} of {total} bytes"
                    )
        with scratch(output_file):
            move_file(self.part, output_file)
        discard(self.origin)


def download(
    url: str,
    target: str | Path,
    sha256: str | None = None,
    retries: int = 4,
    timeout: float = 60.0,
    progress: bool = True,
) -> Path:
    """``url`` to ``target``: retried (pooch), resumed after a broken connection, renamed into
    place only when complete and, with ``sha256``, matching it. A ``target`` already there is
    kept only when it has that hash (an atomic writer's empty temporary file is replaced)."""
    import pooch
    import requests

    target = Path(target)
    if target.is_file():
        if sha256 is not None and sha256_file(target) == sha256:
            return target
        discard(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    known = f"sha256:{sha256}" if sha256 else None
    logger = pooch.get_logger()
    level = logger.level
    logger.setLevel("WARNING")  # the progress bar says what pooch would log
    try:
        pooch.create(
            path=target.parent,
            base_url="",
            registry={target.name: known},
            urls={target.name: url},
            retry_if_failed=retries,
        ).fetch(target.name, downloader=_ResumingDownloader(target, timeout, progress))
    except ValueError as exc:  # pooch's hash mismatch after the last retry
        found = re.search(r"but got (\w+)", str(exc))
        raise InputError(
            url, f"sha256 {sha256}", f"sha256 {found.group(1) if found else '?'}"
        ) from None
    except requests.exceptions.RequestException as exc:
        raise InputError(
            url, "a reachable URL of a file", f"{type(exc).__name__} after {retries + 1} attempts"
        ) from None
    finally:
        logger.setLevel(level)
    return target


def fetch(
    manifest: str | Path,
    out: str | Path,
    mirror: str | Path | None = None,
    url: str | None = None,
    retries: int = 4,
    timeout: float = 60.0,
    validate: Callable[[Path], object] | None = None,
) -> dict[str, int]:
    """Copy (``mirror``) or download (``url``, through ``download``) every manifest file to
    ``out``/<path>, verified.

    ``validate(out)`` runs on the complete copy before the marker is written, so a dataset that
    is intact byte for byte but malformed (e.g. a caption count off) gets no marker either.
    Returns how many files were fetched and how many were already present and verified.
    """
    if (mirror is None) == (url is None):
        raise ValueError("give exactly one of mirror and url")
    entries = read_manifest(manifest)
    out = Path(out)
    marker = out / MARKER
    discard(marker)
    copy_one = _copy_from_mirror(Path(mirror)) if mirror is not None else None
    counts = {"fetched": 0, "present": 0}
    for rel, expected in progress_bar(sorted(entries.items()), desc="fetch", unit="file"):
        target = out / rel
        if target.is_file() and sha256_file(target) == expected:
            counts["present"] += 1
            continue
        if copy_one is None:
            download(f"{url.rstrip('/')}/{rel}", target, expected, retries, timeout, False)
        else:
            with atomic_path(target) as tmp:
                source = copy_one(rel, tmp)
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
