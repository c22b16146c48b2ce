import json

import pytest

from ansible_collections.aiops.triton.plugins.module_utils import manifest as m


def test_build_and_roundtrip(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "model.onnx").write_bytes(b"abc")
    (tmp_path / "sub" / "x.json").write_text("{}")
    (tmp_path / m.MANIFEST_NAME).write_text("ignored")
    # bytecode a test or Triton's python backend left in the build is not part of the version
    for cache in (tmp_path / "__pycache__", tmp_path / "sub" / "__pycache__"):
        cache.mkdir()
        (cache / "model.cpython-311.pyc").write_bytes(b"\x00")
    man = m.build_manifest("anomaly_detector", "2", str(tmp_path))
    assert [f["path"] for f in man["files"]] == ["model.onnx", "sub/x.json"]
    assert man["files"][0]["sha256"] == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    data = m.dump_manifest(man)
    assert m.load_manifest(data) == man
    assert m.dump_manifest(m.load_manifest(data)) == data
    assert len(m.manifest_digest(data)) == 64


GOOD = "0123456789abcdef" * 4


def entry(path="a", size=1, sha256=GOOD):
    return {"path": path, "size": size, "sha256": sha256}


def manifest_bytes(files, **fields):
    manifest = {"schema": 1, "model": "m", "version": 2, "files": files}
    manifest.update(fields)
    return json.dumps(manifest).encode("utf-8")


# One case per malformation; each message names the entry (index and path) and what is wrong with it.
@pytest.mark.parametrize("files,message", [
    ([], "manifest lists no files"),
    (["a"], "files[0] must be an object with path, size and sha256"),
    ([entry(path=5)], "files[0]: path must be a string, not int"),
    ([entry(path=None)], "files[0]: path must be a string, not NoneType"),
    ([entry(path=["a"])], "files[0]: path must be a string, not list"),
    ([entry(path="")], "files[0] (''): path is empty"),
    ([entry(path="a\x00b")], "files[0] ('a\\x00b'): path contains a NUL byte"),
    ([entry(path="\ud800")], "files[0] ('\\ud800'): path is not valid UTF-8"),
    ([entry(path="/etc/passwd")], "files[0] ('/etc/passwd'): path is absolute"),
    ([entry(path="../etc/passwd")], "files[0] ('../etc/passwd'): path has a '.' or '..' component"),
    ([entry(path="a/../../b")], "files[0] ('a/../../b'): path has a '.' or '..' component"),
    ([entry(path=".")], "files[0] ('.'): path has a '.' or '..' component"),
    ([entry(path="./a")], "files[0] ('./a'): path has a '.' or '..' component"),
    ([entry(path="dir/")], "files[0] ('dir/'): path has an empty component (a trailing '/' or '//')"),
    ([entry(path="a//b")], "files[0] ('a//b'): path has an empty component"),
    ([entry(path="x" * 256)], "path has a component longer than 255 bytes"),
    ([entry(path="a"), entry(path="a")], "files[1] ('a'): duplicate of files[0]"),
    ([entry(path="a"), entry(path="a/b")], "files[1] ('a/b'): 'a' is a file (files[0]), so it cannot be a directory"),
    ([entry(path="a/b/c"), entry(path="a/b")], "files[0] ('a/b/c'): 'a/b' is a file (files[1]), so it cannot be a directory"),
    ([entry(path="MANIFEST.json")], "files[0] ('MANIFEST.json'): the name is reserved for the manifest itself"),
    ([entry(path=".aiops-manifest.sha256")], "files[0] ('.aiops-manifest.sha256'): the name is reserved for s3_model_sync's marker"),
    ([entry(size=-1)], "files[0] ('a'): size must be a non-negative integer, got -1"),
    ([entry(size=True)], "files[0] ('a'): size must be a non-negative integer, got True"),
    ([entry(size=1.5)], "files[0] ('a'): size must be a non-negative integer, got 1.5"),
    ([entry(size="1")], "files[0] ('a'): size must be a non-negative integer, got '1'"),
    ([entry(sha256="zz")], "files[0] ('a'): sha256 must be 64 lower-case hex characters, got 'zz'"),
    ([entry(sha256=GOOD.upper())], "files[0] ('a'): sha256 must be 64 lower-case hex characters"),
    ([entry(sha256="g" * 64)], "files[0] ('a'): sha256 must be 64 lower-case hex characters"),
    ([entry(sha256=None)], "files[0] ('a'): sha256 must be 64 lower-case hex characters, got None"),
])
def test_rejects_bad_manifests(files, message):
    with pytest.raises(m.ManifestError) as caught:
        m.load_manifest(manifest_bytes(files), model="m", version=2)
    assert message in str(caught.value)


@pytest.mark.parametrize("fields,message", [
    ({"schema": True}, "manifest schema must be 1, got True"),
    ({"schema": 2}, "manifest schema must be 1, got 2"),
    ({"model": "other"}, "manifest is for model 'other' but is published under model 'm'"),
    ({"model": None}, "manifest is for model None but is published under model 'm'"),
    ({"version": 3}, "manifest is for version 3 but is published under version 2"),
    ({"version": "2"}, "manifest is for version '2' but is published under version 2"),
    ({"version": True}, "manifest is for version True but is published under version 2"),
])
def test_manifest_fields_must_match_where_it_is_published(fields, message):
    with pytest.raises(m.ManifestError) as caught:
        m.load_manifest(manifest_bytes([entry()], **fields), model="m", version=2)
    assert message in str(caught.value)
    # Without a location to compare with (the publisher's own round trip), only the schema matters.
    if "schema" not in fields:
        assert m.load_manifest(manifest_bytes([entry()], **fields))["files"] == [entry()]


def test_accepts_nested_paths_and_marker_name_below_top_level():
    files = [entry(path="a/b"), entry(path="a/c/d"), entry(path="sub/.aiops-manifest.sha256"), entry(path="x y")]
    assert m.load_manifest(manifest_bytes(files), model="m", version=2)["files"] == files


@pytest.mark.parametrize("data,message", [
    (b"{nope", "manifest is not valid JSON"),
    (b"[" * 100000, "manifest is not valid JSON"),
    (b"\xff\xfe", "manifest is not valid JSON"),
    (b"[]", "manifest must be a JSON object, not list"),
])
def test_rejects_non_json(data, message):
    with pytest.raises(m.ManifestError, match=message):
        m.load_manifest(data)
