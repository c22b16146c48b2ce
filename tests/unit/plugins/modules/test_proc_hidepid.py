"""proc_hidepid against a written host: its group database, users, fstab and /proc/self/mountinfo (mountinfo lines in
the kernel's documented format, proc(5)); groupadd, usermod and mount are recorded and applied to that host, never
run here. Make, no change, drift of each part, check mode, diff, refusals."""

import json
import os
import stat
from types import SimpleNamespace

import pytest
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.testing import patch_module_args

from ansible_collections.aiops.triton.plugins.modules import proc_hidepid

ROOT_LINE = "22 1 0:21 / / rw,relatime shared:1 - overlay overlay rw,lowerdir=/l\n"
SYS_LINE = "25 22 0:23 / /sys rw,nosuid shared:8 - sysfs sysfs rw\n"


def proc_line(options="rw"):
    return "24 22 0:22 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc %s\n" % options


class Host(object):
    """Groups {name: (gid, [members])}, users, the mountinfo file and every command the module ran."""

    def __init__(self, tmp_path, groups=None, users=("prometheus", "polkitd"), proc="rw"):
        self.groups = dict(groups or {})
        self.users = set(users)
        self.commands = []
        self.mountinfo = tmp_path / "mountinfo"
        self.mountinfo.write_text(ROOT_LINE + proc_line(proc) + SYS_LINE)
        self.fstab = tmp_path / "fstab"
        self.remount_error = None

    def getgrnam(self, name):
        if name not in self.groups:
            raise KeyError(name)
        gid, members = self.groups[name]
        return SimpleNamespace(gr_gid=gid, gr_mem=list(members))

    def getpwnam(self, name):
        if name not in self.users:
            raise KeyError(name)
        return SimpleNamespace(pw_name=name)

    def run_command(self, args, check_rc=False, **_kwargs):
        self.commands.append(args)
        if args[0] == "groupadd":
            self.groups[args[-1]] = (998, [])
        elif args[0] == "usermod":
            gid, members = self.groups[args[-2]]
            self.groups[args[-2]] = (gid, members + [args[-1]])
        elif args[0] == "mount":
            if self.remount_error:
                return 32, "", self.remount_error
            options = args[2].split(",", 1)[1]
            self.mountinfo.write_text(ROOT_LINE + proc_line("rw," + options) + SYS_LINE)
        return 0, "", ""


@pytest.fixture(name="host")
def host_fixture(tmp_path, monkeypatch):
    host = Host(tmp_path)
    monkeypatch.setattr(proc_hidepid, "grp", SimpleNamespace(getgrnam=host.getgrnam))
    monkeypatch.setattr(proc_hidepid, "pwd", SimpleNamespace(getpwnam=host.getpwnam))
    monkeypatch.setattr(proc_hidepid, "MOUNTINFO", str(host.mountinfo))
    # a bound method as the class attribute: module.run_command(args) calls host.run_command(args)
    monkeypatch.setattr(AnsibleModule, "run_command", host.run_command)
    return host


def run(capsys, host, **args):
    args = dict({"group": "proc-view", "fstab": str(host.fstab)}, **args)
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            proc_hidepid.main()
    return json.loads(capsys.readouterr().out)


def test_a_new_host_is_set_up_in_one_call_then_nothing_changes(capsys, host):
    host.fstab.write_text("UUID=1 / ext4 defaults 0 1\n")
    first = run(capsys, host, members=["prometheus"])
    assert first["changed"] is True and first["gid"] == 998
    assert first["changes"] == ["group proc-view made", "prometheus added to proc-view", "%s /proc line" % host.fstab,
                                "/proc remounted"]
    assert host.commands == [["groupadd", "--system", "proc-view"], ["usermod", "--append", "--groups", "proc-view", "prometheus"],
                             ["mount", "-o", "remount,hidepid=invisible,gid=998", "/proc"]]
    assert host.fstab.read_text() == "UUID=1 / ext4 defaults 0 1\nproc /proc proc nosuid,nodev,noexec,hidepid=invisible,gid=998 0 0\n"
    assert stat.S_IMODE(os.stat(host.fstab).st_mode) == 0o644
    host.commands.clear()
    second = run(capsys, host, members=["prometheus"])
    assert second["changed"] is False and second["changes"] == [] and host.commands == []
    assert second["fstab_line"] == "proc /proc proc nosuid,nodev,noexec,hidepid=invisible,gid=998 0 0"


def test_an_old_proc_line_is_replaced_the_last_one_as_lineinfile_did(capsys, host):
    host.groups["proc-view"] = (998, [])
    host.fstab.write_text("proc /proc proc defaults 0 0\n/dev/sda1 / ext4 defaults 0 1\nnone  /proc  proc  rw 0 0\n")
    result = run(capsys, host, _ansible_diff=True)
    assert result["changes"] == ["%s /proc line" % host.fstab, "/proc remounted"]
    assert host.fstab.read_text() == ("proc /proc proc defaults 0 0\n/dev/sda1 / ext4 defaults 0 1\n"
                                      "proc /proc proc nosuid,nodev,noexec,hidepid=invisible,gid=998 0 0\n")
    assert result["diff"]["before"].endswith("none  /proc  proc  rw 0 0\n")
    assert result["diff"]["after"] == host.fstab.read_text()


@pytest.mark.parametrize("mounted, remount", [
    ("rw,hidepid=invisible,gid=998", False),
    ("rw,hidepid=invisible,gid=12", True),  # the group was remade with another gid
    ("rw,hidepid=invisible", True),
    ("rw,gid=998", True),
    ("rw", True),
])
def test_the_running_proc_is_remounted_only_when_its_options_differ(capsys, host, mounted, remount):
    host.groups["proc-view"] = (998, [])
    host.fstab.write_text("proc /proc proc nosuid,nodev,noexec,hidepid=invisible,gid=998 0 0\n")
    os.chmod(host.fstab, 0o644)
    host.mountinfo.write_text(ROOT_LINE + proc_line(mounted) + SYS_LINE)
    result = run(capsys, host)
    assert result["changed"] is remount
    assert host.commands == ([["mount", "-o", "remount,hidepid=invisible,gid=998", "/proc"]] if remount else [])


def test_a_member_already_in_the_group_is_left_and_a_new_one_added(capsys, host):
    host.groups["proc-view"] = (998, ["polkitd"])
    host.fstab.write_text("proc /proc proc nosuid,nodev,noexec,hidepid=invisible,gid=998 0 0\n")
    os.chmod(host.fstab, 0o644)
    host.mountinfo.write_text(ROOT_LINE + proc_line("rw,hidepid=invisible,gid=998") + SYS_LINE)
    result = run(capsys, host, members=["polkitd", "prometheus"])
    assert result["changes"] == ["prometheus added to proc-view"]
    assert host.commands == [["usermod", "--append", "--groups", "proc-view", "prometheus"]]


def test_a_drifted_fstab_mode_is_set_back(capsys, host):
    host.groups["proc-view"] = (998, [])
    host.fstab.write_text("proc /proc proc nosuid,nodev,noexec,hidepid=invisible,gid=998 0 0\n")
    os.chmod(host.fstab, 0o666)
    host.mountinfo.write_text(ROOT_LINE + proc_line("rw,hidepid=invisible,gid=998") + SYS_LINE)
    result = run(capsys, host)
    assert result["changes"] == ["%s owner, group or mode" % host.fstab]
    assert stat.S_IMODE(os.stat(host.fstab).st_mode) == 0o644


def test_check_mode_on_a_new_host_reports_everything_and_changes_nothing(capsys, host):
    host.fstab.write_text("UUID=1 / ext4 defaults 0 1\n")
    result = run(capsys, host, members=["prometheus"], _ansible_check_mode=True)
    assert result["changed"] is True and "gid" not in result
    assert result["changes"] == ["group proc-view made", "prometheus added to proc-view", "%s /proc line" % host.fstab,
                                 "/proc remounted"]
    assert host.commands == [] and host.groups == {}
    assert host.fstab.read_text() == "UUID=1 / ext4 defaults 0 1\n"


def test_check_mode_with_the_group_there_previews_the_fstab_diff(capsys, host):
    host.groups["proc-view"] = (998, [])
    host.fstab.write_text("proc /proc proc defaults 0 0\n")
    result = run(capsys, host, _ansible_check_mode=True, _ansible_diff=True)
    assert result["changes"] == ["%s /proc line" % host.fstab, "/proc remounted"]
    assert result["diff"]["after"] == "proc /proc proc nosuid,nodev,noexec,hidepid=invisible,gid=998 0 0\n"
    assert host.fstab.read_text() == "proc /proc proc defaults 0 0\n" and host.commands == []


def test_a_missing_fstab_is_made_root_0644(capsys, host):
    host.groups["proc-view"] = (998, [])
    run(capsys, host)
    assert host.fstab.read_text() == "proc /proc proc nosuid,nodev,noexec,hidepid=invisible,gid=998 0 0\n"
    assert stat.S_IMODE(os.stat(host.fstab).st_mode) == 0o644


def test_a_user_that_does_not_exist_is_refused_before_any_change(capsys, host):
    result = run(capsys, host, members=["nobody-here"])
    assert result["failed"] is True and "nobody-here is not a user on this host" in result["msg"]
    assert host.commands == [] and host.groups == {}


def test_a_refused_remount_names_the_hosts_answer_and_what_it_needs(capsys, host):
    host.groups["proc-view"] = (998, [])
    host.remount_error = "mount: /proc: permission denied."
    result = run(capsys, host)
    assert result["failed"] is True
    # the fstab line written before the refusal is reported as a change
    assert result["changed"] is True and result["changes"] == ["%s /proc line" % host.fstab, "/proc remounted"]
    assert "Could not remount /proc with hidepid=invisible (mount: /proc: permission denied.)" in result["msg"]
    assert "CAP_SYS_ADMIN" in result["msg"] and "triton_server_proc_hidepid=false" in result["msg"]


def test_the_mountinfo_of_this_machine_has_a_proc_mount():
    """The parser on a real /proc/self/mountinfo (this machine's), not only on written lines."""
    options = proc_hidepid.proc_mount_options()  # MOUNTINFO as shipped: /proc/self/mountinfo
    assert options is not None and ("rw" in options or "ro" in options)
