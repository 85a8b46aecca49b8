"""Fetching a dataset against a sha256 manifest: mirror and URL sources, resuming, atomicity."""

from __future__ import annotations

import functools
import http.server
import threading
from pathlib import Path

import pytest
from helpers.fetch import HalfThenRange

from mlmm.cli import main
from mlmm.data.fetch import MARKER, download, fetch, make_manifest, read_manifest, sha256_file
from mlmm.data.prepare import expected_files
from mlmm.errors import InputError
from mlmm.io import forcing

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
REPO = Path(__file__).resolve().parents[1]
FILES = {"data/a.txt": b"alpha\n", "data/sub/b.gz": b"\x1f\x8b not really", "c.txt": b"gamma\n"}


@pytest.fixture
def mirror(tmp_path):
    root = tmp_path / "mirror"
    for rel, content in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(content)
    manifest = tmp_path / "files.sha256"
    manifest.write_text(make_manifest(root, sorted(FILES)))
    return root, manifest


def leftovers(directory: Path) -> list[Path]:
    """Temporary files an atomic write would leave behind if it were not atomic."""
    return [p for p in directory.rglob("*") if p.name.endswith(".tmp")]


def test_fetch_from_mirror_copies_verifies_and_writes_marker(mirror, tmp_path):
    root, manifest = mirror
    out = tmp_path / "out"
    counts = fetch(manifest, out, mirror=root)
    assert counts == {"fetched": 3, "present": 0}
    for rel, content in FILES.items():
        assert (out / rel).read_bytes() == content
    assert read_manifest(out / MARKER) == read_manifest(manifest)


def test_rerun_skips_verified_files_and_replaces_changed_ones(mirror, tmp_path):
    root, manifest = mirror
    out = tmp_path / "out"
    fetch(manifest, out, mirror=root)
    (out / "c.txt").write_bytes(b"edited\n")
    with pytest.raises(InputError, match="c.txt: .*an edited file; pass --force"):
        fetch(manifest, out, mirror=root)  # an edited file is replaced only with --force
    with forcing(True):
        counts = fetch(manifest, out, mirror=root)
    assert counts == {"fetched": 1, "present": 2}
    assert (out / "c.txt").read_bytes() == FILES["c.txt"]


def test_hash_mismatch_names_file_and_both_hashes_and_leaves_nothing(mirror, tmp_path):
    root, manifest = mirror
    expected = sha256_file(root / "data/a.txt")
    (root / "data/a.txt").write_bytes(b"tampered\n")
    out = tmp_path / "out"
    with pytest.raises(InputError) as caught:
        fetch(manifest, out, mirror=root)
    message = str(caught.value)
    assert "data/a.txt" in message
    assert expected in message and sha256_file(root / "data/a.txt") in message
    assert not (out / "data/a.txt").exists()
    assert not (out / MARKER).exists()
    assert leftovers(out) == []


def test_failed_rerun_removes_the_old_marker(mirror, tmp_path):
    root, manifest = mirror
    out = tmp_path / "out"
    fetch(manifest, out, mirror=root)
    (out / "c.txt").unlink()
    (root / "c.txt").unlink()
    with pytest.raises(InputError, match="c.txt.*no such file"):
        fetch(manifest, out, mirror=root)
    assert not (out / MARKER).exists()


def test_missing_mirror_file_is_an_error(mirror, tmp_path):
    root, manifest = mirror
    (root / "data/sub/b.gz").unlink()
    with pytest.raises(InputError, match=r"data/sub/b\.gz: expected an existing file"):
        fetch(manifest, tmp_path / "out", mirror=root)


@pytest.mark.parametrize(
    "text, line",
    [
        ("0" * 64 + "  ok.txt\nnot a manifest line\n", 2),
        ("0" * 64 + "  ../outside.txt\n", 1),
        ("0" * 64 + "  /etc/passwd\n", 1),
        ("0" * 64 + "  a.txt\n" + "1" * 64 + "  a.txt\n", 2),
    ],
)
def test_bad_manifest_lines_are_named(tmp_path, text, line):
    manifest = tmp_path / "bad.sha256"
    manifest.write_text(text)
    with pytest.raises(InputError, match=f"bad.sha256, line {line}"):
        read_manifest(manifest)


def test_cli_reports_a_mismatch_in_one_line(mirror, tmp_path, capsys):
    root, manifest = mirror
    (root / "c.txt").write_bytes(b"tampered\n")
    args = ["fetch-multi30k", "--manifest", str(manifest), "--mirror", str(root)]
    status = main(args + ["--out", str(tmp_path / "out"), "--no-validate"])
    errors = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert status == 2
    assert len(errors) == 1 and errors[0].startswith("mlmm fetch-multi30k: error: ")
    assert "c.txt" in errors[0] and "sha256" in errors[0]


class _Server:
    """A local HTTP server over a directory; ``failures[path]`` sends that many errors first."""

    def __init__(self, directory: Path, failures: dict[str, int], truncate: bool = False):
        failures = dict(failures)
        self.requests: list[str] = []
        requests = self.requests

        class Handler(http.server.SimpleHTTPRequestHandler):
            def do_GET(self):
                requests.append(self.path)
                if failures.get(self.path, 0) > 0:
                    failures[self.path] -= 1
                    if truncate:
                        self.send_response(200)
                        self.send_header("Content-Length", "1000")
                        self.end_headers()
                        self.wfile.write(b"partial")
                        return
                    self.send_error(503)
                    return
                super().do_GET()

            def log_message(self, *args):
                pass

        handler = functools.partial(Handler, directory=str(directory))
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=10)


def test_fetch_from_url_with_retries(mirror, tmp_path):
    root, manifest = mirror
    out = tmp_path / "out"
    with _Server(root, {"/data/a.txt": 2}) as server:
        counts = fetch(manifest, out, url=server.url + "/", retries=3, timeout=10)
    assert counts["fetched"] == 3
    assert server.requests.count("/data/a.txt") == 3
    assert (out / "data/a.txt").read_bytes() == FILES["data/a.txt"]
    assert (out / MARKER).is_file()


def test_url_errors_after_the_last_retry_leave_no_file(mirror, tmp_path):
    root, manifest = mirror
    out = tmp_path / "out"
    failed = pytest.raises(InputError, match=r"c\.txt: expected a reachable URL.*after 3 attempts")
    with _Server(root, {"/c.txt": 10}, truncate=True) as server, failed:
        fetch(manifest, out, url=server.url, retries=2, timeout=10)
    assert server.requests.count("/c.txt") == 3
    assert not (out / "c.txt").exists() and not (out / MARKER).exists()
    assert leftovers(out) == []


def test_url_not_found_is_not_retried(mirror, tmp_path):
    root, manifest = mirror
    (root / "c.txt").unlink()
    failed = pytest.raises(
        InputError, match=r"c\.txt: expected a reachable URL of a file, found HTTP 404"
    )
    with _Server(root, {}) as server, failed:
        fetch(manifest, tmp_path / "out", url=server.url, retries=3)
    assert server.requests.count("/c.txt") == 1


def test_file_urls_work(mirror, tmp_path):
    root, manifest = mirror
    fetch(manifest, tmp_path / "out", url=root.as_uri())
    assert (tmp_path / "out/c.txt").read_bytes() == FILES["c.txt"]


def test_committed_manifest_lists_the_pipeline_files():
    entries = read_manifest(REPO / "workflow/manifests/multi30k.sha256")
    assert sorted(entries) == expected_files()
    assert len(entries) == 90


@pytest.mark.shared_data
def test_committed_manifest_matches_the_real_mirror(tmp_path):
    mirror = SHARED / "data/multi30k"
    if not mirror.is_dir():
        pytest.skip("no real Multi30K mirror at ../shared/data/multi30k")
    entries = read_manifest(REPO / "workflow/manifests/multi30k.sha256")
    for rel, digest in entries.items():
        assert sha256_file(mirror / rel) == digest, rel


def test_download_resumes_a_broken_transfer_and_checks_sha256(tmp_path):
    import hashlib

    HalfThenRange.seen = []  # another test's requests (test_fingerprints serves it too)
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), HalfThenRange)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}/vectors.vec"
    body = HalfThenRange.BODY
    try:
        digest = hashlib.sha256(body).hexdigest()
        target = download(url, tmp_path / "d/vectors.vec", digest, retries=1, progress=False)
        assert target.read_bytes() == body
        first, resumed = HalfThenRange.seen
        assert first is None and 0 < int(resumed[6:-1]) <= len(body) // 2  # the rest only
        assert download(url, target, digest) == target and len(HalfThenRange.seen) == 2  # kept
        with pytest.raises(InputError, match=r"vectors\.vec: expected sha256 0{64}, found sha256"):
            download(url, tmp_path / "e/vectors.vec", "0" * 64, retries=1, progress=False)
        assert not (tmp_path / "e/vectors.vec").exists()
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_mlmm_download_fetches_one_url_and_checks_its_hash(tmp_path):
    """The download half of the split heavy rules (fetch_coco_images, fetch_rotated_vectors)."""
    import hashlib

    from mlmm.cli import main

    source = tmp_path / "train2014.zip"
    source.write_bytes(b"archive bytes")
    digest = hashlib.sha256(b"archive bytes").hexdigest()
    out = tmp_path / "downloads" / "train2014.zip"
    assert main(["download", source.as_uri(), "--out", str(out), "--sha256", digest]) == 0
    assert out.read_bytes() == b"archive bytes"
    wrong = tmp_path / "wrong.zip"
    assert main(["download", source.as_uri(), "--out", str(wrong), "--sha256", "0" * 64]) != 0
    assert not wrong.exists()
