"""tools/sanity.sh's copy of the collection: a path that does not copy stops the run with its name
(before, `2>/dev/null || true` let it escape sanity unseen); a tracked file deleted in the working tree
is not shipped and does not stop it."""

import os
import shutil
import subprocess

SANITY = os.path.join(os.path.dirname(__file__), "..", "..", "..", "tools", "sanity.sh")


def repo(tmp_path):
    root = tmp_path / "repo"
    (root / "tools").mkdir(parents=True)
    shutil.copy(SANITY, str(root / "tools" / "sanity.sh"))
    (root / "plugins").mkdir()
    (root / "plugins" / "a.py").write_text("A = 1\n")
    (root / "plugins" / "gone.py").write_text("B = 2\n")
    (root / ".gitignore").write_text("build/\n")
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git[:3] + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-qm", "x"], check=True)
    (root / "plugins" / "new.py").write_text("C = 3\n")  # untracked, not ignored: shipped
    os.unlink(str(root / "plugins" / "gone.py"))  # tracked, deleted: not shipped
    return root


def copy(root):
    return subprocess.run(["bash", str(root / "tools" / "sanity.sh"), "--copy-only"], capture_output=True, text=True, check=False)


def test_the_copy_holds_what_git_would_ship(tmp_path):
    root = repo(tmp_path)
    proc = copy(root)
    assert proc.returncode == 0, proc.stderr
    dest = root / "build" / "sanity" / "ansible_collections" / "aiops" / "triton"
    assert sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file()) == [
        ".gitignore", "plugins/a.py", "plugins/new.py", "tools/sanity.sh"]


def test_a_path_that_does_not_copy_stops_the_run(tmp_path):
    # a tracked file that became a directory (as a nested repository or a botched move leaves it): cp
    # refuses it; the old copy swallowed the error and went on to test the rest
    root = repo(tmp_path)
    os.unlink(str(root / "plugins" / "a.py"))
    (root / "plugins" / "a.py").mkdir()
    proc = copy(root)
    assert proc.returncode != 0
    assert "plugins/a.py" in proc.stderr and "did not copy" in proc.stderr
