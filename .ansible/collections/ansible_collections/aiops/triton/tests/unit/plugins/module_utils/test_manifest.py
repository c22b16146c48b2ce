import pytest

from ansible_collections.aiops.triton.plugins.module_utils import manifest as m


def test_build_and_roundtrip(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "model.onnx").write_bytes(b"abc")
    (tmp_path / "sub" / "x.json").write_text("{}")
    (tmp_path / m.MANIFEST_NAME).write_text("ignored")
    man = m.build_manifest("anomaly_detector", "2", str(tmp_path))
    assert [f["path"] for f in man["files"]] == ["model.onnx", "sub/x.json"]
    assert man["files"][0]["sha256"] == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    data = m.dump_manifest(man)
    assert m.load_manifest(data) == man
    assert m.dump_manifest(m.load_manifest(data)) == data
    assert len(m.manifest_digest(data)) == 64


@pytest.mark.parametrize("files,message", [
    ([], "lists no files"),
    ([{"path": "../etc/passwd", "size": 1, "sha256": "0" * 64}], "not a safe relative path"),
    ([{"path": "a", "size": -1, "sha256": "0" * 64}], "size must be"),
    ([{"path": "a", "size": 1, "sha256": "zz"}], "sha256 must be"),
])
def test_rejects_bad_manifests(files, message):
    data = m.dump_manifest({"schema": 1, "model": "x", "version": 1, "files": files})
    with pytest.raises(m.ManifestError, match=message):
        m.load_manifest(data)


def test_rejects_non_json():
    with pytest.raises(m.ManifestError, match="not valid JSON"):
        m.load_manifest(b"{nope")
