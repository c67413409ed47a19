"""Kinds of words read as one class each: names given to things that are not the machine, .local names, ports said
before their verb, ways into sshd named without "only", interfaces' makes and settings, password policy."""

from __future__ import annotations

import pytest
from image_composer_mcp.server.composer.request_parser import parse_request


@pytest.mark.parametrize(("text", "kind"), [
    ("nginx with a site called blog", "site"), ("postgres with a database called app", "database"),
    ("el10 with a zfs pool named tank", "pool"), ("debian with an lvm volume group called vg0", "volume group"),
    ("add a group called devs", "group"), ("a k8s cluster named prod", "cluster"),
])
def test_a_thing_named_that_is_no_machine_never_names_the_host_and_is_said(text, kind):
    spec = parse_request(text)
    assert spec.hostname is None
    said = [u for u in spec.unparsed if u.startswith(f"{kind} '")]
    assert said and "not written" in said[0]


def test_the_machine_named_beside_a_named_thing_keeps_its_name():
    spec = parse_request("a box called gw-1 with a site named blog")
    assert spec.hostname == "gw-1" and any(u.startswith("site 'blog'") for u in spec.unparsed)


@pytest.mark.parametrize(("text", "path"), [
    ("samba with a share called public, 1TB disk", "/srv/public"),
    ("an nfs export named data, read-only, to 10.0.0.0/24", "/srv/data"),
])
def test_a_share_named_without_its_folder_is_served_from_srv_and_said(text, path):
    spec = parse_request(text)
    assert spec.hostname is None
    (share,) = spec.configurations
    assert f"mkdir -p '{path}'" in share["cmd"]
    assert any(n.startswith("share ") and f"served from {path}" in n for n in spec.notes)


def test_a_share_named_with_its_folder_says_nothing_of_srv():
    spec = parse_request("samba share called public at /srv/media")
    assert "/srv/media" in spec.configurations[0]["cmd"] and not any("served from" in n for n in spec.notes)


@pytest.mark.parametrize(("text", "host"), [
    ("debian 13 with ssh and avahi so it shows up as edge-cam.local", "edge-cam"),
    ("ubuntu with hostname cam-2.local", "cam-2"), ("ubuntu reachable at printer.local", "printer"),
])
def test_a_dot_local_name_is_the_host_name_avahi_publishes(text, host):
    spec = parse_request(text)
    assert spec.hostname == host and not spec.unparsed
    assert "avahi" in spec.add_packages  # named, or added (and said) when the request did not name it
    assert any("mDNS" in n for n in spec.notes) == ("avahi" not in text)


@pytest.mark.parametrize("text", ["join the search domain corp.local", "install it to /usr/local", "mail to ops@corp.local"])
def test_a_local_domain_a_path_or_an_address_is_no_host_name(text):
    spec = parse_request(text)
    assert spec.hostname is None and "avahi" not in spec.add_packages


def test_a_second_dot_local_name_beside_the_host_name_is_said_not_taken():
    spec = parse_request("ubuntu, hostname gw-1, reachable as cam.local")
    assert spec.hostname == "gw-1" and any(u.startswith("cam.local (avahi publishes") for u in spec.unparsed)


@pytest.mark.parametrize(("text", "opened"), [
    ("elxr 12 wireguard endpoint, only udp 51820 allowed in", ["51820/udp"]),
    ("debian with 80 and 443 open", ["80/tcp", "443/tcp"]),
    ("debian, 51820/udp allowed in", ["51820/udp"]), ("tcp 8080 exposed", ["8080/tcp"]),
])
def test_numbers_before_open_or_allowed_are_ports(text, opened):
    spec = parse_request(text)
    assert spec.open_ports == opened and not [u for u in spec.unparsed if any(p.split("/")[0] in u for p in opened)]


def test_a_count_before_open_is_no_port():
    assert parse_request("keep 2 slots open").open_ports == []


@pytest.mark.parametrize("text", ["ubuntu jump host: ssh only, key auth, fail2ban", "ssh with public key authentication",
                                  "ssh with key-based authentication only", "ssh with key auth, no passwords"])
def test_keys_named_as_the_way_in_refuse_passwords(text):
    spec = parse_request(text)
    assert [c["label"] for c in spec.configurations] == ["key-only ssh on"] and not spec.unparsed


@pytest.mark.parametrize("text", ["key auth plus password login for ssh", "ssh allowing both key authentication and passwords"])
def test_keys_beside_passwords_refuse_nothing_and_say_so(text):
    spec = parse_request(text)
    assert not [c for c in spec.configurations if c.get("label") == "key-only ssh on"]
    assert any(n.startswith("key authentication beside passwords") for n in spec.notes)


@pytest.mark.parametrize(("text", "said"), [
    ("ubuntu 26.04 with kvm and libvirt, br0 bridge on eth0", "br0 bridge on eth0 (network interfaces"),
    ("a bridge br0 over enp3s0", "bridge br0 over enp3s0 (network interfaces"),
    ("ubuntu 24.04, disable ipv6, set mtu 9000 on eth0", "mtu 9000 on eth0 (an interface's MTU"),
    ("enable jumbo frames", "jumbo frames (an interface's MTU"),
])
def test_an_interfaces_make_or_mtu_is_said_whole_and_its_names_are_no_packages(text, said):
    spec = parse_request(text)
    assert any(u.startswith(said) for u in spec.unparsed)
    assert not {"br0", "eth0", "enp3s0", "bridge-utils"} & set(spec.add_packages)


@pytest.mark.parametrize(("text", "length"), [("el10 hardened: auditd, password min length 14", 14),
                                              ("debian with a minimum password length of 12", 12)])
def test_a_password_length_is_pwqualitys_minlen(text, length):
    (entry,) = [c for c in parse_request(text).configurations if c["setting"] == "password length"]
    assert f"minlen = {length}" in entry["cmd"] and entry["packages"] == ["libpam-pwquality"]


def test_a_camera_alone_is_no_ai_purpose():
    assert "ai" not in parse_request("debian 13 for an arm64 camera board").use_cases
    assert "ai" in parse_request("ubuntu for smart camera analytics").use_cases


@pytest.mark.parametrize(("text", "wanted"), [("elxr 12 wireguard endpoint, only udp 51820 allowed in", True),
                                              ("debian 13, only 80 and 443 open", True),
                                              ("ubuntu 24.04 with ufw allowing only 22", False),
                                              ("debian 13 with 80 and 443 open", False)])
def test_only_the_ports_named_wants_a_firewall_unless_one_is_named(text, wanted):
    assert ("firewall" in parse_request(text).add_groups) is wanted


@pytest.mark.parametrize(("text", "delta"), [("bump the disk up by 10G", "+10GiB"), ("grow it by 5 gigs", "+5GiB"),
                                             ("bump up the disk by 10G", "+10GiB"), ("shrink it down by 2G", "-2GiB")])
def test_a_disk_grown_by_an_amount_with_a_particle_is_a_change_never_the_size(text, delta):
    spec = parse_request(text)
    assert spec.disk_size_delta == delta and spec.disk_size is None


@pytest.mark.parametrize(("text", "mount"), [("150G for the postgres data actually", "/var/lib/postgresql"),
                                             ("postgres data 150G", "/var/lib/postgresql"),
                                             ("debian with docker, docker storage 150G", "/var/lib/docker")])
def test_a_size_for_softwares_data_is_its_partitions_never_the_disks(text, mount):
    spec = parse_request(text)
    assert spec.disk_size is None
    assert [(p["mountPoint"], p["size"]) for p in spec.partitions] == [(mount, "150GiB")]


@pytest.mark.parametrize("text", ["make it a qcow2 instead of raw", "qcow2 instead of the raw image",
                                  "replace the raw disk with a qcow2"])
def test_a_format_instead_of_raw_replaces_the_raw_artifact(text):
    spec = parse_request(text)
    assert spec.artifacts == ["qcow2"] and spec.remove_artifacts == ["raw"]


@pytest.mark.parametrize("text", ["tiny alpine image with ssh", "an alpine vm", "alpine-based image for a router"])
def test_an_ambiguous_os_word_before_an_image_noun_names_the_os(text):
    assert any(u.startswith("Alpine Linux: operating system not supported") for u in parse_request(text).unsupported)


def test_an_ambiguous_os_word_elsewhere_is_no_os():
    assert not parse_request("an alpine hut themed kiosk on debian").unsupported


@pytest.mark.parametrize(("text", "gone"), [
    ("ubuntu 24.04 with the default user ubuntu removed and a user admin added", "ubuntu"),
    ("with user bob removed", "bob"), ("user bob should be deleted", "bob")])
def test_a_user_said_removed_after_the_name_is_removed_never_added(text, gone):
    users = parse_request(text).users
    assert {"action": "remove", "name": gone} in users and not any(u["action"] == "add" and u["name"] == gone for u in users)


@pytest.mark.parametrize(("text", "size"), [("ubuntu for raspberry, docker, disk 16", "16GiB"), ("disk size: 40", "40GiB")])
def test_a_disk_size_without_a_unit_is_gib_and_said(text, size):
    spec = parse_request(text)
    assert spec.disk_size == size and any("as no unit was said" in n for n in spec.notes)


@pytest.mark.parametrize("text", ["disk 2 for data", "a 16 disk raid"])
def test_a_count_beside_disk_is_no_size(text):
    assert parse_request(text).disk_size is None


@pytest.mark.parametrize(("text", "mode"), [("debian 13 with apparmor enforced and auditd", None),
                                            ("el10 with selinux enforced", None)])
def test_a_mandatory_access_control_said_enforced_is_the_group(text, mode):
    spec = parse_request(text)
    assert "mac" in spec.add_groups and not spec.unparsed and spec.group_modes.get("mac") == mode


def test_enforced_alone_names_no_access_control():
    assert "mac" not in parse_request("a policy that is enforced by the firewall").add_groups


@pytest.mark.parametrize(("text", "program"), [
    ("el10 image which runs a custom systemd service from /opt/app/run.sh at boot", "/opt/app/run.sh"),
    ("debian that runs /opt/kiosk/start.sh on startup", "/opt/kiosk/start.sh"),
    ("at boot run /usr/local/bin/init-sensors", "/usr/local/bin/init-sensors")])
def test_a_program_run_at_boot_gets_a_service_of_its_own(text, program):
    spec = parse_request(text)
    (entry,) = spec.configurations
    assert f"ExecStart={program}\\n" in entry["cmd"] and "WantedBy=multi-user.target" in entry["cmd"]
    assert "systemctl enable boot-" in entry["cmd"] and not spec.unparsed and "systemd" not in spec.add_packages
    assert any(n.startswith(f"{program} is started at boot") for n in spec.notes)


@pytest.mark.parametrize(("text", "doubted", "kept"), [
    ("debian with nginx, not sure about php", "php", "nginx"), ("ubuntu with docker and k3s? not sure", "k3s?", None),
    ("i am not sure if we need redis, add nginx", "redis", "nginx")])
def test_a_wish_said_unsure_is_not_applied_and_said(text, doubted, kept):
    spec = parse_request(text)
    assert not spec.remove_packages and not {"php", "k3s", "redis"} & set(spec.add_packages)
    assert any(n.startswith(f"not applied, as it was said unsure: '{doubted}'") for n in spec.notes)
    assert kept is None or kept in spec.add_packages


@pytest.mark.parametrize("text", ["a debian 13 image that forwards journald to a central server 192.168.5.5",
                                  "forward the journal to 192.168.5.5"])
def test_the_journal_forwarded_is_remote_logging(text):
    (entry,) = parse_request(text).configurations
    assert entry["setting"] == "remote logging" and "@@192.168.5.5" in entry["cmd"]


@pytest.mark.parametrize(("text", "said"), [("ubuntu 24.04 image, docker-ce from docker's repo", "from docker's repo"),
                                            ("nginx from the official nginx repository", "from the official nginx repository")])
def test_a_repository_other_than_the_distributions_is_said_not_added(text, said):
    assert any(n.startswith(f"'{said}' not applied") for n in parse_request(text).notes)


def test_a_groups_own_repository_says_nothing():
    assert not any("not applied" in n for n in parse_request("ubuntu with ros 2 jazzy from the ros repo").notes)


@pytest.mark.parametrize("text", ["azl3 with kernel-headers and gcc", "azl3 with the kernel headers and gcc",
                                  "ubuntu with kernel-devel", "debian with linux headers"])
def test_kernel_headers_are_one_package_never_a_kernel_flavour_nor_a_removal(text):
    spec = parse_request(text)
    assert not spec.unparsed and not spec.remove_packages
    assert len([p for p in spec.add_packages if p != "gcc"]) == 1


@pytest.mark.parametrize(("dist", "arch", "name"), [("debian13", "aarch64", "linux-headers-arm64"),
                                                    ("debian13", "x86_64", "linux-headers-amd64"),
                                                    ("ubuntu24", "aarch64", "linux-headers-generic"),
                                                    ("el10", "x86_64", "kernel-devel")])
def test_kernel_headers_are_wanted_by_the_targets_name(dist, arch, name):
    from image_composer_mcp.server.composer.adherence import want_from_spec

    assert want_from_spec(parse_request("add the kernel headers"), dist, arch)["has"] == [name]


def test_a_port_opened_instead_of_another_is_opened_and_the_other_said():
    spec = parse_request("add nginx and open 8080 instead of 80")
    assert spec.open_ports == ["8080/tcp"] and any(u.startswith("instead of 80 (a port is not closed") for u in spec.unparsed)


@pytest.mark.parametrize("text", ["bob should not be able to log in with a password",
                                  "bob is not allowed to log in with a password", "bob is unable to log in with a password"])
def test_a_user_unable_to_log_in_with_a_password_has_password_login_off(text):
    spec = parse_request(text)
    assert [c["label"] for c in spec.configurations] == ["password login off for bob"] and not spec.unparsed


@pytest.mark.parametrize(("text", "user", "shell"), [("viewer should use fish", "viewer", "/bin/fish"),
                                                     ("ops uses zsh as the login shell", "ops", "/bin/zsh")])
def test_a_user_said_to_use_a_shell_gets_it(text, user, shell):
    assert {"action": "add", "name": user, "shell": shell} in parse_request(text).users


@pytest.mark.parametrize("text", ["the image should use zsh", "nginx uses bash"])
def test_a_shell_used_by_no_user_names_none(text):
    assert not parse_request(text).users


def test_the_host_name_answered_after_a_question_taken_back_is_the_host_name():
    spec = parse_request("can you make the hostname gw-{site}? no, just gw-berlin")
    assert spec.hostname == "gw-berlin" and not spec.unparsed


def test_a_scheduled_job_said_with_its_program_and_arguments_after_the_schedule():
    spec = parse_request("set up a cron to renew certs at 3am daily with /usr/bin/certbot renew")
    (entry,) = spec.configurations
    assert "ExecStart=/usr/bin/certbot renew\\n" in entry["cmd"] and "OnCalendar=*-*-* 03:00:00" in entry["cmd"]
    assert "cron" not in spec.add_packages and not spec.unparsed


@pytest.mark.parametrize("text", ["debian without cron", "remove cron"])
def test_cron_taken_out_is_the_package_never_the_timers(text):
    spec = parse_request(text)
    assert spec.remove_packages == ["cron"] and not spec.configurations


def test_an_hour_at_the_end_of_a_sentence_is_the_time_of_day():
    (entry,) = parse_request("Oh and it should reboot every night at 4.").configurations
    assert "OnCalendar=*-*-* 04:00:00" in entry["cmd"]


@pytest.mark.parametrize(("text", "opened"), [("el10, the firewall should block everything except ssh and 8443", ["8443/tcp", "ssh"]),
                                              ("debian with a firewall that denies all incoming traffic but 22 and 443",
                                               ["22/tcp", "443/tcp"])])
def test_what_a_firewall_blocks_all_but_is_let_in_never_removed(text, opened):
    spec = parse_request(text)
    assert sorted(spec.open_ports) == sorted(opened) and not spec.remove_groups and not spec.unparsed


@pytest.mark.parametrize(("text", "mount", "size"), [
    ("debian trixie with home on a separate partition, 30 gigs for it, rest for root, 100G disk", "/home", "30GiB"),
    ("add a /data partition, give it 20G", "/data", "20GiB")])
def test_a_size_for_it_after_a_partition_is_the_partitions(text, mount, size):
    spec = parse_request(text)
    assert any(p["mountPoint"] == mount and p["size"] == size for p in spec.partitions) and not spec.unparsed
    assert spec.disk_size in (None, "100GiB")


def test_a_size_given_to_software_is_no_partitions():
    assert parse_request("add nginx and give it 20G").partitions == []


def test_a_virtual_interfaces_address_is_said_never_written_for_the_wired_ones():
    spec = parse_request("debian 13 with wireguard, wg0 10.8.0.1/24 listening on 51820")
    assert not [c for c in spec.configurations if c.get("network")]
    assert any(u.startswith("wg0 10.8.0.1/24 (an address of wg0 is not written") for u in spec.unparsed)


@pytest.mark.parametrize(("text", "remote"), [("emt image that reports metrics to prometheus at 10.0.0.9:9090", "prometheus"),
                                              ("point it to the redis server at 10.0.0.4:6379", "redis")])
def test_software_at_another_machines_address_is_not_installed(text, remote):
    spec = parse_request(text)
    assert remote not in spec.add_packages and any(n.startswith(f"{remote} at ") for n in spec.notes)


@pytest.mark.parametrize(("text", "user"), [("give user azureuser access to docker", "azureuser"),
                                            ("grant ops docker rights", "ops")])
def test_a_user_given_docker_is_in_its_group(text, user):
    assert any(u["name"] == user and "docker" in u.get("groups", []) for u in parse_request(text).users)


def test_the_value_replaced_after_not_is_no_wish():
    spec = parse_request("i changed my mind, the disk should be 32 gigs, not 4")
    assert spec.disk_size == "32GiB" and not spec.unparsed


def test_a_partitions_size_without_a_unit_is_gib_and_said():
    spec = parse_request("/var should be 20 not 10")
    assert spec.partitions == [{"action": "resize", "mountPoint": "/var", "size": "20GiB"}] and not spec.unparsed
    assert any("as no unit was said" in n for n in spec.notes)


@pytest.mark.parametrize("text", ["remove sudo, nobody needs it", "drop cups since we don't use it"])
def test_a_reason_given_for_an_edit_is_no_wish(text):
    spec = parse_request(text)
    assert spec.remove_packages and not spec.unparsed


@pytest.mark.parametrize(("text", "mount", "size"), [("el10 with tmp on its own partition (2G, noexec)", "/tmp", "2GiB"),
                                                     ("a /data partition (50G)", "/data", "50GiB")])
def test_a_size_in_parentheses_after_a_partition_is_the_partitions_never_the_disks(text, mount, size):
    spec = parse_request(text)
    assert spec.disk_size is None and [(p["mountPoint"], p["size"]) for p in spec.partitions] == [(mount, size)]
    assert ("noexec" in text) == any(u.startswith("mount options noexec of /tmp") for u in spec.unparsed)


def test_a_serial_console_named_by_its_device_alone():
    spec = parse_request("debian13 arm64 minimal; serial console ttyAMA0")
    assert spec.kernel_cmdline_append == ["console=ttyAMA0"] and not spec.unparsed
