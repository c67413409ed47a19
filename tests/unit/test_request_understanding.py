"""The one parse of a request (server/composer/request_parser.py): rules about classes of words, not phrases."""

from __future__ import annotations

import pytest
from image_composer_mcp.server.composer.layout import LAST_EDITED
from image_composer_mcp.server.composer.phrasing import looks_like_package
from image_composer_mcp.server.composer.request_parser import parse_request


def test_misspellings_are_corrected_towards_one_clearly_closest_known_word():
    spec = parse_request("ubunut 24.04 imgae with dokker and wiregard", known_packages=["wireguard-tools"])
    assert spec.dist == "ubuntu24" and "containers" in spec.add_groups
    assert "wireguard-tools" in spec.add_packages
    assert "ubunut -> ubuntu" in spec.corrected and not spec.unparsed


@pytest.mark.parametrize("word", ["separate", "logs", "things", "everyone"])
def test_plain_english_after_add_is_reported_never_a_package(word):
    spec = parse_request(f"add {word}")
    assert word not in spec.add_packages
    assert not looks_like_package(word)


@pytest.mark.parametrize("word", ["libssl3", "python3-venv", "mod_ssl", "foo-bar"])
def test_words_shaped_like_package_names_after_add_are_packages(word):
    assert word in parse_request(f"add {word}").add_packages


def test_short_names_resolve_to_the_real_package():
    spec = parse_request("remove mosquitto and wireguard", known_packages=["mosquitto", "wireguard-tools"])
    assert spec.remove_packages == ["mosquitto", "wireguard-tools"]


@pytest.mark.parametrize(("text", "dist", "arch", "flag"), [
    ("fedora 40 web server", "el10", None, "Fedora 40"),
    ("gentoo on sparc", "debian13", "x86_64", "SPARC"),
    ("ubuntu 18.04 with ssh", None, None, "Ubuntu 18.04"),
    ("opensuse leap image", "el10", None, "openSUSE Leap"),
])
def test_unsupported_targets_are_flagged_with_the_closest_choice(text, dist, arch, flag):
    spec = parse_request(text)
    assert any(flag in u and "closest supported" in u for u in spec.unsupported)
    if dist:
        assert spec.dist == dist
    if arch:
        assert spec.arch == arch


@pytest.mark.parametrize(("text", "family", "flag", "dist"), [
    ("RHEL-compatible el9 web server with httpd", "redhat-compatible-distro", "9 (el9)", "el10"),
    ("debian bookworm box with postgresql", "debian", "Debian 12 (bookworm)", "debian13"),
    ("jammy image with docker", "ubuntu", "Ubuntu 22.04 (jammy)", "ubuntu24"),
    ("azl2 container host", "azure-linux", "Azure Linux 2 (azl2)", "azl3"),
    ("ubuntu22 minimal image", "ubuntu", "(ubuntu22)", "ubuntu24"),
    ("ubuntu 22.04 with docker", "ubuntu", "Ubuntu 22.04", "ubuntu24"),  # the nearest, not the newest (26.04)
    ("debian 12 bookworm server", "debian", "Debian 12 (bookworm)", "debian13"),
])
def test_a_release_that_cannot_be_built_is_flagged_once_and_the_nearest_supported_one_is_used(text, family, flag,
                                                                                              dist):
    spec = parse_request(text)
    assert spec.os == family and spec.dist == dist and not spec.corrected
    assert [u for u in spec.unsupported if flag in u and "release not supported; closest supported" in u
            and f"(using {dist})" in u], spec.unsupported
    assert len(spec.unsupported) == 1, spec.unsupported


@pytest.mark.parametrize(("text", "dist"), [("ubuntu24 image", "ubuntu24"), ("debian13 kiosk", "debian13"),
                                            ("emt3 raw image", "emt3"), ("el10 web server", "el10")])
def test_a_supported_distribution_code_is_its_release_not_a_misspelt_family(text, dist):
    spec = parse_request(text)
    assert spec.dist == dist and not spec.corrected and not spec.unsupported


@pytest.mark.parametrize(("text", "dist"), [("rocky 10 server", "el10"), ("azure linux 3 image", "azl3"),
                                            ("alma linux box", "el10"), ("mariner vm", "azl3")])
def test_vendor_names_and_supported_releases_are_not_flagged(text, dist):
    from image_composer_mcp.server.knowledge.loader import load_capabilities

    spec = parse_request(text)
    # A family alone leaves the release open (the agent picks the newest); a release must be the right one.
    assert spec.os == load_capabilities().family_of(dist) and spec.dist in (None, dist) and not spec.unsupported


@pytest.mark.parametrize(("text", "family"), [
    ("edge image on Microsoft's Linux with docker", "azure-linux"),
    ("a distro made by Microsoft, with nginx", "azure-linux"),
    ("Intel's edge OS with docker for a gateway", "edge-microvisor-toolkit"),
    ("ubuntu with the intel gpu driver", "ubuntu"),
    ("debian for a microsoft azure vm", "debian"),
])
def test_an_operating_system_named_by_its_maker_is_its_family_and_a_maker_alone_is_not(text, family):
    assert parse_request(text).os == family


def test_replacement_and_removal_verbs():
    assert parse_request("swap docker for podman").remove_groups == ["containers"]
    spec = parse_request("use apache instead of nginx", known_packages=["nginx", "apache2"])
    assert "nginx" in spec.remove_packages or "web-server" in spec.remove_groups
    assert parse_request("get rid of vim").remove_packages == ["vim"]


def test_a_partition_purpose_is_not_a_request_for_software():
    spec = parse_request("add a separate 4GiB /data partition for logs")
    assert spec.partitions[0]["mountPoint"] == "/data" and not spec.add_packages and not spec.add_groups


def test_a_compression_the_build_refuses_is_reported_not_written() -> None:
    """bz2 passes upstream's schema but its build stops on it: the request is told, the template never gets it."""
    from image_composer_mcp.server.knowledge.template_format import load_template_format

    refused = parse_request("debian 13 raw image compressed with bz2")
    assert refused.artifact_compression is None
    assert any("bz2" in u and "gz" in u for u in refused.unsupported)
    for value in load_template_format().build_compressions:
        assert parse_request(f"debian 13 raw image, {value} compressed").artifact_compression == value
    assert parse_request("debian 13 raw image compressed with gzip").artifact_compression == "gz"


@pytest.mark.parametrize(("text", "name", "sudo"), [
    ("Ubuntu 24.04 server with nginx, hostname web01, user deploy with sudo", "deploy", True),
    ("debian image; account ops in groups docker, video", "ops", None),
    ("add a user called dave", "dave", None),
])
def test_a_clause_that_opens_with_user_and_a_name_adds_that_user(text, name, sudo):
    users = parse_request(text).users
    assert [u["name"] for u in users] == [name]
    assert users[0].get("sudo") is sudo


@pytest.mark.parametrize("text", ["debian, user namespaces enabled", "ubuntu, user data on /srv", "user session"])
def test_compound_nouns_with_user_name_no_user(text):
    assert parse_request(text).users == []


@pytest.mark.parametrize(("text", "removed"), [
    ("edge microvisor toolkit robot controller, realtime kernel, ROS not needed, 12 GiB", "ros2"),
    ("ubuntu with nginx, docker is not needed, add git", "containers"),
    ("debian server, the GUI isn't required", "desktop"),
    ("azl3 with podman but docker not wanted", "containers"),
])
def test_a_negation_after_its_object_removes_it_and_stops_there(text, removed):
    spec = parse_request(text)
    assert removed in spec.remove_groups and removed not in spec.add_groups
    assert not ({"needed", "required", "wanted"} & {*spec.remove_packages, *spec.add_packages})
    assert not ({"nginx", "git", "podman"} & set(spec.remove_packages))  # the removal ends with its phrase


@pytest.mark.parametrize(("text", "what"), [
    ("debian image with postgresql 15", "postgresql 15"),
    ("ubuntu 24.04 with python 3.12 and nginx", "python 3.12"),
])
def test_a_version_after_a_package_is_reported_as_not_pinned(text, what):
    spec = parse_request(text)
    assert any(n.startswith(what) and "not pinned" in n for n in spec.notes), spec.notes
    assert spec.dist is None or spec.dist == "ubuntu24"  # "3.12" is no release


@pytest.mark.parametrize(("text", "mount", "size"), [
    ("debian with postgresql on a separate 50G data disk partition", "/data", "50GiB"),
    ("ubuntu with docker and a 20G docker partition", "/var/lib/docker", "20GiB"),
    ("emt with a 2GB /data volume", "/data", "2GiB"),
    ("debian with a 30G postgresql partition", "/var/lib/postgresql", "30GiB"),
])
def test_a_partition_named_by_purpose_or_software_is_its_data_directory(text, mount, size):
    spec = parse_request(text)
    assert [(p["mountPoint"], p["size"]) for p in spec.partitions] == [(mount, size)]
    assert spec.disk_size is None


@pytest.mark.parametrize("text", ["a headless Debian box with docker", "ubuntu server, no display"])
def test_headless_takes_out_the_display_stacks(text):
    spec = parse_request(text)
    assert {"desktop", "kiosk"} <= set(spec.remove_groups)
    assert not spec.remove_packages and "desktop" not in spec.add_groups


@pytest.mark.parametrize(("text", "reported"), [
    ("an ubuntu image for a point-of-sale terminal: chromium kiosk, autologin, no ssh server", []),
    ("el10 image, FIPS mode, selinux enforcing", ["FIPS mode (FIPS mode is not written by the composer: it needs the "
                                                  "distribution's FIPS-validated modules, the fips=1 kernel parameter "
                                                  "and its crypto policy set at build time (on EL10, FIPS mode must be "
                                                  "enabled when the system is installed); build from a vendor's FIPS "
                                                  "image)"]),
    ("ubuntu kiosk, touchscreen support, autologin", ["touchscreen"]),
])
def test_a_list_item_nothing_read_is_reported(text, reported):
    spec = parse_request(text)
    assert spec.unparsed == reported  # automatic login is read, and said by the edit (with what writes it, if any)
    assert ("autologin" in text) == (spec.autologin == "autologin")


@pytest.mark.parametrize("text", [
    "an image for my homelab, debian, docker",
    "debian 13 image for a point-of-sale terminal, with nginx",
    "a headless Debian box for running Home Assistant in docker",
])
def test_purpose_phrases_are_prose_not_wishes(text):
    assert parse_request(text).unparsed == []


@pytest.mark.parametrize(("text", "packages"), [
    ("centos stream 10 build server with gcc, make, git and podman", ["gcc", "make", "git", "podman"]),
    ("add git and make", ["git", "make"]),
    ("ubuntu with nginx, make it 8G", ["nginx"]),
    ("debian with git, make sure ssh is on", ["git"]),
])
def test_a_package_named_like_a_verb_is_a_package_as_a_list_item(text, packages):
    assert parse_request(text).add_packages == packages


@pytest.mark.parametrize(("text", "opened"), [("remove the ssh server and open ports 80", ["80/tcp"]),
                                              ("allow port 443/tcp", ["443/tcp"]),
                                              ("ubuntu with docker, open port 8080 and 8443", ["8080/tcp", "8443/tcp"]),
                                              # each port its own protocol, services after them in the same list
                                              ("firewall allows tcp port 53, udp port 53 and https, plus nginx",
                                               ["53/tcp", "53/udp", "https"]),
                                              ("open udp ports 53 and 123", ["53/udp", "123/udp"]),
                                              ("allow 53/udp and 80 in the firewall", ["53/udp", "80/tcp"])])
def test_opening_ports_is_firewall_work_never_read_as_packages(text, opened):
    spec = parse_request(text, known_packages=["open-iscsi"])
    assert spec.open_ports == opened and not spec.unparsed
    assert not [p for p in spec.remove_packages + spec.add_packages if p.startswith(("open", "port", "allow"))]


@pytest.mark.parametrize(("text", "kept"), [("drop docker, podman is fine", "podman"),
                                            ("remove vim but nano stays", "nano")])
def test_an_item_affirmed_after_a_removal_is_not_removed(text, kept):
    spec = parse_request(text)
    assert kept not in spec.remove_packages and kept in spec.add_packages


def test_selinux_asks_for_mandatory_access_control_not_the_whole_hardening_set():
    assert parse_request("enable selinux enforcing").add_groups == ["mac"]
    assert parse_request("disable selinux").remove_groups == ["mac"]


@pytest.mark.parametrize(("text", "boot"), [
    ("a debian image that boots with legacy bios instead of uefi", "legacy"),
    ("switch from bios to uefi", "efi"),
    ("debian with uefi boot", "efi"),
    ("legacy boot please", "legacy"),
])
def test_the_boot_kind_named_last_wins_unless_it_is_the_one_replaced(text, boot):
    assert parse_request(text).boot_type == boot


def test_a_switch_named_off_after_it_is_off_and_its_words_are_not_misread():
    spec = parse_request("ubuntu 26.04 with secure boot turned off and kernel option nomodeset")
    assert spec.secure_boot is False
    assert spec.kernel_cmdline_append == ["nomodeset"]
    assert not spec.corrected and not spec.unparsed and not spec.add_packages  # "turned" is not "tuned"


@pytest.mark.parametrize(("text", "note"), [
    ("el10 for a raspberry pi 5 with podman", "UEFI firmware"),
    ("azure linux 3 on aws graviton with cloud-init", None),
])
def test_a_machine_named_instead_of_an_architecture_sets_it(text, note):
    spec = parse_request(text)
    assert spec.arch == "aarch64"
    assert (note is None and not spec.notes) or any(note in n for n in spec.notes)


def test_a_list_of_partitions_each_with_its_size():
    spec = parse_request("debian 13, 10G, partitions: /home 2G and /srv 3G, with rsync")
    assert [(p["mountPoint"], p["size"]) for p in spec.partitions] == [("/home", "2GiB"), ("/srv", "3GiB")]
    assert spec.disk_size == "10GiB" and not spec.unparsed


def test_bounds_on_a_size_are_read_as_the_size():
    spec = parse_request("elxr 12 with at least 6 GB of disk and htop")
    assert spec.disk_size == "6GiB" and not spec.unparsed


def test_a_vendor_stack_the_archives_lack_is_said_and_not_replaced_by_a_generic_one():
    spec = parse_request("ubuntu 24.04 nvidia gpu compute node with cuda")
    assert "graphics" not in spec.add_groups  # the Intel/Mesa media stack is no NVIDIA driver
    assert any(n.startswith("nvidia gpu, cuda not applied: ") and "repositories" in n for n in spec.notes), spec.notes
    assert "graphics" in parse_request("ubuntu with gpu media acceleration").add_groups


def test_a_word_resolves_to_a_package_one_word_longer_never_to_a_versioned_build():
    spec = parse_request("add intel", known_packages=["intel-dlstreamer_2025.2.0"])
    assert spec.add_packages == []
    assert parse_request("add zzq", known_packages=["zzq-agent"]).add_packages == ["zzq-agent"]


@pytest.mark.parametrize(("text", "kept"), [
    ("elxr image with openvpn", "openvpn"),  # two edits from openvino: another name, not a slip
    ("ubuntu for a PLC controller", "controller"),  # another form of "control", not a misspelling of it
    ("debian compute node", "compute"),  # nor "compute" of "computer"
])
def test_a_word_is_read_as_another_only_for_a_slip_of_the_fingers(text, kept):
    spec = parse_request(text, known_packages=["openvino"])
    assert not [c for c in spec.corrected if c.startswith(kept + " ->")], spec.corrected


@pytest.mark.parametrize(("text", "packages"), [
    ("debian 13 NAS with samba and nfs", ["samba", "nfs"]),
    ("el10 mail server with postfix, dovecot", ["postfix", "dovecot"]),
    ("debian router with dnsmasq", ["dnsmasq"]),  # the daemon itself, not dnsmasq-base
    ("elxr with openvpn client", ["openvpn"]),  # "client" says what openvpn is, no wish of its own
])
def test_server_software_named_by_its_word_is_a_package_without_an_index(text, packages):
    spec = parse_request(text, known_packages=["dnsmasq-base", "nfs-utils"])
    assert [p for p in spec.add_packages if p in packages] == packages and not spec.unparsed, spec


@pytest.mark.parametrize(("text", "package", "wanted"), [
    ("ubuntu for a digital signage screen", "screen", False),
    ("debian 13 with tmux, screen and htop", "screen", True),
    ("install screen on debian", "screen", True),
    ("which distro has the smallest image", "which", False),
])
def test_a_package_named_by_an_everyday_word_only_where_a_package_is_named(text, package, wanted):
    assert (package in parse_request(text).add_packages) is wanted


@pytest.mark.parametrize(("text", "group"), [
    ("ubuntu vm image for qemu", "vm-guest"),  # where the image runs: its guest agent
    ("el10 image that runs on kvm", "vm-guest"),
    ("debian 13 kvm virtualization host", "virtualization"),  # what the image is
    ("ubuntu server for kvm hosts", "virtualization"),
    ("ubuntu 24.04 for vmware esxi", "vmware-guest"),
])
def test_a_hypervisor_named_as_where_the_image_runs_asks_for_its_guest_agent(text, group):
    spec = parse_request(text)
    assert group in spec.add_groups and not ({"virtualization", "vm-guest"} - {group}) & set(spec.add_groups), spec


def test_nothing_else_asks_for_nothing_beyond_what_was_named():
    assert parse_request("debian 13 with ssh and curl, nothing else").minimal


@pytest.mark.parametrize(("text", "params"), [
    ("debian 13 with kernel parameter console=ttyS0,115200", ["console=ttyS0,115200"]),
    ("kernel parameters quiet, console=ttyS0,115200 and nomodeset", ["quiet", "console=ttyS0,115200", "nomodeset"]),
])
def test_a_kernel_parameter_keeps_the_commas_of_its_value(text, params):
    assert parse_request(text).kernel_cmdline_append == params


@pytest.mark.parametrize(("text", "partitions", "disk"), [
    ("azure linux 3 image with a 500MB /boot and 8G for /", [("/boot", "500MiB"), ("/", "8GiB")], None),
    ("ubuntu image, 2 GB boot, 10 GB root", [("/boot", "2GiB"), ("/", "10GiB")], None),
    ("el10 image with /var on its own 20 GB partition", [("/var", "20GiB")], None),
    ("debian image with /home 30G and /var 10G, 64GB disk", [("/home", "30GiB"), ("/var", "10GiB")], "64GiB"),
    ("emt image with a 4 GB data partition mounted at /srv/data", [("/srv/data", "4GiB")], None),
    ("ubuntu server, /srv/backup on a separate 100G partition", [("/srv/backup", "100GiB")], None),
    ("debian with a 100G partition for /srv/backup", [("/srv/backup", "100GiB")], None),
    # a verb of having between the place and its size
    ("azl3 image with a 30 GB disk where /var/log gets 5 gigs", [("/var/log", "5GiB")], "30GiB"),
    ("debian 13, 40G disk, root gets 10 gigs and /home should get 20G", [("/home", "20GiB"), ("/", "10GiB")], "40GiB"),
    ("ubuntu 24.04, 100 GB disk; /data has 60G, /var takes 10G", [("/data", "60GiB"), ("/var", "10GiB")], "100GiB"),
])
def test_a_size_beside_a_mount_point_is_that_partition_not_the_disk(text, partitions, disk):
    spec = parse_request(text)
    assert [(p["mountPoint"], p["size"]) for p in spec.partitions] == partitions
    assert spec.disk_size == disk
    assert not spec.unparsed


@pytest.mark.parametrize("text", ["ubuntu image, 32GB/64GB", "debian with 16 GB data"])
def test_a_size_without_a_place_in_the_filesystem_stays_the_disk(text):
    spec = parse_request(text)
    assert not spec.partitions and spec.disk_size is not None


@pytest.mark.parametrize("text", ["el10 image with SELinux in permissive mode", "azl3, selinux permissive",
                                  "debian with apparmor in complain mode", "permissive selinux on emt"])
def test_a_mode_named_for_a_group_asks_for_the_group_in_that_mode(text):
    spec = parse_request(text)
    assert spec.add_groups == ["mac"] and spec.group_modes == {"mac": "permissive"}
    assert not spec.unparsed and not spec.add_packages


@pytest.mark.parametrize(("text", "removed"), [("debian 13 image with selinux disabled", "mac"),
                                               ("ubuntu image with the ssh server disabled", "ssh"),
                                               ("azure linux with docker, firewall turned off", "firewall")])
def test_a_thing_switched_off_after_it_is_left_out(text, removed):
    spec = parse_request(text)
    assert removed in spec.remove_groups and removed not in spec.add_groups
    assert not spec.unparsed


@pytest.mark.parametrize(("text", "reported"), [("ubuntu image using the lowlatency kernel", "lowlatency kernel"),
                                                ("ubuntu 24 with the hwe kernel", "hwe kernel")])
def test_a_kernel_flavour_no_group_knows_is_reported_not_read_past(text, reported):
    assert reported in parse_request(text).unparsed


@pytest.mark.parametrize("text", ["emt with the realtime kernel", "the latest kernel with kernel parameters quiet",
                                  "ubuntu with the generic kernel"])
def test_a_kernel_named_by_a_known_or_plain_word_is_not_reported(text):
    assert not [u for u in parse_request(text).unparsed if "kernel" in u]


@pytest.mark.parametrize("text", ["ubuntu image for running LXC system containers", "lxc containers host on debian"])
def test_system_containers_are_lxc_not_the_docker_engine(text):
    spec = parse_request(text)
    assert "system-containers" in spec.add_groups and "containers" not in spec.add_groups


@pytest.mark.parametrize(("text", "package"), [("ubuntu desktop with chromium browser", "chromium"),
                                               ("ubuntu with mosquitto broker", "mosquitto"),
                                               ("debian with postgresql database and redis", "postgresql")])
def test_the_kind_of_what_was_just_named_is_said_again_not_wished_for(text, package):
    spec = parse_request(text)
    assert package in spec.add_packages and not spec.unparsed
    assert not {"browser", "broker", "database"} & set(spec.add_packages)


@pytest.mark.parametrize(("text", "reported"), [("debian kiosk that logs in automatically", "logs in automatically"),
                                                ("ubuntu desktop with autologin", "autologin"),
                                                ("users log in over ssh on ubuntu", None)])
def test_logging_in_is_no_request_for_system_logs(text, reported):
    spec = parse_request(text)
    assert "logging" not in spec.add_groups and not spec.unparsed
    assert spec.autologin == reported


@pytest.mark.parametrize(("text", "package", "reported"), [
    ("an EMT image for a factory gateway that runs modbus and mosquitto", "mosquitto", "modbus"),
    ("ubuntu image with modbus, mosquitto", "mosquitto", "modbus"),
    ("debian with mosquitto and modbus", "mosquitto", "modbus"),
])
def test_a_word_listed_with_software_is_a_wish_of_that_kind_reported_when_unknown(text, package, reported):
    spec = parse_request(text)
    assert package in spec.add_packages
    assert spec.unparsed.count(reported) == 1, spec.unparsed


@pytest.mark.parametrize("text", ["a small and fast debian with docker", "a secure and hardened ubuntu with nginx"])
def test_words_listed_with_each_other_before_the_software_are_not_reported(text):
    assert not parse_request(text).unparsed


@pytest.mark.parametrize(("text", "reported"), [
    ("azure linux 3 vm image with cloud-init and no fancy banner", ["no fancy", "no banner"]),
    ("give me an ubuntu image where the guest user is disabled", ["no guest"]),  # root's: a setting (test_ssh_keys)
])
def test_a_removal_of_a_word_that_names_no_package_is_not_understood_not_done(text, reported):
    spec = parse_request(text)
    assert spec.unparsed == reported and not spec.remove_packages


def test_a_removal_by_the_short_name_of_an_installed_package_stays_a_removal():
    spec = parse_request("debian without timesyncd", known_packages=["systemd-timesyncd"])
    assert spec.remove_packages == ["timesyncd"] and not spec.unparsed


@pytest.mark.parametrize(("text", "removed", "added"), [
    ("I want telnet removed and openssh hardened on debian trixie", ["telnet"], []),
    ("ubuntu with nano and telnet uninstalled", ["nano", "telnet"], []),
    ("debian with nginx, and telnet removed", ["telnet"], ["nginx"]),
    ("ubuntu image, nano taken out", ["nano"], []),
])
def test_a_removal_said_after_the_package_removes_it(text, removed, added):
    spec = parse_request(text, known_packages=["telnet", "nano", "nginx"])
    assert spec.remove_packages == removed and spec.add_packages == added, spec
    assert not spec.unparsed


@pytest.mark.parametrize("text", ["debian 13 minimal, remove nano if present",
                                  "ubuntu without telnet if it is installed"])
def test_a_condition_on_a_removal_is_no_wish_of_its_own(text):
    spec = parse_request(text, known_packages=["telnet", "nano"])
    assert spec.remove_packages and not spec.unparsed


@pytest.mark.parametrize("text", ["an azure linux image that ships fluent-bit",
                                  "a debian image that contains fluent-bit",
                                  "ubuntu that carries fluent-bit"])
def test_verbs_that_say_what_an_image_holds_add(text):
    assert parse_request(text, known_packages=["fluent-bit"]).add_packages == ["fluent-bit"]


@pytest.mark.parametrize(("text", "user"), [
    ("ubuntu where there is a user called ops in the wheel group", {"name": "ops", "sudo": True, "groups": ["wheel"]}),
    ("debian, the admin user named deploy with sudo", {"name": "deploy", "sudo": True}),
])
def test_a_user_given_a_name_is_read_without_a_verb(text, user):
    (got,) = parse_request(text).users
    assert got == {"action": "add", **user}


@pytest.mark.parametrize(("text", "group"), [
    ("ubuntu iso with xfce desktop", "xfce-desktop"),
    ("a desktop image for debian with xfce", "xfce-desktop"),
    ("ubuntu desktop workstation with KDE plasma", "kde-desktop"),
    ("debian 13 with a gnome desktop", "gnome-desktop"),
])
def test_a_desktop_named_by_its_environment_stands_in_for_the_generic_one(text, group):
    spec = parse_request(text)
    assert group in spec.add_groups and "desktop" not in spec.add_groups


@pytest.mark.parametrize(("text", "params"), [
    ("ubuntu image, kernel command line should include console=ttyS0,115200 and quiet",
     ["console=ttyS0,115200", "quiet"]),
    ("debian, the kernel cmdline must have nomodeset", ["nomodeset"]),
])
def test_kernel_flags_after_a_verb_of_having_are_parameters(text, params):
    spec = parse_request(text)
    assert spec.kernel_cmdline_append == params and not spec.unparsed


@pytest.mark.parametrize(("text", "disk", "unread"), [
    ("debian with a package cache of 500MB", None, "500mb"),
    ("journald logs at 2G max, debian", None, "2g"),
    ("edge image with docker, 32GiB", "32GiB", None),
    ("ubuntu, total of 40G", "40GiB", None),
    ("ubuntu24: 8G", "8GiB", None),
    ("azure linux 3 with the disk grown to 12GB", "12GiB", None),
])
def test_a_lone_size_is_the_disk_unless_it_is_said_of_something_else(text, disk, unread):
    spec = parse_request(text)
    assert spec.disk_size == disk
    assert (unread in spec.unparsed) if unread else not spec.unparsed, spec.unparsed


@pytest.mark.parametrize(("text", "fs"), [("azure linux 3 with ext4 on root", "ext4"),
                                          ("debian with an xfs root filesystem", "xfs"),
                                          ("ubuntu, root as ext3", "ext3")])
def test_the_root_filesystem_named_in_words(text, fs):
    spec = parse_request(text)
    assert spec.partitions == [{"action": "resize", "mountPoint": "/", "size": None, "fsType": fs}]
    assert not spec.unparsed


def test_a_shell_named_before_the_user_it_is_for():
    spec = parse_request("ubuntu 26.04 minimal with zsh as the default shell for user dev")
    assert spec.users == [{"action": "add", "name": "dev", "shell": "/bin/zsh"}] and not spec.unparsed
    assert spec.add_packages == ["zsh"]  # the shell is installed with the user who logs in with it
    assert parse_request("add user ops with shell fish").add_packages == ["fish"]


def test_a_machine_named_beside_an_architecture_keeps_its_note_or_says_it_differs():
    pi = parse_request("debian 13 arm64 image for a raspberry pi 5")
    assert pi.arch == "aarch64" and any(n.startswith("raspberry pi 5: ") for n in pi.notes) and not pi.unparsed
    other = parse_request("x86_64 image for a raspberry pi")
    assert other.arch == "x86_64" and any("aarch64 machine" in u for u in other.unparsed)


@pytest.mark.parametrize(("text", "group"), [("debian with bluetooth", "bluetooth"), ("ubuntu with zram", "zram"),
                                             ("azure linux for hyper-v with the hyperv daemons", "hyperv-guest")])
def test_more_capabilities_by_their_words(text, group):
    spec = parse_request(text)
    assert group in spec.add_groups and not spec.unparsed


@pytest.mark.parametrize(("text", "configured"), [("also root login should be off", "PermitRootLogin no"),
                                                  ("password login must stay disabled", "PasswordAuthentication no")])
def test_a_modal_verb_before_a_switch_keeps_its_direction(text, configured):
    spec = parse_request(text)
    assert any(configured in c["cmd"] for c in spec.configurations) and not spec.notes
    assert parse_request("ipv6 must stay disabled").kernel_cmdline_append == ["ipv6.disable=1"]


@pytest.mark.parametrize(("text", "configured"), [
    ("actually disallow root login over ssh", "PermitRootLogin no"),
    ("deny password logins", "PasswordAuthentication no"),
    ("root login over ssh is prohibited", "PermitRootLogin no"),
    ("ban root ssh login", "PermitRootLogin no"),
    ("refuse password authentication", "PasswordAuthentication no"),
])
def test_verbs_of_forbidding_switch_a_setting_off(text, configured):
    spec = parse_request(text)
    assert any(configured in c["cmd"] for c in spec.configurations) and not spec.notes and not spec.unparsed


@pytest.mark.parametrize("text", [
    "a hardened el10 image: auditd, aide, and ssh that refuses passwords",
    "ssh that does not accept passwords",
    "sshd won't accept password logins",
    "ssh rejecting passwords",
    "ssh with passwords disabled",
    "debian box, ssh, password logins turned off",
])
def test_ssh_refusing_passwords_in_any_verb_form_turns_password_login_off(text):
    spec = parse_request(text)
    assert any("PasswordAuthentication no" in c["cmd"] for c in spec.configurations) and not spec.unparsed


def test_a_users_password_is_no_ssh_setting():
    spec = parse_request("user bob with password disabled")
    assert not any("PasswordAuthentication" in c["cmd"] for c in spec.configurations)


@pytest.mark.parametrize(("text", "removed", "added"), [
    ("swap the ssh server for dropbear", {"remove_groups": ["ssh"]}, ["dropbear"]),
    ("replace the nano editor with vim", {"remove_packages": ["nano"]}, ["vim"]),
])
def test_a_replacement_reads_past_articles_and_the_kind_of_software(text, removed, added):
    spec = parse_request(text)
    for field, names in removed.items():
        assert getattr(spec, field) == names
    assert spec.add_packages == added and "server" not in spec.remove_packages and not spec.unparsed


@pytest.mark.parametrize(("text", "groups"), [
    ("azure linux 3 cloud vm image for hyper-v and kvm", ["cloud-init", "hyperv-guest", "vm-guest"]),
    ("ubuntu for proxmox or vmware", ["vm-guest", "vmware-guest"]),
    ("debian for kvm hosts and docker", ["virtualization", "containers"]),
])
def test_platforms_listed_after_for_are_all_where_the_image_runs(text, groups):
    spec = parse_request(text)
    assert spec.add_groups == groups
    assert "virt" not in spec.use_cases or "virtualization" in groups


@pytest.mark.parametrize(("text", "azure"), [("an azure vm image on azure linux", True),
                                             ("ubuntu 24.04 vm for azure", True),
                                             ("azure linux 3 minimal", False), ("azure-linux 3 with nginx", False)])
def test_azure_the_cloud_is_not_azure_linux_the_distribution(text, azure):
    assert ("azure-guest" in parse_request(text).add_groups) == azure


@pytest.mark.parametrize(("text", "field", "value"), [
    ("turn off docker", "remove_groups", ["containers"]),
    ("switch off the firewall", "remove_groups", ["firewall"]),
    ("switch on the firewall", "add_groups", ["firewall"]),
    ("make nginx go away and use apache instead", "remove_packages", ["nginx"]),
    ("have telnet and nano removed", "remove_packages", ["telnet", "nano"]),
    ("harden it", "add_groups", ["security"]),
    ("actually put ssh back", "add_groups", ["ssh"]),
])
def test_phrasal_and_causative_verbs_keep_their_direction(text, field, value):
    spec = parse_request(text, known_packages=["nginx", "apache2", "telnet", "nano"])
    assert getattr(spec, field) == value and not spec.unparsed, spec
    assert not (set(spec.add_packages) & set(spec.remove_packages))


@pytest.mark.parametrize(("text", "arch"), [("ubuntu for a robot arm controller", None),
                                            ("ros 2 on a robotic arm", None),
                                            ("an arm board with ubuntu", "aarch64")])
def test_arm_after_a_word_for_a_machine_limb_is_not_the_architecture(text, arch):
    assert parse_request(text).arch == arch


@pytest.mark.parametrize("text", ["ubuntu 24.04 with nginx started at boot", "enable nginx on boot",
                                  "debian with nginx enabled as a service"])
def test_starting_a_service_at_boot_adds_the_software_and_says_the_start_is_not_written(text):
    spec = parse_request(text, known_packages=["nginx"])
    assert spec.add_packages == ["nginx"] and not spec.unparsed and not spec.configurations
    assert any(n.startswith("starting nginx at boot not applied") for n in spec.notes), spec.notes


def test_software_started_at_boot_is_no_item_of_a_removal_after_it():
    """"nginx enabled at boot and apache disabled" had removed both."""
    spec = parse_request("ubuntu 24.04 with nginx enabled at boot and apache disabled")
    assert spec.add_packages == ["nginx"] and spec.remove_packages == ["apache2"]


@pytest.mark.parametrize(("text", "users"), [
    ("debian 13 with two users: alice with sudo and bob without",
     [{"action": "add", "name": "alice", "sudo": True}, {"action": "add", "name": "bob", "sudo": False}]),
    ("ubuntu, users alice, bob and carol",
     [{"action": "add", "name": n} for n in ("alice", "bob", "carol")]),
])
def test_several_users_listed_after_users(text, users):
    spec = parse_request(text)
    assert spec.users == users and not spec.unparsed


def test_kernel_flags_named_alone_are_added_or_taken_out():
    spec = parse_request("ubuntu 24.04 with the kernel parameter nomodeset and without splash")
    assert spec.kernel_cmdline_append == ["nomodeset"] and spec.kernel_cmdline_remove == ["splash"]
    assert parse_request("ubuntu desktop, no quiet boot").kernel_cmdline_remove == ["quiet"]
    assert not parse_request("ubuntu desktop, no quiet boot").unparsed


@pytest.mark.parametrize(("text", "field", "value"), [
    ("make the disk twice as big", "disk_size_delta", "x2"),
    ("shrink it back to 4GB", "disk_size", "4GiB"),
    ("grow the disk to 40G", "disk_size", "40GiB"),
])
def test_disk_size_edits_said_of_it(text, field, value):
    spec = parse_request(text)
    assert getattr(spec, field) == value and not spec.unparsed


@pytest.mark.parametrize(("text", "user"), [
    ("change deploy's shell to bash", {"action": "add", "name": "deploy", "shell": "/bin/bash"}),
    ("give the admin user a zsh shell", {"action": "add", "name": "admin", "shell": "/bin/zsh"}),
])
def test_a_users_shell_changed_in_words(text, user):
    spec = parse_request(text)
    assert spec.users == [user] and not spec.unparsed
    assert "bash" not in spec.add_packages  # bash is in every base system; the word is the shell, not a wish


def test_a_shell_with_no_user_is_reported():
    spec = parse_request("change the login shell to zsh")
    assert not spec.users and any("no user named" in u for u in spec.unparsed)


def test_an_unknown_name_after_a_quiet_verb_is_reported_not_dropped():
    spec = parse_request("nginx is not needed anymore, use traefik", known_packages=["nginx"])
    assert spec.remove_packages == ["nginx"] and spec.unparsed == ["traefik"]


def test_a_web_address_is_the_kiosks_page_and_no_words_of_its_own():
    spec = parse_request("debian 13 for a kiosk showing https://example.com/board?id=3 in chromium")
    (entry,) = spec.configurations
    assert entry["cmd"] == "mkdir -p /etc/kiosk && echo 'https://example.com/board?id=3' > /etc/kiosk/url"
    assert entry["edits_only"] and "kiosk" in spec.add_groups
    assert "httpd" not in spec.add_packages and not spec.unparsed


@pytest.mark.parametrize(("text", "added", "removed"), [
    ("a hardened debian, no root, fail2ban and auditd", ["fail2ban", "auditd"], []),
    ("debian with nginx, no docker, redis", ["nginx", "redis"], []),
    ("no docker, podman or lxc", [], ["podman", "lxc"]),
    ("without docker, podman and lxc", [], ["podman", "lxc"]),
])
def test_no_takes_one_item_up_to_a_comma_unless_the_list_is_joined_by_or(text, added, removed):
    spec = parse_request(text, known_packages=["fail2ban", "auditd", "nginx", "redis", "podman", "lxc"])
    assert spec.add_packages == added and spec.remove_packages == removed


def test_ssh_with_keys_only_turns_password_login_off():
    spec = parse_request("a hardened debian that only allows ssh with keys")
    (entry,) = spec.configurations
    assert "PasswordAuthentication no" in entry["cmd"] and not spec.unparsed


@pytest.mark.parametrize(("text", "user", "password_note"), [
    ("debian 13 image where the default user is pi with password raspberry", {"action": "add", "name": "pi"}, True),
    ("a debian where the admin user is ops", {"action": "add", "name": "ops", "sudo": True}, False),
])
def test_a_user_named_by_is(text, user, password_note):
    spec = parse_request(text)
    assert spec.users == [user] and not spec.unparsed
    assert any("not stored" in n for n in spec.notes) == password_note
    assert not parse_request("ubuntu where the user is created later").users


def test_a_word_that_is_only_part_of_a_longer_name_is_corrected_to_only_beside_the_rest():
    assert parse_request("ubuntu 24.04 for gaming with steam").unparsed == ["steam"]  # no misspelt "stream"
    assert parse_request("centos strem 10").dist == "el10"


def test_a_partition_that_takes_the_rest_and_ports_said_open_after_them():
    spec = parse_request("debian 13 with 2 partitions: / 10G and /data using the rest")
    assert spec.partitions == [
        {"action": "add", "mountPoint": "/", "size": "10GiB", "fsType": None, "fill": False},
        {"action": "add", "mountPoint": "/data", "size": None, "fsType": None, "fill": True}]
    assert not spec.unparsed
    ports = parse_request("ubuntu with the firewall enabled and only ports 22 and 443 open")
    assert ports.add_groups == ["firewall"] and not ports.add_packages  # "open" is no open-iscsi
    assert ports.open_ports == ["22/tcp", "443/tcp"] and not ports.unparsed
    assert any(n.startswith("only the ports named: not enforced") for n in ports.notes)


@pytest.mark.parametrize(("text", "fs", "where"), [
    ("an image that uses btrfs for root instead of ext4", "btrfs", "root"),
    ("debian with root on f2fs", "f2fs", "root"),
    ("a 20G /data partition formatted as zfs", "zfs", "/data"),
])
def test_a_filesystem_the_build_cannot_make_is_reported_and_not_written(text, fs, where):
    spec = parse_request(text)
    assert not any(p.get("fsType") for p in spec.partitions)
    assert any(u.startswith(f"{fs} on {where}:") and "ext4" in u for u in spec.unsupported)
    assert not spec.add_packages and not spec.remove_packages  # neither "uses" nor "ext4" is a package
    if where != "root":
        assert [p["mountPoint"] for p in spec.partitions] == [where]  # the partition itself is still added


@pytest.mark.parametrize("text", ["xfs instead of ext4", "use xfs for root rather than ext4"])
def test_one_filesystem_instead_of_another_is_the_roots(text):
    spec = parse_request(text)
    assert spec.partitions == [{"action": "resize", "mountPoint": "/", "size": None, "fsType": "xfs"}]
    assert not spec.remove_packages and not spec.add_packages


@pytest.mark.parametrize(("text", "unknown"), [
    ("python3, pip and numpy on emt", "numpy"),
    ("docker, portainer", "portainer"),
    ("a gateway that runs modbus and mosquitto", "modbus"),
])
def test_an_unknown_word_joined_to_software_in_a_list_is_reported(text, unknown):
    assert unknown in parse_request(text, known_packages=["mosquitto"]).unparsed


@pytest.mark.parametrize("text", ["use xfs for the root partition", "the root filesystem should be xfs",
                                  "root must be xfs", "xfs on the root filesystem"])
def test_the_roots_filesystem_said_with_a_verb_or_for_the_root_partition(text):
    spec = parse_request(text)
    assert spec.partitions == [{"action": "resize", "mountPoint": "/", "size": None, "fsType": "xfs"}]
    assert not spec.unparsed and not spec.add_packages


@pytest.mark.parametrize(("text", "removed"), [("get rid of ssh, we use the console", "ssh"),
                                               ("remove docker, I run podman myself", "containers")])
def test_a_comma_before_a_subject_of_its_own_ends_what_the_verb_governs(text, removed):
    spec = parse_request(text)
    assert removed in spec.remove_groups
    assert not spec.remove_packages and not spec.unparsed


@pytest.mark.parametrize("text", ["remove docker, use podman", "without docker, need podman",
                                  "I changed my mind about docker, use podman", "drop docker and use podman"])
def test_a_verb_of_using_after_the_items_of_a_removal_asks_again(text):
    spec = parse_request(text)
    assert "containers" in spec.remove_groups
    assert "podman" in spec.add_packages and "podman" not in spec.remove_packages


@pytest.mark.parametrize("text", ["don't want docker", "no need for docker", "we do not need docker"])
def test_a_verb_of_wanting_right_after_a_negation_stays_a_removal(text):
    spec = parse_request(text)
    assert "containers" in spec.remove_groups and "containers" not in spec.add_groups


@pytest.mark.parametrize(("text", "edit"), [("can we get nginx in there as well?", True),
                                            ("could I have a 10G disk?", True),
                                            ("can i use btrfs for root?", False)])
def test_asking_to_be_given_something_is_an_edit(text, edit):
    from image_composer_mcp.server.composer.request_parser import is_question
    assert is_question(text) is not edit


@pytest.mark.parametrize(("text", "removed"), [("kill the cloud-init stuff", "cloud-init"), ("nuke telnet", "telnet"),
                                               ("scrap telnet", "telnet")])
def test_blunt_verbs_of_removal(text, removed):
    spec = parse_request(text, known_packages=["cloud-init", "telnet"])
    assert spec.remove_packages == [removed] and not spec.add_packages


@pytest.mark.parametrize("text", ["lock down root login", "root login must be blocked", "block root login"])
def test_locking_or_blocking_a_switch_turns_it_off(text):
    spec = parse_request(text)
    assert [c["label"] for c in spec.configurations] == ["root login off"]
    assert not spec.unparsed and not spec.notes


@pytest.mark.parametrize("text", ["let's not have docker after all", "no docker for now", "on second thought, no docker"])
def test_asides_carry_no_wish(text):
    spec = parse_request(text)
    assert spec.remove_groups == ["containers"] and not spec.unparsed


@pytest.mark.parametrize(("text", "hostname", "unread"), [
    ("make the hostname match the role: web-01", "web-01", None),
    ("make the hostname match the role", None, "hostname match the role"),
    ("add the hostname package", None, None),
])
def test_a_hostname_is_a_name_never_the_verb_after_it(text, hostname, unread):
    spec = parse_request(text)
    assert spec.hostname == hostname
    assert any(u.startswith(unread) for u in spec.unparsed) if unread else not spec.unparsed


def test_partition_sizes_in_parentheses_and_the_rest_without_a_verb():
    spec = parse_request("a 32 GB disk split into / (16G) and /data (rest)")
    assert spec.disk_size == "32GiB" and not spec.unparsed
    assert [(p["mountPoint"], p["size"], p["fill"]) for p in spec.partitions] == [("/", "16GiB", False),
                                                                                   ("/data", None, True)]
    spec = parse_request("partitions: /boot 1G, / 20G, /home the rest")
    assert [(p["mountPoint"], p["size"], p["fill"]) for p in spec.partitions] == [
        ("/boot", "1GiB", False), ("/", "20GiB", False), ("/home", None, True)]


@pytest.mark.parametrize(("text", "size"), [("debian, python3 and a 16GB card", "16GiB"),
                                            ("ubuntu for a 64GB eMMC", "64GiB"), ("flash it to a 32G sd card", "32GiB")])
def test_the_medium_an_image_is_written_to_is_its_disk(text, size):
    spec = parse_request(text)
    assert spec.disk_size == size and not spec.unparsed


def test_an_item_allowed_after_a_removal_is_kept_and_keys_only_is_read():
    spec = parse_request("ubuntu 24 with podman but without docker, ssh allowed only with keys")
    assert "ssh" in spec.add_groups and "ssh" not in spec.remove_groups and "containers" in spec.remove_groups
    assert [c["label"] for c in spec.configurations] == ["key-only ssh on"]
    assert "PasswordAuthentication no" in spec.configurations[0]["cmd"]
    assert not spec.unparsed


def test_a_plural_is_read_as_its_singular_without_being_reported_as_a_misspelling():
    spec = parse_request("aarch64 azure linux for ampere servers with docker")
    assert "server" in spec.use_cases and not spec.corrected
    assert parse_request("ubuntu with dokcer").corrected == ["dokcer -> docker"]


def test_an_unsupported_release_is_named_without_the_label_of_the_supported_one():
    (said,) = parse_request("LAMP stack on a rhel 9 compatible image").unsupported
    assert said.startswith("Red Hat compatible distribution 9:") and "(EL10)" not in said


# ---- words a request uses around what it wants ------------------------------------------------------------
@pytest.mark.parametrize(("text", "reported"), [
    ("debian 13 for a mini pc running uptime kuma", ["uptime kuma"]),
    ("edge box running k3s and uptime-kuma", ["uptime-kuma"]),
    ("an image that runs fast", []),
    ("a kiosk running in a mall", []),
])
def test_one_or_two_unread_words_a_run_verb_names_are_reported(text, reported):
    assert parse_request(text).unparsed == reported


@pytest.mark.parametrize("text", [
    "give me a bootable debian iso with firmware for wifi cards",
    "debian 13 appliance with a static hostname sensor-07",
    "azure linux with redis, root partition 20G, separate /var of 10G",
    "debian with a separate partition for logs",
])
def test_words_that_only_describe_what_is_read_are_not_reported(text):
    assert parse_request(text).unparsed == []


def test_a_partition_for_a_named_place_and_a_kind_noun_for_software():
    assert [p["mountPoint"] for p in parse_request("debian with a separate partition for logs").partitions] == \
        ["/var/log"]
    assert parse_request("debian iso with firmware for wifi cards").add_groups == ["wifi"]
    assert parse_request("debian with firmware").add_groups == ["firmware"]  # alone it is the firmware group


@pytest.mark.parametrize(("text", "address"), [
    ("forward logs to 10.0.0.5:514", "10.0.0.5:514"),
    ("ubuntu with remote syslog server logs.example.com", "logs.example.com"),
    ("send logs to the server 192.168.1.20", "192.168.1.20"),
])
def test_remote_logging_forwards_to_the_address_given(text, address):
    spec = parse_request(text)
    assert [c["cmd"] for c in spec.configurations] == \
        [f"mkdir -p /etc/rsyslog.d && echo '*.* @@{address}' > /etc/rsyslog.d/90-remote.conf"]
    assert spec.configurations[0]["packages"] == ["rsyslog"] and not spec.unparsed


def test_remote_logging_with_no_address_is_reported_not_claimed():
    spec = parse_request("debian image that sends its logs to a remote syslog server")
    assert not spec.configurations
    assert spec.unparsed == ["remote logging: no server address named with it "
                             "(e.g. 'remote syslog server logs.example.com:514')"]


@pytest.mark.parametrize(("text", "group", "mount"), [
    ("azure linux image with a separate partition for docker of 40GB", "containers", "/var/lib/docker"),
    ("emt image with a 20G partition for containers", "containers", "/var/lib/containers"),
    ("give docker its own 30G partition", "containers", "/var/lib/docker"),
])
def test_a_partition_added_for_software_asks_for_the_software(text, group, mount):
    spec = parse_request(text)
    assert group in spec.add_groups and not spec.unparsed
    assert [p["mountPoint"] for p in spec.partitions if p["action"] == "add"] == [mount]


def test_a_partition_for_a_package_asks_for_it_and_removing_one_asks_for_nothing():
    assert "postgresql" in parse_request("a 50G postgresql partition").add_packages
    spec = parse_request("remove the docker partition")
    assert not spec.add_groups and not spec.remove_groups and not spec.add_packages


@pytest.mark.parametrize("text", ["ubuntu 24.04 image for a robot running ROS 2 Humble", "humble ros on ubuntu",
                                  "ros2 foxy for a robot"])
def test_a_release_of_software_that_is_not_installed_is_said_with_what_is(text):
    spec = parse_request(text)
    assert spec.add_groups == ["ros2"] and not spec.unparsed
    (note,) = [n for n in spec.notes if "not written" in n]
    assert "Ubuntu 2" in note and "Jazzy" in note  # the release's own Ubuntu, and what the image gets


def test_a_release_word_away_from_its_software_is_an_ordinary_word():
    spec = parse_request("a humble little server with ros 2 jazzy")
    assert spec.add_groups == ["ros2"] and not any("not written" in n for n in spec.notes)


@pytest.mark.parametrize("text", ["ubuntu server with drivers for the nvidia gpu", "support for nvidia cards",
                                  "nvidia drivers please"])
def test_what_is_asked_for_a_vendor_stack_is_said_with_it_not_reported_apart(text):
    spec = parse_request(text)
    assert not spec.unparsed
    assert any("nvidia" in n and "not applied" in n for n in spec.notes)


@pytest.mark.parametrize("text", ["debian kiosk that is always on", "a signage player running 24/7",
                                  "a server that never goes to sleep", "disable suspend and hibernation",
                                  "el10 box that runs around the clock"])
def test_a_machine_that_must_not_sleep_masks_the_sleep_targets(text):
    spec = parse_request(text)
    assert not spec.unparsed
    assert [c["cmd"] for c in spec.configurations] == [
        "systemctl mask sleep.target suspend.target hibernate.target hybrid-sleep.target"]


# ---- reading classes of 2026-11-26 (second session): scopes, machine names, swap, filesystems ---------------
@pytest.mark.parametrize(("text", "added", "removed"), [
    ("emt 3 image with k3s preinstalled and swap disabled", ["k3s"], []),
    ("ubuntu with ssh enabled and telnet removed", [], []),
    ("debian with nginx installed and apache removed", ["nginx"], ["apache2"]),
    ("debian with nginx and apache removed", [], ["nginx", "apache2"]),
])
def test_a_negation_after_its_object_stops_at_an_item_stated_present(text, added, removed):
    spec = parse_request(text)
    assert spec.add_packages == added and spec.remove_packages == removed
    assert "ssh" not in spec.remove_groups


def test_after_its_object_for_says_what_a_removal_serves_not_one_more_item():
    assert parse_request("disable swap for kubernetes").remove_groups == []
    assert parse_request("no need for docker").remove_groups == ["containers"]
    assert parse_request("without any need for ssh").remove_groups == ["ssh"]


@pytest.mark.parametrize(("text", "mount", "fs"), [
    ("rocky 9 image with podman and a 30GiB /data partition formatted xfs", "/data", "xfs"),
    ("put /var/log on its own 5G partition formatted xfs", "/var/log", "xfs"),
    ("/data in a separate partition of 50G formatted as ext3", "/data", "ext3"),
    ("/home on its own xfs partition of 20G", "/home", "xfs"),
])
def test_a_filesystem_named_after_its_partition_is_its_type(text, mount, fs):
    spec = parse_request(text)
    (part,) = spec.partitions
    assert (part["mountPoint"], part["fsType"]) == (mount, fs) and not spec.unparsed


@pytest.mark.parametrize(("text", "host"), [
    ("rename the machine to nuc-07", "nuc-07"), ("call the box gw-1", "gw-1"),
    ("alma linux server named web01", "web01"), ("the machine should be called lab-3", "lab-3"),
    ("ubuntu 24.04 image with the hostname set to kiosk-1", "kiosk-1"), ("hostname changed to db-2", "db-2"),
])
def test_a_machine_named_by_a_verb_or_a_participle_gets_that_host_name(text, host):
    spec = parse_request(text)
    assert spec.hostname == host and not spec.unparsed and spec.name is None


def test_a_machine_named_after_something_has_no_host_name():
    assert parse_request("debian for a device named after the customer").hostname is None


def test_counted_users_may_follow_a_comma():
    spec = parse_request("kubernetes worker node on azure linux with containerd and two users, admin and ops")
    assert [u["name"] for u in spec.users] == ["admin", "ops"] and not spec.unparsed


@pytest.mark.parametrize("text", ["it goes on a physical intel NUC, not a vm", "ubuntu server, not a virtual machine",
                                  "debian on real hardware rather than a cloud instance"])
def test_a_virtual_machine_denied_is_a_machine_of_its_own(text):
    spec = parse_request(text)
    assert spec.hardware and not spec.unparsed


def test_vm_tools_denied_are_not_a_machine_of_its_own():
    assert not parse_request("debian without the vm guest agent").hardware


@pytest.mark.parametrize(("text", "size"), [("tiny elxr image with only busybox and ssh, under 1 GB", "1GiB"),
                                            ("an image no bigger than 2 GB", "2GiB"),
                                            ("debian with nginx, at most 4G", "4GiB")])
def test_a_lone_size_as_an_upper_bound_is_read_with_its_words(text, size):
    spec = parse_request(text)
    assert spec.disk_size == size and not spec.unparsed


def test_a_user_qualified_with_a_hyphen_is_no_setting():
    spec = parse_request("azure linux container host with docker compose and a non-root user called deploy")
    assert [u["name"] for u in spec.users] == ["deploy"]
    assert not spec.configurations and not spec.unparsed and not spec.notes
    assert [c["label"] for c in parse_request("disable the root user").configurations] == ["root account off"]


@pytest.mark.parametrize(("text", "firewall", "opened"), [
    ("el10 image with firewalld allowing only ssh and https", "firewalld", ["ssh", "https"]),
    ("ubuntu with ufw that allows ssh", "ufw", ["ssh"]),
    ("firewall allowing port 22 and nginx installed", None, ["22/tcp"]),
])
def test_what_a_firewall_lets_through_is_its_openings_not_packages(text, firewall, opened):
    spec = parse_request(text)
    assert "httpd" not in spec.add_packages and "openssh-server" not in spec.add_packages
    assert firewall in spec.add_packages if firewall else "firewall" in spec.add_groups
    assert spec.open_ports == opened and not spec.unparsed


def test_what_a_firewall_lets_through_that_is_no_port_or_service_is_reported():
    spec = parse_request("debian with ufw allowing the office network")
    assert any(u.startswith("allowing the") and "firewall rules are not written" in u for u in spec.unparsed)
    assert not spec.open_ports


def test_a_guest_account_denied_is_no_statement_about_the_machine():
    assert not parse_request("no guest account").hardware


@pytest.mark.parametrize(("text", "family", "arch"), [
    ("RHEL-like image with fail2ban", "redhat-compatible-distro", None),
    ("a CentOS-style server", "redhat-compatible-distro", None),
    ("a Red Hat-compatible image", "redhat-compatible-distro", None),
    ("make it Rocky-based", "redhat-compatible-distro", None),
    ("a Debian-derived appliance", "debian", None),
    ("an arm-based board with ubuntu", "ubuntu", "aarch64"),
])
def test_a_distribution_or_architecture_joined_to_a_suffix_of_likeness_is_named(text, family, arch):
    spec = parse_request(text)
    assert (spec.os, spec.arch) == (family, arch)
    assert not spec.unparsed


@pytest.mark.parametrize(("text", "added", "removed"), [
    ("docker-ready ubuntu image", "containers", None),
    ("a security-hardened debian image", "security", None),
    ("a ROS-based robot on ubuntu", "ros2", None),
    ("docker-free debian image", None, "containers"),
    ("GUI-less ubuntu box", None, "desktop"),
])
def test_a_capability_joined_to_a_qualifying_suffix_is_asked_for_or_left_out(text, added, removed):
    spec = parse_request(text)
    assert (added in spec.add_groups) if added else not spec.add_groups
    assert (removed in spec.remove_groups) if removed else not spec.remove_groups


@pytest.mark.parametrize("text", ["a production-ready image", "a battle-tested base", "a well-based guess"])
def test_an_unknown_word_joined_to_a_suffix_stays_one_word(text):
    spec = parse_request(text)
    assert not spec.add_groups and not spec.add_packages and not spec.os


@pytest.mark.parametrize(("text", "users"), [
    ("ubuntu image with 2 users: alice (admin) and bob", [("alice", True), ("bob", None)]),
    ("users alice (sudo), bob (no sudo) and carol", [("alice", True), ("bob", False), ("carol", None)]),
    ("users carol and dave; carol should be an administrator", [("carol", True), ("dave", None)]),
    ("users alice and bob, alice is an admin", [("alice", True), ("bob", None)]),
    ("give ops sudo", [("ops", True)]),
    ("grant sudo rights to deploy", [("deploy", True)]),
    ("make bob an admin", [("bob", True)]),
    ("user ops should get sudo rights", [("ops", True)]),
])
def test_users_are_read_with_the_role_given_to_them(text, users):
    spec = parse_request(text)
    assert [(u["name"], u.get("sudo")) for u in spec.users] == users
    assert not spec.unparsed


@pytest.mark.parametrize("text", ["the image is an admin tool", "docker should have sudo", "it should have sudo"])
def test_a_role_said_of_no_user_names_no_user(text):
    assert not parse_request(text).users


@pytest.mark.parametrize(("text", "params"), [
    ("emt3 image with quiet and splash on the kernel command line", ["quiet", "splash"]),
    ("emt3 image with nohz_full=1-3 on the kernel command line", ["nohz_full=1-3"]),
    ("elxr image with console=ttyS0,115200 on the kernel command line", ["console=ttyS0,115200"]),
])
def test_flags_named_before_the_kernel_command_line_are_read_with_where_they_go(text, params):
    spec = parse_request(text)
    assert spec.kernel_cmdline_append == params
    assert not spec.unparsed


@pytest.mark.parametrize("text", ["also export it as a vhd", "azure linux vm image exported as vhdx",
                                  "write a vmdk as well"])
def test_a_verb_of_output_before_a_disk_format_is_read_with_it(text):
    spec = parse_request(text)
    assert len(spec.artifacts) == 1 and not spec.unparsed


@pytest.mark.parametrize(("text", "users"), [
    ("add user webadmin, no sudo", [("webadmin", False)]),
    ("add user ops, with sudo, and nginx", [("ops", True)]),
    ("ubuntu 24.04 user marco with admin rights", [("marco", True)]),
    ("ubuntu 24.04 user marco as administrator", [("marco", True)]),
    ('the user is "marco" with admin rights', [("marco", True)]),
    ("a user named lisa, she should not be an admin though", [("lisa", False)]),
    ("add user bob, he is an admin", [("bob", True)]),
])
def test_a_role_said_past_a_users_comma_or_by_a_pronoun_is_the_users(text, users):
    spec = parse_request(text)
    assert [(u["name"], u.get("sudo")) for u in spec.users] == users
    assert "sudo" not in spec.remove_packages and not spec.unparsed


def test_a_comma_then_a_removal_that_is_no_role_stays_a_removal():
    spec = parse_request("add user ops, no docker")
    assert [u.get("sudo") for u in spec.users] == [None] and "containers" in spec.remove_groups


@pytest.mark.parametrize(("text", "host"), [
    ("debian 13, the machine name is webserver", "webserver"), ("name of machine is webserver", "webserver"),
    ("the name of the machine should be db01", "db01"), ("computer name: kiosk3", "kiosk3"),
    ("set the device name to sensor-7", "sensor-7"),
])
def test_a_machine_name_said_with_name_as_a_noun_is_the_host_name(text, host):
    spec = parse_request(text)
    assert spec.hostname == host and not spec.add_groups


def test_a_verb_that_is_also_a_package_is_the_package_as_an_item_of_a_list():
    spec = parse_request("CI runner: ubuntu noble, git, curl, build-essential, make, 40 GB")
    assert spec.add_packages == ["git", "curl", "build-essential", "make"]
    assert not parse_request("ubuntu, make it arm64").add_packages


def test_the_words_around_a_chatty_request_are_not_reported():
    spec = parse_request("Hi! Our team loves vim lol. Could you maybe add docker and git? Oh, and the disk around "
                         "twenty gigabytes, hostname build-agent. Thanks so much!")
    assert spec.disk_size == "20GiB" and spec.hostname == "build-agent"
    assert {"vim", "git"} <= set(spec.add_packages) and "containers" in spec.add_groups
    assert not spec.unparsed


@pytest.mark.parametrize(("text", "params"), [
    ("add kernel parameter quiet splash", ["quiet", "splash"]),
    ("kernel param isolcpus=2,3 nohz_full=2,3", ["isolcpus=2,3", "nohz_full=2,3"]),
    ("debian 13, serial console on ttyS0 at 115200", ["console=ttyS0,115200"]),
    ("debian 13 with ttyS0 serial console at 115200", ["console=ttyS0,115200"]),
    ("a serial console on /dev/ttyUSB0 at 9600 baud", ["console=ttyUSB0,9600"]),
])
def test_kernel_flags_by_shape_and_a_serial_console_in_words(text, params):
    spec = parse_request(text)
    assert spec.kernel_cmdline_append == params and not spec.unparsed


def test_a_filesystem_named_with_its_noun_for_the_root_is_the_roots():
    spec = parse_request("azure linux 3 with a 1.5 TB disk and xfs filesystem for root")
    assert [p["fsType"] for p in spec.partitions] == ["xfs"] and not spec.unparsed


def test_ports_a_firewall_allows_are_its_rules_not_versions():
    spec = parse_request("debian 13 server with ufw allowing only port 22 and 443, fail2ban")
    assert spec.add_packages == ["ufw", "fail2ban"] and spec.open_ports == ["22/tcp", "443/tcp"]
    assert not spec.unparsed and not any("pinned" in n for n in spec.notes)


@pytest.mark.parametrize(("text", "said"), [("i also need numpy and pandas", ["numpy", "pandas"]),
                                            ("we want valkey", ["valkey"])])
def test_unknown_software_after_who_wants_it_is_reported(text, said):
    assert parse_request(text).unparsed == said


@pytest.mark.parametrize("text", ["could you also throw in htop?", "would you mind adding nginx?",
                                  "is it possible to add docker?", "please also include curl?", "what about adding vim?",
                                  "how about 16 GB instead?", "maybe add git too?",
                                  "would it be possible to switch to arm64?"])
def test_a_change_asked_as_a_question_is_an_edit(text):
    from image_composer_mcp.server.composer.request_parser import is_question
    assert not is_question(text)
    spec = parse_request(text)
    assert not spec.is_empty() and not spec.unparsed


@pytest.mark.parametrize("text", ["does it have ssh?", "is docker installed?", "can you tell me the disk size?",
                                  "would you mind telling me the kernel version?", "what about security, is selinux on?"])
def test_a_question_about_the_template_stays_a_question(text):
    from image_composer_mcp.server.composer.request_parser import is_question
    assert is_question(text)


def test_a_word_too_common_to_name_software_is_no_short_package_name():
    spec = parse_request("eLxr 12 base image", known_packages=["base-files"])
    assert not spec.add_packages and not spec.unparsed
    assert parse_request("add wireguard", known_packages=["wireguard-tools"]).add_packages == ["wireguard-tools"]


@pytest.mark.parametrize(("text", "delta"), [
    ("make the disk +10G", "+10GiB"), ("make the disk 10G bigger", "+10GiB"), ("bigger of 8 giga more", "+8GiB"),
    ("double it", "x2"), ("halve the disk", "x0.5"), ("increase disk by 50%", "x1.5"), ("make it 20% smaller", "x0.8"),
])
def test_a_change_of_the_disks_size_by_an_amount_or_a_factor(text, delta):
    spec = parse_request(text)
    assert (spec.disk_size, spec.disk_size_delta) == (None, delta) and not spec.unparsed


@pytest.mark.parametrize(("text", "change"), [
    ("resize /data to 3G", {"size": "3GiB"}), ("grow /data by 2G", {"size_delta": "+2GiB"}),
    ("make /data twice as big", {"size_delta": "x2"}), ("8G more for /data", {"size_delta": "+8GiB"}),
    ("make /data 2G bigger", {"size_delta": "+2GiB"}), ("double the /data partition", {"size_delta": "x2"}),
])
def test_a_change_of_a_partitions_size_is_the_partitions_not_the_disks(text, change):
    spec = parse_request(text)
    assert spec.disk_size is None and spec.disk_size_delta is None
    assert [{k: p.get(k) for k in change} for p in spec.partitions] == [change]
    assert spec.partitions[0]["mountPoint"] == "/data"


@pytest.mark.parametrize(("text", "mount", "fs"), [
    ("add a separate /var/log partition of 4G, ext4", "/var/log", "ext4"), ("add /srv partition 2G xfs", "/srv", "xfs"),
    ("xfs /home", "/home", "xfs"), ("ubuntu image with xfs", LAST_EDITED, "xfs"),  # root, unless an edit before named one
])
def test_a_filesystem_named_alone_is_a_partitions_never_a_package(text, mount, fs):
    spec = parse_request(text)
    assert [(p["mountPoint"], p["fsType"]) for p in spec.partitions] == [(mount, fs)]
    assert not spec.add_packages and not spec.unparsed


def test_more_kernel_flags_by_shape_after_a_key_value_one():
    spec = parse_request("add kernel parameters ip=dhcp and rd.debug")
    assert spec.kernel_cmdline_append == ["ip=dhcp", "rd.debug"] and not spec.add_packages


def test_a_package_with_a_version_after_an_equals_sign_is_the_package_not_a_kernel_parameter():
    spec = parse_request("ubuntu with nginx=1.24.0 pinned")
    assert spec.add_packages == ["nginx"] and not spec.kernel_cmdline_append and not spec.unparsed
    assert spec.notes[0].startswith("nginx 1.24.0: version not pinned")


@pytest.mark.parametrize(("text", "added", "removed"), [("-curl", [], ["curl"]), ("+htop -vim", ["htop"], ["vim"])])
def test_items_signed_as_a_diff_writes_them(text, added, removed):
    spec = parse_request(text)
    assert (spec.add_packages, spec.remove_packages) == (added, removed)


@pytest.mark.parametrize("text", ["remove isolcpus", "drop the isolcpus parameter"])
def test_a_setting_taken_out_by_name_takes_its_kernel_parameter_out(text):
    spec = parse_request(text)
    assert spec.kernel_cmdline_remove == ["isolcpus"] and not spec.unparsed


@pytest.mark.parametrize("text", ["rename user alice to alicia", "the user alice should be called alicia"])
def test_a_user_renamed(text):
    assert parse_request(text).users == [{"action": "rename", "name": "alice", "to": "alicia"}]


@pytest.mark.parametrize(("text", "label"), [("macOS Sonoma image", "macOS"), ("kali linux pentest box", "Kali Linux")])
def test_more_operating_systems_said_to_be_unsupported(text, label):
    assert parse_request(text).unsupported[0].startswith(f"{label}: operating system not supported")


def test_two_architectures_named_are_said():
    spec = parse_request("ubuntu aarch64 image for an x86 GPU server")
    assert spec.arch == "x86_64" and "several architectures mentioned; using x86_64" in spec.notes


@pytest.mark.parametrize(("text", "size"), [("and the disk 50G. no, 40G", "40GiB"), ("16 gigs, I mean 32G", "32GiB")])
def test_a_size_said_again_as_a_correction_replaces_the_first(text, size):
    spec = parse_request(text)
    assert spec.disk_size == size and not spec.unparsed


def test_discourse_markers_of_a_correction_are_not_reported():
    spec = parse_request("no wait, make it debian 13")
    assert spec.dist == "debian13" and not spec.unparsed


@pytest.mark.parametrize(("text", "undo"), [("scratch that", True), ("oh, forget that!", True), ("never mind", True),
                                            ("cancel the last change", True), ("scratch the nginx", False),
                                            ("never mind the memcached", False)])
def test_taking_back_the_last_edit_in_other_words(text, undo):
    from image_composer_mcp.server.agent.refine import _REVERT

    assert bool(_REVERT.match(text)) is undo


def test_a_filesystem_right_after_root_is_the_roots():
    spec = parse_request("elxr image, root ext4, /data 2G xfs")
    assert sorted((p["mountPoint"], p["fsType"]) for p in spec.partitions) == [("/", "ext4"), ("/data", "xfs")]
    assert not spec.unparsed


@pytest.mark.parametrize(("text", "unsupported"), [
    ("debian kiosk for digital signage in shop windows", False), ("an alpine hut weather station on debian", False),
    ("windows 11 iot enterprise", True), ("microsoft windows image", True), ("alpine linux container base", True),
])
def test_an_os_name_that_is_an_everyday_word_needs_its_release_edition_or_maker(text, unsupported):
    assert bool(parse_request(text).unsupported) is unsupported


@pytest.mark.parametrize("text", ["ditch docker in favour of podman", "prefer podman over docker",
                                  "docker replaced by podman", "trade docker for podman"])
def test_more_verbs_of_replacement(text):
    spec = parse_request(text)
    assert "podman" in spec.add_packages and "containers" in spec.remove_groups


@pytest.mark.parametrize(("text", "host"), [
    ("ubuntu 24.04 vpn gateway running openvpn and wireguard called vpn-gw", "vpn-gw"),
    ("el10 box for monitoring with cockpit, named mon-02", "mon-02"),
    ("ubuntu image called edge-7 with docker", "edge-7"),
])
def test_what_a_request_calls_what_it_describes_is_the_host_name(text, host):
    spec = parse_request(text, known_packages=["wireguard-tools", "cockpit", "openvpn"])
    assert spec.hostname == host and not spec.unparsed


@pytest.mark.parametrize("text", ["a user called deploy", "name the image foo-1", "a device named after the customer"])
def test_a_name_given_to_a_user_or_the_image_is_no_host_name(text):
    assert parse_request(text).hostname is None


def test_packages_listed_before_flags_on_the_kernel_command_line_stay_packages():
    spec = parse_request("with openssh-server and chrony, isolcpus=2,3 on the kernel command line",
                         known_packages=["openssh-server", "chrony"])
    assert spec.add_packages == ["openssh-server", "chrony"] and spec.kernel_cmdline_append == ["isolcpus=2,3"]
    spec = parse_request("with curl and htop, quiet on the cmdline", known_packages=["curl", "htop"])
    assert spec.add_packages == ["curl", "htop"] and spec.kernel_cmdline_append == ["quiet"]


@pytest.mark.parametrize(("text", "added", "removed"), [
    ("add package pgbackrest", ["pgbackrest"], []), ("add packages pgbackrest and barman", ["pgbackrest", "barman"], []),
    ("remove the package frobnicator", [], ["frobnicator"]),
])
def test_words_named_as_packages_are_packages_whatever_they_are(text, added, removed):
    spec = parse_request(text)
    assert (spec.add_packages, spec.remove_packages) == (added, removed) and not spec.unparsed


def test_a_plain_word_after_add_is_still_reported_unless_named_a_package():
    assert parse_request("add pgbackrest").unparsed == ["pgbackrest"]


@pytest.mark.parametrize(("text", "users"), [
    ("a shared 'student' account", [("student", None, None)]),
    ("ssh enabled for the 'support' user only with key auth", [("support", None, None)]),
    ("user alice in the sudo group and user bob with shell zsh", [("alice", True, None), ("bob", None, "/bin/zsh")]),
    ("users alice and bob, both sudoers, bob's shell is zsh", [("alice", True, None), ("bob", True, "/bin/zsh")]),
    ("auto-login user 'pos'", [("pos", None, None)]),
    ("autologin for user player", [("player", None, None)]),
])
def test_users_named_quoted_or_for_their_login_and_what_is_said_of_them(text, users):
    spec = parse_request(text)
    assert [(u["name"], u.get("sudo"), u.get("shell")) for u in spec.users] == users and not spec.unparsed


def test_automatic_login_is_kept_in_the_words_said():
    spec = parse_request("auto-login user 'pos'")
    assert spec.autologin == "auto-login" and not spec.notes


@pytest.mark.parametrize(("text", "said"), [("debian 13 Navidrome box image", ["navidrome"]),
                                            ("a Uptime Kuma box image on ubuntu", ["uptime kuma"]),
                                            ("an el10 image that only runs our Java app", ["java app"]),
                                            ("a custom image with docker", []), ("a golden image", [])])
def test_software_named_as_what_the_image_is_is_reported_when_unread(text, said):
    assert parse_request(text).unparsed == said


@pytest.mark.parametrize("text", ["ubuntu image that boots over the network", "an image booted over the network",
                                  "a diskless debian image"])
def test_network_boot_in_words_is_an_initrd_image(text):
    assert parse_request(text).image_type == "img"


@pytest.mark.parametrize(("text", "machine"), [("debian image for lab PCs", True), ("a home NAS on ubuntu", True),
                                               ("raspberry pi 4 image", True), ("aws graviton instances", None)])
def test_machines_of_their_own_named_by_what_they_are(text, machine):
    assert parse_request(text).hardware is machine


@pytest.mark.parametrize(("text", "removed"), [("please leave cockpit out", ["cockpit"]), ("rm cloud-init", ["cloud-init"]),
                                               ("keep telnet out of it", ["telnet"])])
def test_removals_in_other_words_are_removals_not_additions(text, removed):
    spec = parse_request(text, known_packages=["cockpit", "cloud-init", "telnet"])
    assert spec.remove_packages == removed and not spec.add_packages


@pytest.mark.parametrize("text", ["user 'ci' w/o admin rights", "add user ci with no admin rights",
                                  "add user ci, not an admin"])
def test_a_user_denied_a_role_in_other_words_gets_no_sudo(text):
    assert [u.get("sudo") for u in parse_request(text).users] == [False]


def test_a_modal_verb_after_hostname_is_no_host_name():
    assert parse_request("hostname must be 'nas'").hostname == "nas"


@pytest.mark.parametrize(("text", "added", "removed"), [("kernel cmdline: add intel_iommu=on", ["intel_iommu=on"], []),
                                                        ("kernel params: remove iommu=pt", [], ["iommu=pt"])])
def test_a_verb_after_the_kernel_command_lines_colon_is_no_flag(text, added, removed):
    spec = parse_request(text)
    assert (spec.kernel_cmdline_append, spec.kernel_cmdline_remove) == (added, removed)


@pytest.mark.parametrize("text", ["Azure Linux 3 cloud VM", "an ubuntu cloud image"])
def test_a_cloud_vm_or_image_asks_for_cloud_init(text):
    assert "cloud-init" in parse_request(text).add_groups


@pytest.mark.parametrize("text", ["an EMT image with secure boot and an immutable root, for aarch64",
                                  "ubuntu with an immutable root filesystem", "an immutable rootfs please"])
def test_the_noun_after_immutable_is_part_of_the_wish(text):
    spec = parse_request(text)
    assert spec.immutability is True
    assert not spec.unparsed, spec.unparsed


def test_renaming_it_renames_the_image():
    spec = parse_request("rename it to factory-edge-01")
    assert spec.name == "factory-edge-01" and spec.hostname is None and not spec.unparsed


@pytest.mark.parametrize(("text", "mount", "fs"), [
    ("change /boot to ext2", "/boot", "ext2"), ("format /data as xfs", "/data", "xfs"),
    ("/srv should be xfs", "/srv", "xfs"), ("change root to xfs", "/", "xfs"),
])
def test_a_filesystem_for_a_place_without_the_word_partition_is_that_partitions(text, mount, fs):
    assert parse_request(text).partitions == [{"action": "resize", "mountPoint": mount, "size": None, "fsType": fs}]


@pytest.mark.parametrize(("text", "size", "delta"), [
    ("bump root to 8 gigs", None, None), ("raise the disk to 30G", "30GiB", None),
    ("lower the disk to 8GB", "8GiB", None), ("cut the disk by 2G", None, "-2GiB"),
])
def test_verbs_of_sizing_size_what_they_name(text, size, delta):
    spec = parse_request(text)
    assert (spec.disk_size, spec.disk_size_delta) == (size, delta) and not spec.unparsed
    if "root" in text:
        assert spec.partitions == [{"action": "resize", "mountPoint": "/", "size": "8GiB"}]


@pytest.mark.parametrize(("text", "size"), [
    ("ubuntu image with a half-terabyte disk", "512GiB"), ("a quarter terabyte disk", "256GiB"),
    ("a 2-terabyte disk", "2048GiB"), ("a debian image sized at 1.5T", "1536GiB"),
])
def test_sizes_written_with_a_hyphen_or_sized_at_are_the_disks(text, size):
    spec = parse_request(text)
    assert spec.disk_size == size and not spec.unparsed, (spec.disk_size, spec.unparsed)


@pytest.mark.parametrize(("text", "mount"), [
    ("/home taking whatever is left", "/home"), ("/data takes everything else", "/data"),
    ("/srv with whatever space remains", "/srv"), ("root gets all remaining space", "/"),
])
def test_the_room_left_said_in_other_words_fills_the_disk(text, mount):
    spec = parse_request(text)
    assert spec.partitions == [{"action": "add", "mountPoint": mount, "size": None, "fsType": None, "fill": True}]
    assert not spec.unparsed


@pytest.mark.parametrize(("text", "os"), [("a RHEL 10 clone", "redhat-compatible-distro"),
                                          ("a debian based image", "debian"),
                                          ("something rhel compatible", "redhat-compatible-distro")])
def test_a_word_of_likeness_after_a_distribution_asks_for_nothing_more(text, os):
    spec = parse_request(text)
    assert spec.os == os and not spec.unparsed and not spec.add_packages


def test_a_conjunction_after_a_replacement_is_no_package():
    spec = parse_request("emt with docker but swap docker for podman since emt has it")
    assert "since" not in spec.add_packages and "podman" in spec.add_packages


def test_an_operating_system_the_image_talks_to_is_not_its_target():
    spec = parse_request("Debian 13 for a thin client that opens an RDP session to a Windows server")
    assert spec.dist == "debian13" and not spec.unsupported, spec.unsupported
    assert "rdp-client" in spec.add_groups
    assert parse_request("a windows 11 image").unsupported  # named as the target, it is still said


def test_measured_boot_is_the_tpm_tools():
    spec = parse_request("a minimal azl3 image with tpm2 tools and measured boot")
    assert "tpm" in spec.add_groups and not spec.unparsed


def test_software_data_on_its_own_partition_is_the_softwares_place():
    spec = parse_request("ubuntu with postgres data on its own 20GB partition")
    assert [p["mountPoint"] for p in spec.partitions] == ["/var/lib/postgresql"] and "postgresql" in spec.add_packages
    assert parse_request("give the machine a static name db-01").hostname == "db-01"


def test_a_setting_that_takes_a_number_ends_a_list_of_kernel_parameters():
    spec = parse_request("ubuntu 24.04 with the kernel parameter isolcpus=2,3 and hugepages enabled")
    assert spec.kernel_cmdline_append == ["isolcpus=2,3"]
    assert any(u.startswith("huge pages: no number") for u in spec.unparsed), spec.unparsed
    assert parse_request("kernel parameter hugepages=512 and quiet").kernel_cmdline_append == ["hugepages=512", "quiet"]


@pytest.mark.parametrize(("text", "mount", "size"), [("take /var/lib/containers down to 60G", "/var/lib/containers",
                                                      "60GiB"), ("bring root back up to 20GB", "/", "20GiB")])
def test_a_place_taken_or_brought_to_a_size_is_that_partitions(text, mount, size):
    spec = parse_request(text)
    assert spec.partitions == [{"action": "resize", "mountPoint": mount, "size": size}] and spec.disk_size is None


@pytest.mark.parametrize(("text", "group"), [("an ubuntu 24.04 image for a restaurant menu display board", "kiosk"),
                                             ("debian 13 with a graphical login", "desktop")])
def test_display_jargon_names_its_group(text, group):
    spec = parse_request(text)
    assert group in spec.add_groups and not spec.unparsed


def test_the_way_in_after_an_ssh_setting_is_part_of_it():
    spec = parse_request("el10 image, no root login over ssh")
    assert [c.get("label") or c.get("setting") for c in spec.configurations] == ["root login off"]
    assert not spec.unparsed


def test_a_web_browser_is_the_familys_browser_and_software_to_host_is_said():
    spec = parse_request("debian with libreoffice and a web browser")
    assert "browser" in spec.add_groups and not spec.unparsed
    assert parse_request("ubuntu 24.04 server to host a minecraft server").unparsed == ["minecraft server"]
    assert parse_request("a box hosting nextcloud").unparsed == ["nextcloud"]


@pytest.mark.parametrize("text", ["emt image that starts a container called telemetry on boot",
                                  "ubuntu with docker running a container named nginx-proxy"])
def test_a_thing_the_image_runs_named_is_no_host_name_and_no_software_word(text):
    spec = parse_request(text)
    assert spec.hostname is None and "monitoring" not in spec.add_groups
    assert "containers" in spec.add_groups
    assert len(spec.unparsed) == 1 and spec.unparsed[0].startswith("container '") and "not written" in spec.unparsed[0]
    assert parse_request("a server named web01").hostname == "web01"


@pytest.mark.parametrize(("text", "why"), [
    ("debian 13 with a proxy at http://proxy.corp:3128 for apt", "an HTTP proxy is not written by the composer"),
    ("an http proxy of https://10.1.1.1:8080", "an HTTP proxy is not written by the composer"),
    ("ubuntu 24.04 with nginx as a reverse proxy for http://10.0.0.5:8080", "a reverse proxy's upstream"),
])
def test_a_proxys_address_is_no_kiosk_page(text, why):
    """An address said for a proxy had been taken for a kiosk's page."""
    spec = parse_request(text)
    assert not any(c.get("setting") == "kiosk page" for c in spec.configurations)
    assert any(why in u for u in spec.unparsed), spec.unparsed


@pytest.mark.parametrize(("text", "removed"), [("disable the bluetooth service", "bluetooth"),
                                               ("disable the cups service", "cups")])
def test_the_noun_after_a_service_taken_out_is_no_word_left_over(text, removed):
    """"disable the bluetooth service" had said "no service" not understood."""
    spec = parse_request(f"debian 13 minimal, {text}")
    assert removed in [*spec.remove_packages, *spec.remove_groups] and not spec.unparsed
    assert parse_request("remove the service").unparsed == ["no service"]


@pytest.mark.parametrize(("text", "groups", "wanted"), [
    ("add docker and a user called ci that can use it", ["docker"], "containers"),
    ("a user bob who can run docker", ["docker"], "containers"),
    ("docker host with user ops with docker access", ["docker"], "containers"),
])
def test_a_user_said_able_to_use_docker_is_in_its_group(text, groups, wanted):
    """The user's clause had taken the words: the user got no group, and "who can run docker" asked for no Docker."""
    spec = parse_request(text)
    (user,) = spec.users
    assert user.get("groups") == groups and wanted in spec.add_groups


@pytest.mark.parametrize(("text", "package", "user"), [
    ("a user bob who can run podman", "podman", {"action": "add", "name": "bob"}),
    ("a user bob who uses vim", "vim", {"action": "add", "name": "bob"}),
    ("user alice who can use sudo", None, {"action": "add", "name": "alice", "sudo": True}),
    ("a user named dev who uses zsh", "zsh", {"action": "add", "name": "dev", "shell": "/bin/zsh"}),
])
def test_software_a_user_uses_is_a_wish_of_its_own(text, package, user):
    spec = parse_request(text)
    assert spec.users == [user] and spec.add_packages == ([package] if package else [])


def test_venv_is_pythons_venv_package_on_debians_families():
    spec = parse_request("add python3 with pip and venv")
    assert "venv" in spec.add_packages and not spec.unparsed
    from image_composer_mcp.server.knowledge.loader import load_capabilities
    caps = load_capabilities()
    assert caps.translate_package("venv", "ubuntu24") == "python3-venv"
    assert caps.translate_package("python3", "ubuntu24") == "python3"  # python3 stays itself


@pytest.mark.parametrize(("text", "removed"), [
    ("remove the kernel parameter loglevel", ["loglevel"]),
    ("drop boot flags splash and quiet", ["splash", "quiet"]),
    ("remove docker and the kernel parameter quiet", ["quiet"]),
])
def test_a_kernel_parameter_taken_off_is_removed_not_added(text, removed):
    """"remove the kernel parameter loglevel" had added a bare "loglevel"."""
    spec = parse_request(text)
    assert spec.kernel_cmdline_remove == removed and not spec.kernel_cmdline_append
    assert parse_request("remove docker and add the kernel parameter quiet").kernel_cmdline_append == ["quiet"]



@pytest.mark.parametrize(("text", "parts"), [
    ("el10 with separate /var, /tmp and /home partitions of 5G each",
     [("/var", "5GiB"), ("/tmp", "5GiB"), ("/home", "5GiB")]),
    ("partitions for /var and /tmp, 2G each", [("/var", "2GiB"), ("/tmp", "2GiB")]),
    ("/var and /srv partitions", [("/var", None), ("/srv", None)]),
])
def test_a_list_of_places_is_a_partition_each_of_the_size_said(text, parts):
    """Only the last place had been read (with no size), the others said not understood."""
    spec = parse_request(text)
    assert [(p["mountPoint"], p["size"]) for p in spec.partitions] == parts and not spec.unparsed


def test_a_vnc_server_is_tigervnc_and_fills_the_remote_access_role():
    from image_composer_mcp.server.knowledge.loader import load_capabilities
    caps = load_capabilities()
    assert caps.translate_package("vnc", "debian13") == "tigervnc-standalone-server"
    assert caps.translate_package("vnc server", "el10") == "tigervnc-server"
    spec = parse_request("debian 13 with vnc server for remote access")
    assert "ssh" not in spec.add_groups and not spec.unparsed


@pytest.mark.parametrize(("text", "domain"), [("azure linux 3 with nginx and certbot for example.com", "example.com"),
                                              ("ubuntu with nginx and a tls certificate for shop.example.org",
                                               "shop.example.org")])
def test_a_certificates_domain_is_said_issued_on_the_running_machine(text, domain):
    """The domain had been said not understood."""
    spec = parse_request(text, known_packages={"nginx", "certbot"})
    assert any(n.startswith(f"certificate for {domain} not applied") for n in spec.notes)
    assert domain not in " ".join(spec.unparsed) and "nginx" in spec.add_packages


@pytest.mark.parametrize(("text", "unread"), [
    ("ubuntu 24.04 image for alice and bob", ["alice", "bob"]),
    ("debian for alice, bob, and carol", ["alice", "bob", "carol"]),
    ("ubuntu for alice or bob", ["alice", "bob"]),
])
def test_the_words_after_for_joined_to_an_unread_item_are_reported_with_it(text, unread):
    assert parse_request(text).unparsed == unread


@pytest.mark.parametrize("text", ["ubuntu server for my homelab", "debian 13 image for a small office",
                                  "ubuntu image for production use"])
def test_what_an_image_is_for_alone_is_prose(text):
    assert parse_request(text).unparsed == []


@pytest.mark.parametrize(("text", "partition"), [
    ("el10 with an extra 10GB data disk", {"mountPoint": "/data", "size": "10GiB"}),
    ("add a second 20G drive", None),
    ("debian with two disks", None),
    ("another 20G ssd", None),
])
def test_a_disk_beside_the_images_own_is_never_its_size(text, partition):
    """A template describes one disk: a data disk becomes a partition on it (said), any other is unsupported."""
    spec = parse_request(text)
    assert spec.disk_size is None and spec.disk_size_delta is None and not spec.unparsed
    if partition is None:
        assert not spec.partitions and "a template describes one disk" in spec.unsupported[0]
    else:
        assert [{k: p[k] for k in partition} for p in spec.partitions] == [partition]
        assert any("describes one disk" in n for n in spec.notes)


def test_more_disk_said_without_a_disk_of_its_own_still_grows_the_disk():
    assert parse_request("give it an extra 10 GB of disk").disk_size_delta == "+10GiB"
    assert parse_request("an extra 10 gigs").disk_size_delta == "+10GiB"


@pytest.mark.parametrize(("text", "example"), [
    ("ubuntu 24.04 with a cron job that runs backup.sh every night at 2", "/usr/local/bin/backup.sh every night at 2"),
    ("a nightly job running cleanup.py", "/usr/local/bin/cleanup.py nightly"),
])
def test_a_scheduled_script_without_its_path_is_said_with_how_to_place_it(text, example):
    spec = parse_request(text)
    assert not spec.configurations and not spec.unparsed and not spec.add_packages
    assert any("full path" in n and example in n for n in spec.notes)


@pytest.mark.parametrize(("text", "ports"), [("also open 80 and 443", ["80/tcp", "443/tcp"]), ("open up 22", ["22/tcp"]),
                                             ("expose 9090", ["9090/tcp"]), ("open 8080 to the world", ["8080/tcp"])])
def test_numbers_opened_are_ports(text, ports):
    spec = parse_request(text)
    assert spec.open_ports == ports and not spec.unparsed
    assert parse_request("open 3 terminals").open_ports == []


def test_what_takes_the_place_of_a_removed_package_said_with_in_its_place():
    spec = parse_request("take out nginx and put haproxy in its place")
    assert spec.remove_packages == ["nginx"] and spec.add_packages == ["haproxy"] and not spec.unparsed


@pytest.mark.parametrize("text", ["make sure ssh only listens with keys", "ssh only works with keys",
                                  "ssh logs in with keys only"])
def test_ssh_with_keys_only_said_with_a_verb_of_its_own(text):
    spec = parse_request(text)
    assert any("PasswordAuthentication no" in c["cmd"] for c in spec.configurations) and not spec.unparsed


def test_a_wifi_passphrase_said_with_its_network_is_neither_a_package_nor_echoed():
    spec = parse_request("debian 13 image with wifi, ssid homenet and password hunter22")
    assert not spec.add_packages and len(spec.unparsed) == 1
    assert spec.unparsed[0].startswith("ssid homenet and a passphrase (") and "hunter22" not in spec.unparsed[0]


@pytest.mark.parametrize(("text", "example"), [("can you make it smaller?", "'make the disk 4G' or '2G smaller'"),
                                               ("make the disk bigger", "'make the disk 40G' or '10G bigger'")])
def test_a_way_to_move_the_disk_without_a_size_is_asked_back(text, example):
    spec = parse_request(text)
    assert spec.disk_size is None and spec.disk_size_delta is None
    assert len(spec.unparsed) == 1 and "by how much?" in spec.unparsed[0] and example in spec.unparsed[0]
    assert parse_request("make it bigger, 40 gigs").disk_size == "40GiB"


@pytest.mark.parametrize("text", ["gimme a vhdx", "pls add git"])
def test_spoken_contractions_are_no_packages(text):
    assert not parse_request(text).unparsed


@pytest.mark.parametrize("text", ["emt image with a 2GB /var/log and journald limited to 500M",
                                  "ubuntu 24.04 with a 1G tmpfs for /tmp"])
def test_a_size_said_of_memory_or_a_limit_of_something_else_is_no_disk_size(text):
    spec = parse_request(text)
    assert spec.disk_size is None and spec.unparsed  # the size nothing read is said, not made the disk's
    assert parse_request("disk limited to 20G").disk_size == "20GiB"


@pytest.mark.parametrize("text", ["put docker on it and let user dev use it", "let dev use docker"])
def test_a_user_let_use_docker_is_in_the_docker_group(text):
    spec = parse_request(text)
    assert spec.users == [{"action": "add", "name": "dev", "groups": ["docker"]}] and not spec.unparsed


def test_the_hostname_changed_from_one_name_to_another_is_the_second():
    spec = parse_request("change the hostname from debian13 to files")
    assert spec.hostname == "files" and not spec.unparsed


@pytest.mark.parametrize(("text", "mount"), [("use ext4 for /srv... actually xfs", "/srv"),
                                             ("a 10G /data partition, ext4, no wait, xfs", "/data")])
def test_a_filesystem_said_again_after_a_correction_replaces_the_one_just_said(text, mount):
    (partition,) = parse_request(text).partitions
    assert partition["mountPoint"] == mount and partition["fsType"] == "xfs"


@pytest.mark.parametrize(("text", "fills"), [("debian 13 with a 200G disk and a separate /data partition", True),
                                             ("el10 database server with postgres, 500GB disk, data on its own partition", True),
                                             ("ubuntu 24.04 with a 100G disk and a /var/log partition", False),
                                             ("debian 13 with a separate /data partition", False)])
def test_a_data_partition_without_a_size_takes_the_rest_of_a_disk_the_request_sizes(text, fills):
    (partition,) = parse_request(text).partitions
    assert partition["fill"] is fills and partition["size"] is None


@pytest.mark.parametrize("word", ["aks", "eks", "gke"])
def test_a_managed_kubernetes_named_asks_for_a_kubernetes_node(word):
    assert "kubernetes" in parse_request(f"azure linux 3 image for {word} nodes").add_groups


def test_a_port_said_then_opened_by_pronoun_is_let_in():
    assert parse_request("the app runs on port 3000, open it").open_ports == ["3000/tcp"]
    assert parse_request("a java service on port 8080").open_ports == []


def test_what_an_app_is_is_reported_with_its_noun_and_64_bit_arm_is_aarch64():
    assert parse_request("ubuntu 24.04 image for a web app").unparsed == ["web app"]
    spec = parse_request("a 64-bit ARM debian box with git and build-essential")
    assert spec.arch == "aarch64" and not spec.unparsed


def test_a_request_written_as_settings_reads_its_keys():
    spec = parse_request("debian 13; packages = htop, iotop, nmon; user = ops (sudo); tz = UTC")
    assert spec.users == [{"action": "add", "name": "ops", "sudo": True}]
    assert any("zoneinfo/UTC" in c["cmd"] for c in spec.configurations)
    assert [u["name"] for u in parse_request("users = alice, bob").users] == ["alice", "bob"]
    assert [u["name"] for u in parse_request("user: ops").users] == ["ops"]
    assert not parse_request("Requirements: - OS: Ubuntu 24.04 - Packages: nginx - Hostname: edge-web-01").unparsed


@pytest.mark.parametrize(("text", "unsupported", "noted"), [
    ("change the partition table to mbr", True, False), ("an msdos partition table", True, False),
    ("partition table: gpt", False, True)])
def test_a_partition_table_named_is_gpt_or_said_unsupported(text, unsupported, noted):
    spec = parse_request(text)
    assert bool(spec.unsupported) is unsupported and bool(spec.notes) is noted and not spec.unparsed


def test_compressing_an_image_named_by_its_format_is_its_compression():
    spec = parse_request("compress the raw image with zstd")
    assert spec.artifact_compression == "zstd" and not spec.add_packages


@pytest.mark.parametrize(("text", "corrected"), [("ubuntu with dokcer", ["dokcer -> docker"]),
                                                 ("ubuntu with dovker", ["dovker -> docker"]),
                                                 ("ubintu 24.04 with nginx", ["ubintu -> ubuntu"]),
                                                 ("debian 13 with snmpd", [])])
def test_a_misspelling_is_a_slip_of_neighbouring_keys(text, corrected):
    """"snmpd" is one letter from snapd, but m and a are far apart on a keyboard: SNMP's daemon, no slip."""
    assert parse_request(text).corrected == corrected


def test_a_users_numeric_id_is_said_not_applied_never_a_package_nor_a_kernel_parameter():
    for text, number in (("ubuntu 24.04 image where the admin user has uid 1500", "1500"),
                         ("user deploy with uid=2001", "2001")):
        spec = parse_request(text)
        assert not spec.unparsed and not spec.kernel_cmdline_append and not spec.add_packages
        assert any(n.startswith(f"uid {number} not applied") for n in spec.notes)


def test_a_port_software_listens_on_said_without_the_word_port_is_said_not_applied():
    spec = parse_request("ubuntu 24.04 image with nginx listening on 8443")
    assert not spec.unparsed and any(n.startswith("port 8443 not applied") for n in spec.notes)


@pytest.mark.parametrize(("text", "user"), [
    ("user bob with no password", {"action": "add", "name": "bob", "locked": True}),
    ("a user admin whose password is locked", {"action": "add", "name": "admin", "locked": True}),
    ("lock bob's password", {"action": "add", "name": "bob", "existing_only": True, "locked": True}),
    ("the user should be called admin and have sudo, and its password should be locked",
     {"action": "add", "name": "admin", "sudo": True, "locked": True}),
])
def test_a_password_said_absent_or_locked_keeps_the_account_locked(text, user):
    spec = parse_request(text)
    assert spec.users == [user] and not spec.notes and not spec.unparsed  # no plain-text password refused


def test_no_password_login_and_passwordless_sudo_are_no_locked_password():
    assert not any(u.get("locked") for u in parse_request("a user deploy with no password login").users)
    assert not any(u.get("locked") for u in parse_request("passwordless sudo for ops").users)


def test_sudo_without_a_password_is_no_locked_password():
    (user,) = parse_request("debian 13, admin account sysop that can sudo without a password").users
    assert user.get("nopasswd") and not user.get("locked")


def test_a_users_clause_ends_at_the_images_target_and_keeps_its_role_joined_by_and():
    spec = parse_request("a user kiosk that logs in automatically on a debian kiosk showing https://dash.example.com")
    assert spec.os == "debian" and "kiosk" in spec.add_groups and [u["name"] for u in spec.users] == ["kiosk"]
    (user,) = parse_request("a user alice with password changeme and sudo").users
    assert user.get("sudo") is True
    (user,) = parse_request("a user alice with zsh and sudo").users
    assert user.get("sudo") is True and user.get("shell") == "/bin/zsh"
    assert parse_request("a user named bob and nginx").add_packages == ["nginx"]


def test_a_listed_user_without_a_password_is_locked_not_without_sudo():
    alice, bob = parse_request("el10 with users alice and bob, alice without a password").users
    assert alice == {"action": "add", "name": "alice", "locked": True} and bob == {"action": "add", "name": "bob"}
    assert [u.get("sudo") for u in parse_request("two users: alice with sudo and bob without").users] == [True, False]
