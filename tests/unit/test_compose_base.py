"""Choosing the starting template and leaving out what nobody asked for: a group travels with its kernel and its
kernel parameters, not only its packages (server/composer/base.py, editing.remove_groups)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from image_composer_mcp.server.composer.base import (
    asked_groups,
    baggage,
    choose_base,
    named_in,
    related,
    strip_plan,
    unasked,
    unasked_formats,
)
from image_composer_mcp.server.composer.compose import apply_instruction, compose
from image_composer_mcp.server.composer.request_parser import parse_request
from image_composer_mcp.server.knowledge.loader import load_capabilities

LIBRARY = Path(__file__).resolve().parents[2] / "image-templates"
RT_TUNING = ("isolcpus", "nohz_full", "rcu_nocbs", "irqaffinity", "intel_idle.max_cstate", "nmi_watchdog")


def _template(name: str) -> dict:
    return yaml.safe_load((LIBRARY / f"{name}.yml").read_text(encoding="utf-8"))


def _params(data: dict) -> list[str]:
    return str(data["systemConfig"]["kernel"].get("cmdline") or "").split()


def test_a_real_time_kernel_and_its_tuning_are_baggage_where_the_group_has_no_packages():
    """EMT's real-time group has no packages of its own: its template still carries it, by kernel and cmdline."""
    caps = load_capabilities()
    request = "emt image with python3 and git"
    rt = _template("emt3-x86_64-realtime-industrial-raw")
    carried = baggage(rt, parse_request(request), caps)
    assert "kernel-rt-drivers-gpu" in carried["realtime"]
    assert {p.split("=", 1)[0] for p in carried["realtime"]} >= set(RT_TUNING)
    assert "realtime" in strip_plan("emt3-x86_64-realtime-industrial-raw", rt, parse_request(request), request, caps)
    asked = parse_request("real-time emt image with python3")
    assert "realtime" not in baggage(rt, asked, caps)  # asked for: not baggage
    plain = _template("emt3-x86_64-immutable-secureboot-raw")
    candidates = [("emt3-x86_64-realtime-industrial-raw", "", rt), ("emt3-x86_64-immutable-secureboot-raw", "", plain)]
    assert choose_base(candidates, parse_request(request), caps)[0][0] == "emt3-x86_64-immutable-secureboot-raw"


def test_leaving_real_time_out_resets_the_kernel_and_removes_its_tuning_and_says_so():
    rt = _template("debian13-x86_64-realtime-industrial-raw")
    assert any(p.split("=", 1)[0] in RT_TUNING for p in _params(rt))
    result = compose("debian server with postgresql", rt, strip_groups=["realtime"])
    kernel = result.data["systemConfig"]["kernel"]
    assert kernel["packages"] == ["linux-image-amd64"]
    left = _params(result.data)
    assert not [p for p in left if p.split("=", 1)[0] in RT_TUNING]
    assert "console=ttyS0,115200" in left  # the console is no tuning
    said = [c for c in result.changes if c.startswith("left out of the starting template")]
    assert any("kernel back to linux-image-amd64" in c and "kernel parameters isolcpus=" in c for c in said), said


def test_leaving_virtualization_out_removes_the_iommu_parameters_it_set():
    kvm = _template("debian13-x86_64-kvm-virtualization-host-raw")
    assert "intel_iommu=on" in _params(kvm)
    result = compose("debian server with postgresql", kvm, strip_groups=["virtualization"])
    assert not [p for p in _params(result.data) if p.split("=", 1)[0] in ("intel_iommu", "iommu")]
    assert any("kernel parameters intel_iommu=on" in c for c in result.changes), result.changes


def test_a_group_owns_its_members_where_a_template_has_them():
    """A ROS template's navigation stack is ROS, though adding ROS installs only its base: unasked, it is baggage."""
    caps = load_capabilities()
    ros = _template("ubuntu24-x86_64-robotics-ros2-jazzy-raw")
    carried = baggage(ros, parse_request("ubuntu 24.04 server with nginx"), caps)
    assert "ros-jazzy-navigation2" in carried["ros2"] and "python3-rosdep" in carried["ros2"]
    result = compose("ubuntu 24.04 server with nginx", ros, strip_groups=["ros2"])
    assert not [p for p in result.data["systemConfig"]["packages"] if p.startswith("ros-")]


def test_unasked_software_no_group_explains_counts_against_an_unrelated_base():
    caps = load_capabilities()
    request = "Ubuntu 24.04 server with nginx and certbot"
    spec = parse_request(request)
    ros, gateway = _template("ubuntu24-x86_64-robotics-ros2-jazzy-raw"), _template("ubuntu24-x86_64-edge-gateway-docker-raw")
    candidates = [("ubuntu24-x86_64-robotics-ros2-jazzy-raw", "", ros), ("ubuntu24-x86_64-edge-gateway-docker-raw", "", gateway)]
    assert choose_base(candidates, spec, caps, request)[0][0] == "ubuntu24-x86_64-edge-gateway-docker-raw"
    robotics = "ubuntu 24.04 robotics image with ros2 and nginx"  # the template's purpose: its extras are wanted
    assert choose_base(candidates, parse_request(robotics), caps, robotics)[0][0] == \
        "ubuntu24-x86_64-robotics-ros2-jazzy-raw"


def test_a_headless_request_leaves_a_kiosk_template_without_its_session_user_and_name():
    caps = load_capabilities()
    request = "a headless debian 13 box for home automation in docker"
    name = "debian13-x86_64-kiosk-chromium-raw"
    kiosk, spec = _template(name), parse_request(request)
    strip = strip_plan(name, kiosk, spec, request, caps)
    assert "kiosk" in spec.remove_groups and "kiosk" not in strip  # asked to go: the request's own removal
    result = compose(request, kiosk, base_file=name, spec=spec, strip_groups=strip)
    system = result.data["systemConfig"]
    assert not {"cage", "chromium", "fonts-noto-core"} & set(system["packages"])
    assert "docker.io" in system["packages"]
    assert not [c for c in system.get("configurations", []) if "kiosk" in c["cmd"] or "graphical" in c["cmd"]]
    assert not [u for u in system.get("users", []) if u["name"] == "kiosk"]
    assert system["hostname"] != "kiosk"
    assert any("user kiosk" in c for c in result.changes) and any(c.startswith("hostname kiosk ->") for c in result.changes)


def test_a_kiosk_added_on_debian_is_a_working_session_and_elsewhere_is_reported():
    plain = _template("debian13-x86_64-hardened-security-raw")
    result = compose("debian 13 kiosk", plain)
    system = result.data["systemConfig"]
    assert {"cage", "chromium"} <= set(system["packages"])
    assert any(u["name"] == "kiosk" for u in system["users"])
    assert any("kiosk.service" in c["cmd"] and "enable" in c["cmd"] for c in system["configurations"])
    ubuntu = compose("ubuntu kiosk", _template("ubuntu26-x86_64-minimal-base-raw"))
    assert any("kiosk" in u and "snap" in u for u in ubuntu.unhandled), ubuntu.unhandled


def test_what_a_group_brought_leaves_with_it_members_service_user_units_and_data_partition():
    podman = _template("ubuntu26-aarch64-edge-gateway-podman-raw")
    result = compose("ubuntu 26.04 arm64 file server with smartmontools", podman, strip_groups=["podman"])
    system = result.data["systemConfig"]
    assert not {"podman", "crun", "netavark", "cockpit-podman"} & set(system["packages"])
    assert "users" not in system  # podman-svc ran the containers
    assert not [c for c in system.get("configurations", []) if "podman" in c["cmd"]]
    assert system["hostname"] != "ubuntu-podman-gw"
    httpd = _template("el10-x86_64-web-server-httpd-raw")
    result = compose("el10 build server with gcc and make", httpd, strip_groups=["web-server"])
    assert "/var/www" not in [p["mountPoint"] for p in result.data["disk"]["partitions"]]
    assert not {"httpd", "mod_ssl"} & set(result.data["systemConfig"]["packages"])
    assert result.data["systemConfig"]["hostname"] != "www01"  # named for /var/www


def test_a_short_name_removes_the_one_installed_package_it_names():
    minimal = _template("ubuntu26-x86_64-minimal-base-raw")
    assert "systemd-timesyncd" in minimal["systemConfig"]["packages"]
    result = compose("ubuntu 26.04 with chrony instead of timesyncd", minimal)
    assert "systemd-timesyncd" not in result.data["systemConfig"]["packages"]
    assert "chrony" in result.data["systemConfig"]["packages"]
    kernel = apply_instruction(minimal, "remove generic").data["systemConfig"]["kernel"]["packages"]
    assert kernel == minimal["systemConfig"]["kernel"]["packages"]  # a short name never takes the kernel


def test_add_ons_leave_with_the_package_they_extend():
    httpd = _template("el10-x86_64-web-server-httpd-raw")
    result = compose("el10 web server", httpd)
    swapped = apply_instruction(result.data, "swap httpd for nginx")
    packages = swapped.data["systemConfig"]["packages"]
    assert "nginx" in packages and not {"httpd", "mod_ssl", "mod_http2"} & set(packages)
    assert any("add-ons" in c and "mod_ssl" in c for c in swapped.changes)


def test_a_new_image_nobody_named_the_kind_of_is_a_raw_disk():
    caps = load_capabilities()
    request = "elxr 12 with htop"
    iso, raw = _template("elxr12-x86_64-iso-installer-iso"), _template("elxr12-x86_64-cloud-vm-qcow2-raw")
    candidates = [("elxr12-x86_64-iso-installer-iso", "", iso), ("elxr12-x86_64-cloud-vm-qcow2-raw", "", raw)]
    assert choose_base(candidates, parse_request(request), caps, request)[0][0] == "elxr12-x86_64-cloud-vm-qcow2-raw"
    assert compose(request, iso).data["target"]["imageType"] == "raw"


def _commands(data: dict) -> list[str]:
    return [str(c.get("cmd")) for c in data["systemConfig"].get("configurations") or []]


def test_leaving_software_out_takes_the_commands_that_run_or_configure_it():
    """A command that runs a program of what left (firewall-offline-cmd), a unit named as a removed package
    (dnf-automatic.timer, whose stem dnf stays installed) and a group's own set-up (SELinux's relabel) would fail the build or configure nothing: they leave with it, and the
    answer says so."""
    web = _template("el10-x86_64-web-server-httpd-raw")
    result = compose("el10 minimal server with tmux", web,
                     strip_groups=["web-server", "firewall", "mac", "updates"])
    left = _commands(result.data)
    assert not [c for c in left if "firewall-offline-cmd" in c or "autorelabel" in c or "dnf-automatic" in c], left
    assert any(c.startswith("systemctl enable chronyd.service") for c in left), left  # chrony stays
    assert any("firewall-offline-cmd" in c for c in result.changes), result.changes


def test_leaving_ros_out_takes_its_environment_and_its_robot_account():
    ros = _template("ubuntu24-x86_64-robotics-ros2-jazzy-raw")
    result = compose("ubuntu 24.04 with python3 and git", ros, strip_groups=["ros2"])
    left = _commands(result.data)
    assert not [c for c in left if "ROS_" in c or "RMW_" in c or "/opt/ros" in c], left
    assert not [u for u in result.data["systemConfig"].get("users") or [] if u.get("name") == "robot"]
    assert any("user robot" in c for c in result.changes), result.changes


def test_leaving_real_time_out_takes_its_sysctl_file():
    rt = _template("debian13-x86_64-realtime-industrial-raw")
    assert any("90-realtime.conf" in c for c in _commands(rt))
    result = compose("debian server with postgresql", rt, strip_groups=["realtime"])
    assert not [c for c in _commands(result.data) if "sched_rt_runtime_us" in c]


def test_a_removed_package_takes_the_unit_named_as_it_is_even_when_its_stem_stays():
    from image_composer_mcp.server.composer.compose import Edit

    edit = Edit(_template("el10-x86_64-web-server-httpd-raw"), load_capabilities())
    assert sorted(edit.remove_packages({"dnf-automatic", "firewalld"})) == ["dnf-automatic", "firewalld"]
    edit.clean_up_after_removals()
    left = _commands(edit.data)
    assert "systemctl enable httpd.service chronyd.service" in left, left
    assert not [c for c in left if "firewall-offline-cmd" in c], left


def test_software_gets_the_name_it_has_on_the_target_or_is_said_to_be_missing_there():
    base = _template("debian13-aarch64-minimal-base-raw")
    nas = compose("debian 13 NAS with samba and nfs", base)
    installed = nas.data["systemConfig"]["packages"]
    assert "samba" in installed and "nfs-kernel-server" in installed and "nfs-utils" not in installed
    ubuntu = compose("ubuntu 24.04 workstation with firefox", _template("ubuntu24-x86_64-desktop-workstation-raw"))
    assert not [p for p in ubuntu.data["systemConfig"]["packages"] if p.startswith("firefox")]
    assert any("firefox" in p for p in ubuntu.unhandled), ubuntu.unhandled


def test_a_parameter_that_turns_a_group_off_is_not_that_group():
    """selinux=0 in a base template is the opposite of the mac group's selinux=1: neither baggage nor removed."""
    caps = load_capabilities()
    assert caps.group_tuning("mac", "console=ttyS0 selinux=0") == []
    assert caps.group_tuning("mac", "console=ttyS0 selinux=1 enforcing=1") == ["selinux=1", "enforcing=1"]
    assert caps.group_tuning("realtime", "isolcpus=2-3 quiet") == ["isolcpus=2-3"]  # tuning: any value
    base = _template("el10-x86_64-minimal-base-raw")
    assert "mac" not in baggage(base, parse_request("el10 mail server with postfix"), caps)


def test_a_package_a_group_just_added_is_not_also_reported_as_already_present():
    base = _template("debian13-x86_64-minimal-base-raw")
    request = "hardened debian image with auditd, aide and fail2ban"
    result = compose(request, base, base_file="debian13-x86_64-minimal-base-raw", spec=parse_request(request))
    assert not [c for c in result.changes if "already present" in c], result.changes
    assert any(c.startswith("added security") and "auditd" in c for c in result.changes)


def test_a_group_mode_is_applied_where_the_target_has_it_and_reported_where_not():
    for name, param, applied in (("el10-x86_64-minimal-base-raw", "enforcing=0", True),
                                 ("debian13-x86_64-minimal-base-raw", None, False)):
        request = "image with selinux in permissive mode"
        result = compose(request, _template(name), base_file=name, spec=parse_request(request))
        assert (param in _params(result.data)) if param else "enforcing=1" not in _params(result.data)
        assert bool([p for p in result.problems if "permissive" in p]) is not applied
        assert any("not applied: mac permissive" in n for n in result.notes()) is not applied


def test_a_kind_of_a_group_asks_for_the_group_it_stands_in_for():
    spec = parse_request("ubuntu 24.04 workstation with the gnome desktop")
    assert spec.add_groups == ["gnome-desktop"]
    assert {"gnome-desktop", "desktop"} <= asked_groups(spec, load_capabilities())


def test_with_no_target_named_a_template_whose_target_has_the_asked_groups_comes_first():
    caps = load_capabilities()
    request = "a kiosk with gstreamer"
    spec = parse_request(request)
    assert "kiosk" in spec.add_groups and not spec.dist
    plain = _template("ubuntu26-x86_64-minimal-base-raw")  # nothing unasked, but Ubuntu's browsers are snaps
    debian = _template("debian13-x86_64-kiosk-chromium-raw")
    assert not caps.group_available("kiosk", "ubuntu26", "x86_64") and caps.group_available("kiosk", "debian13",
                                                                                            "x86_64")
    candidates = [("ubuntu26-x86_64-minimal-base-raw", "", plain), ("debian13-x86_64-kiosk-chromium-raw", "", debian)]
    assert choose_base(candidates, spec, caps, request)[0][0] == "debian13-x86_64-kiosk-chromium-raw"


def test_a_new_image_writes_only_the_disk_formats_asked_for_and_says_what_left():
    cloud = _template("ubuntu24-x86_64-cloud-vm-qcow2-vmdk-raw")
    assert {a["type"] for a in cloud["disk"]["artifacts"]} == {"qcow2", "vmdk"}
    plain = compose("ubuntu 24.04 server with python3", cloud)
    assert "artifacts" not in plain.data["disk"]  # the raw disk only
    assert any("disk formats qcow2, vmdk" in c and "raw disk only" in c for c in plain.changes), plain.changes
    asked = compose("ubuntu 24.04 qcow2 image for kvm", cloud)
    assert [a["type"] for a in asked.data["disk"]["artifacts"]] == ["qcow2"]
    assert any("disk formats vmdk" in c for c in asked.changes), asked.changes
    assert cloud["disk"]["artifacts"][1]["type"] == "vmdk"  # the starting template itself is not edited


def test_disk_formats_nobody_asked_for_weigh_nothing_in_choosing_a_start_since_they_leave_whole():
    caps = load_capabilities()
    spec = parse_request("ubuntu 24.04 server with python3")
    cloud = _template("ubuntu24-x86_64-cloud-vm-qcow2-vmdk-raw")
    raw_only = {**cloud, "disk": {**cloud["disk"], "artifacts": [{"type": "raw", "compression": "gz"}]}}
    assert unasked_formats(cloud, spec) == ["qcow2", "vmdk"] and unasked_formats(raw_only, spec) == []
    assert unasked_formats(cloud, parse_request("ubuntu qcow2 server")) == ["vmdk"]
    assert unasked("a", cloud, spec, caps, None) == unasked("a", raw_only, spec, caps, None)


def test_a_request_names_a_template_by_its_use_case_words_as_well_as_its_software():
    caps = load_capabilities()
    name = "ubuntu24-x86_64-edge-gateway-docker-raw"
    assert named_in(name, "an ubuntu edge gateway", caps) and not related(name, "an ubuntu edge gateway", caps)
    assert not named_in(name, "ubuntu 24.04 image with node.js 20", caps)
    assert not named_in(name, "an x86_64 ubuntu24 raw image", caps)  # target words say nothing of a purpose


def test_removing_sudo_says_which_users_are_still_set_to_use_it():
    data = _template("azl3-x86_64-minimal-base-raw")
    data["systemConfig"]["users"] = [{"name": "deploy", "sudo": True}, {"name": "guest"}]
    result = apply_instruction(data, "remove sudo")
    assert "sudo" not in result.data["systemConfig"]["packages"]
    said = [c for c in result.changes if "sudo: true" in c]
    assert said and "user deploy" in said[0] and "guest" not in said[0], result.changes
    kept = apply_instruction(data, "remove tdnf")
    assert not [c for c in kept.changes if "sudo: true" in c]


@pytest.mark.parametrize(("request_text", "is_related"), [
    ("a kiosk that shows one web page", False),  # "web" alone is no web server
    ("a signage screen showing a web dashboard", False),
    ("ubuntu webserver", True),
    ("a web server with php", True),
    ("ubuntu web-server image", True),
    ("an image that runs nginx", True),  # the software it is named for
])
def test_a_name_word_before_a_use_case_word_is_one_name_with_it(request_text, is_related):
    caps = load_capabilities()
    assert related("ubuntu26-x86_64-web-server-nginx-raw", request_text, caps) is is_related


def test_a_saved_templates_name_with_no_word_of_purpose_relates_to_nothing():
    assert related("my-azl", "azure linux minimal image", load_capabilities()) is False  # it had raised
