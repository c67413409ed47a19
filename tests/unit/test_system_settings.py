"""System settings named in words with a value (resources/system_settings.yaml, server/composer/parse_settings.py):
read by the kind of value they take, written as kernel parameters or configuration commands, replaced on a later
edit, and reported when the value cannot be read. Rules about kinds of words, not phrases."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from image_composer_mcp.server.composer.adherence import unmet, want_from_spec
from image_composer_mcp.server.composer.compose import apply_instruction
from image_composer_mcp.server.composer.request_parser import parse_request
from image_composer_mcp.server.knowledge.system_settings import load_settings, zone_named

LIBRARY = Path(__file__).resolve().parents[2] / "image-templates"


def _template(name: str) -> dict:
    return yaml.safe_load((LIBRARY / f"{name}.yml").read_text(encoding="utf-8"))


def _commands(spec_or_doc) -> list[str]:
    if isinstance(spec_or_doc, dict):
        return [c["cmd"] for c in spec_or_doc["systemConfig"].get("configurations") or []]
    return [c["cmd"] for c in spec_or_doc.configurations if not c.get("remove")]


@pytest.mark.parametrize(("text", "param"), [
    ("realtime controller with isolated cpus 2-3", "isolcpus=2-3"),
    ("isolate cores 2 and 3 for the control loop", "isolcpus=2,3"),
    ("cpu isolation on cores 4-7", "isolcpus=4-7"),
    ("a dpdk box with 1024 huge pages", "hugepages=1024"),
    ("hugepages: 64", "hugepages=64"),
    ("ipv6 disabled", "ipv6.disable=1"),
    ("no ipv6", "ipv6.disable=1"),
    ("with hyperthreading turned off", "nosmt"),
    ("disable cpu mitigations", "mitigations=off"),
])
def test_kernel_settings_in_words_become_their_parameters(text, param):
    spec = parse_request(text)
    assert param in spec.kernel_cmdline_append
    # what the box is for, software the image does not get, is said ("a dpdk box")
    assert spec.unparsed == (["dpdk"] if "dpdk" in text else []) and not spec.remove_packages


def test_several_settings_in_one_list_keep_their_own_values():
    spec = parse_request("a debian image, isolate cores 2 and 3, 512 huge pages, swappiness 10")
    assert {"isolcpus=2,3", "hugepages=512"} <= set(spec.kernel_cmdline_append)
    assert _commands(spec) == ["echo 'vm.swappiness = 10' > /etc/sysctl.d/90-swappiness.conf"]
    assert not spec.unparsed


@pytest.mark.parametrize("text", ["an image set to the Europe/Berlin timezone", "time zone: europe/berlin",
                                  "timezone=Europe/Berlin", "the berlin time zone"])
def test_a_time_zone_is_read_before_or_after_its_words_in_any_spelling(text):
    spec = parse_request(text)
    assert _commands(spec) == ["ln -sf /usr/share/zoneinfo/Europe/Berlin /etc/localtime"]
    assert spec.configurations[0]["packages"] == ["tzdata"]
    assert not spec.unparsed and not spec.kernel_cmdline_append


def test_a_place_of_several_words_names_its_zone():
    assert zone_named("new york") == "America/New_York" and zone_named("UTC") == "UTC"
    assert "America/New_York" in _commands(parse_request("an azure linux image in the new york time zone"))[0]


@pytest.mark.parametrize(("text", "reported"), [
    ("ubuntu image with the timezone Mars/Olympus", "Mars/Olympus"),
    ("ubuntu image with the local timezone", "no time zone named"),
    ("hugepages enabled, lots of them", "no number named"),
    ("swappiness 500", "it takes 0 to 200"),
])
def test_a_setting_whose_value_cannot_be_read_is_reported_not_dropped(text, reported):
    spec = parse_request(text)
    assert any(reported in u for u in spec.unparsed), spec.unparsed
    assert not spec.configurations and not spec.kernel_cmdline_append


@pytest.mark.parametrize("text", ["enable ipv6", "ip forwarding disabled"])
def test_a_switch_to_the_kernels_default_is_a_note_and_writes_nothing(text):
    spec = parse_request(text)
    assert not _commands(spec) and not spec.kernel_cmdline_append
    assert any("kernel's default" in n for n in spec.notes) and not spec.unparsed


def test_a_switch_after_the_words_wins_over_with_before_them():
    spec = parse_request("a debian router with ipv6 disabled and ip forwarding")
    assert spec.kernel_cmdline_append == ["ipv6.disable=1"]
    assert _commands(spec) == ["echo 'net.ipv4.ip_forward = 1' > /etc/sysctl.d/90-ip-forwarding.conf"]


def test_sysctl_keys_written_out_are_sysctl_settings_and_kernel_parameters_stay_parameters():
    spec = parse_request("add net.core.somaxconn=4096 and vm.swappiness=5 and net.ifnames=0")
    assert _commands(spec) == ["echo 'net.core.somaxconn = 4096' > /etc/sysctl.d/90-net-core-somaxconn.conf",
                               "echo 'vm.swappiness = 5' > /etc/sysctl.d/90-vm-swappiness.conf"]
    assert spec.kernel_cmdline_append == ["net.ifnames=0"]


def test_a_later_value_replaces_the_earlier_command_and_the_template_gets_what_the_command_needs():
    first = apply_instruction(_template("debian13-x86_64-minimal-base-raw"), "set the timezone to Europe/Berlin")
    assert "tzdata" in first.data["systemConfig"]["packages"]
    assert "ln -sf /usr/share/zoneinfo/Europe/Berlin /etc/localtime" in _commands(first.data)
    second = apply_instruction(first.data, "change the time zone to Asia/Tokyo")
    commands = _commands(second.data)
    assert "ln -sf /usr/share/zoneinfo/Asia/Tokyo /etc/localtime" in commands
    assert not any("Europe/Berlin" in c for c in commands)
    assert any("replaces" in c and "Europe/Berlin" in c for c in second.changes), second.changes
    again = apply_instruction(second.data, "timezone Asia/Tokyo")
    assert _commands(again.data) == commands and any("already set" in c for c in again.changes)


def test_adherence_checks_the_settings_commands():
    spec = parse_request("debian image with ip forwarding and the UTC timezone")
    want = want_from_spec(spec, "debian13")
    bare = _template("debian13-x86_64-minimal-base-raw")
    problems = unmet(bare, want)
    assert any("net.ipv4.ip_forward" in p for p in problems) and "package tzdata missing" in problems
    done = apply_instruction(bare, "debian image with ip forwarding and the UTC timezone").data
    assert unmet(done, want) == []


def test_the_settings_data_names_each_word_once():
    seen: dict[str, str] = {}
    for setting in load_settings().values():
        for word in setting.words:
            assert word not in seen, f"{word!r} names both {seen[word]} and {setting.name}"
            seen[word] = setting.name
        writes = bool(setting.cmdline or setting.sysctl or setting.command or setting.runs)
        assert writes != (setting.value == "none"), setting.name  # a setting writes something or says why not
        assert setting.value != "none" or setting.reason, setting.name


@pytest.mark.parametrize(("text", "value"), [
    ("an ubuntu image with the ssh port changed to 2222", "2222"),
    ("an ubuntu image that pings 1.1.1.1 every minute", "1.1.1.1"),
    ("a debian image that keeps 30 days of backups", "30 days"),  # (journald's retention is a setting now)
])
def test_a_number_or_address_nothing_read_is_reported_with_its_words(text, value):
    assert any(value in u for u in parse_request(text).unparsed), parse_request(text).unparsed


@pytest.mark.parametrize("text", ["a debian 12 image with docker", "ubuntu 24.04 with docker and a 20G disk",
                                  "rocky 10 web server", "python 3.12 on azure linux 3",
                                  "an 8GB image with a 2 GB /var partition"])
def test_values_another_reader_took_are_not_reported_again(text):
    spec = parse_request(text)
    assert not [u for u in spec.unparsed if any(ch.isdigit() for ch in u)], spec.unparsed


@pytest.mark.parametrize(("text", "said"), [("an azure linux kiosk in portrait mode", "portrait mode"),
                                            ("ubuntu gateway with bonded nics", "bonded nics")])
def test_a_setting_the_composer_does_not_write_is_reported_with_its_words(text, said):
    spec = parse_request(text)
    assert any(u.startswith(said) and "not written by the composer" in u for u in spec.unparsed), spec.unparsed


def test_a_machine_model_and_the_tail_of_a_release_are_read_with_their_names():
    for text in ("debian 13 for a raspberry pi 4 with wifi tools", "build me an azure linux 3.0 iso installer"):
        assert not [u for u in parse_request(text).unparsed if any(ch.isdigit() for ch in u)], text
    assert parse_request("2222 as the ssh port").unparsed  # a value at the very start is still one


def test_a_switch_back_to_the_default_takes_the_setting_out_of_the_template():
    router = apply_instruction(_template("debian13-x86_64-minimal-base-raw"),
                               "enable ip forwarding and disable ipv6").data
    assert any("ip_forward" in c for c in _commands(router))
    assert "ipv6.disable=1" in router["systemConfig"]["kernel"]["cmdline"]
    back = apply_instruction(router, "turn ip forwarding off and enable ipv6")
    assert not any("ip_forward" in c for c in _commands(back.data))
    assert "ipv6.disable=1" not in back.data["systemConfig"]["kernel"]["cmdline"]
    assert any(c.startswith("took out ip forwarding") for c in back.changes), back.changes


def test_a_cpu_list_inside_the_name_turned_round_and_a_bare_zone_name_are_read():
    spec = parse_request("low latency box on debian, cores 4-7 isolated from the scheduler, 2048 hugepages")
    assert {"isolcpus=4-7", "hugepages=2048"} <= set(spec.kernel_cmdline_append) and not spec.unparsed
    spec = parse_request("set the system clock zone to Asia/Kolkata on an ubuntu 24.04 server")
    assert _commands(spec) == ["ln -sf /usr/share/zoneinfo/Asia/Kolkata /etc/localtime"]
    assert not _commands(parse_request("route tcp/udp traffic through /srv/data"))


def test_a_range_nothing_read_is_reported():
    assert "threads 4-7 pinned" in parse_request("threads 4-7 pinned").unparsed


@pytest.mark.parametrize(("text", "conf"), [
    ("make an ubuntu image where root login is disabled", "PermitRootLogin no"),
    ("debian server, no root ssh login", "PermitRootLogin no"),
    ("azure linux vm with cloud-init and no password login", "PasswordAuthentication no"),
    ("el10 with ssh password authentication disabled", "PasswordAuthentication no"),
])
def test_sshd_switches_write_a_drop_in_that_sshd_reads_on_every_family(text, conf):
    spec = parse_request(text)
    (command,) = _commands(spec)
    assert conf in command and "/etc/ssh/sshd_config.d/" in command
    assert "Include /etc/ssh/sshd_config.d/*.conf" in command  # put at the top where a family's file lacks it
    assert "openssh-server" in want_from_spec(spec, "azl3")["has"]


def test_an_off_word_governs_every_switch_listed_after_it():
    spec = parse_request("debian server, disable root login and password authentication")
    commands = " ".join(_commands(spec))
    assert "PermitRootLogin no" in commands and "PasswordAuthentication no" in commands
    assert not spec.notes and not spec.unparsed
    assert parse_request("disable ipv6, and smt").kernel_cmdline_append == ["nosmt", "ipv6.disable=1"]


def test_a_switch_back_to_sshds_default_names_whose_default_it_is():
    spec = parse_request("ubuntu with root login enabled")
    assert not _commands(spec) and any("sshd's default" in n for n in spec.notes), spec.notes


@pytest.mark.parametrize(("text", "size"), [
    ("elxr with a swap file of 2G and zram", "2GiB"),
    ("ubuntu with a 2G swap file", "2GiB"),
    ("swapfile: 512 MB", "512MiB"),
])
def test_a_swap_file_is_a_file_of_its_size_not_a_partition_or_the_disk(text, size):
    spec = parse_request(text)
    (command,) = _commands(spec)
    assert command.startswith(f"fallocate -l {size} /swapfile") and "mkswap /swapfile" in command
    assert not spec.partitions and spec.disk_size is None and not spec.unparsed


@pytest.mark.parametrize("text", ["no swap", "disable swap for kubernetes", "swap disabled", "turn swap off",
                                  "k3s node without swap space"])
def test_swap_switched_off_masks_the_swap_target(text):
    spec = parse_request(text)
    assert [c["cmd"] for c in spec.configurations] == ["systemctl mask swap.target"]
    assert not spec.unparsed and not spec.partitions


@pytest.mark.parametrize(("text", "partitions"), [
    ("swap docker for podman", []),  # the verb, not the setting
    ("add 8G of swap", [{"action": "add", "mountPoint": "swap", "size": "8GiB", "fsType": None, "fill": False}]),
    ("no swap partition", [{"action": "remove", "mountPoint": "swap"}]),
    ("without a separate /var partition", [{"action": "remove", "mountPoint": "/var"}]),
])
def test_swap_as_a_verb_a_size_or_a_partition_is_not_the_switch(text, partitions):
    spec = parse_request(text)
    assert not spec.configurations and spec.partitions == partitions


def _locale(spec) -> list[str]:
    return [c["cmd"] for c in spec.configurations if c.get("setting") == "locale" and not c.get("remove")]


@pytest.mark.parametrize(("text", "lang"), [
    ("ubuntu 24.04 server with locale de_DE.UTF-8", "de_DE.UTF-8"),
    ("el10 server with LANG=en_GB.utf8", "en_GB.UTF-8"),  # any spelling of the charset
    ("emt edge node, locale ca_ES@valencia", "ca_ES.UTF-8@valencia"),  # a modifier stays after the charset
    ("ubuntu with en_au as the system language", "en_AU.UTF-8"),  # a name in any case, before its words
    ("debian image with de_AT.UTF-8", "de_AT.UTF-8"),  # a locale's name alone names its setting
    ("azure linux vm, language: C.UTF-8", "C.UTF-8"),
])
def test_a_locale_named_is_compiled_and_set_as_lang(text, lang):
    spec = parse_request(text)
    (cmd,) = _locale(spec)
    source = lang.replace(".UTF-8", "")
    assert cmd.startswith(f"localedef -i {source} -f UTF-8 {lang} ") and f"LANG={lang}\\n' > /etc/locale.conf" in cmd
    assert f"LANG={lang}\\n' > /etc/default/locale" in cmd and f"echo '{lang} UTF-8' >> /etc/locale.gen" in cmd
    assert not spec.unparsed and not [n for n in spec.notes if "read as" in n]


@pytest.mark.parametrize(("text", "lang", "said"), [
    ("an azure linux image set to the German locale", "de_DE.UTF-8", "German"),
    ("ubuntu 24.04 image, set the language to brazilian portuguese", "pt_BR.UTF-8", "brazilian portuguese"),
    ("debian image whose locale should be Japanese", "ja_JP.UTF-8", "Japanese"),
    ("a swiss german system language", "de_CH.UTF-8", "swiss german"),  # the most words that name one
])
def test_a_language_said_for_the_locale_is_its_first_place_and_the_reading_is_said(text, lang, said):
    spec = parse_request(text)
    (cmd,) = _locale(spec)
    assert f"LANG={lang}" in cmd and not spec.unparsed
    assert f"locale: '{said}' read as {lang}; name the locale to choose another place's (e.g. 'locale de_DE.UTF-8')" \
        in spec.notes


@pytest.mark.parametrize("text", ["ubuntu dev box for the C language with gcc", "a go language build server",
                                  "python language support on debian"])
def test_language_alone_names_no_locale_and_is_not_reported_as_one(text):
    spec = parse_request(text)
    assert not _locale(spec) and not any("locale" in u for u in spec.unparsed)


@pytest.mark.parametrize(("text", "reported"), [
    ("ubuntu with locale klingon", "locale: no locale named with it (e.g. 'locale de_DE.UTF-8')"),
    ("debian with the locale de_DE.ISO-8859-1", "locale de_DE.ISO-8859-1 (only UTF-8 locales are written: de_DE.UTF-8)"),
])
def test_a_locale_that_cannot_be_written_is_reported_and_nothing_else_is_read_from_it(text, reported):
    spec = parse_request(text)
    assert reported in spec.unparsed and not _locale(spec) and spec.image_type is None  # "ISO-8859-1" is no iso


@pytest.mark.parametrize("text", ["ubuntu server with locales en_US.UTF-8 and de_DE.UTF-8",
                                  "ubuntu server with locale en_US.UTF-8 and de_DE.UTF-8"])
def test_a_second_locale_in_a_list_is_compiled_beside_the_first_which_is_lang(text):
    spec = parse_request(text)
    first, second = (c["cmd"] for c in spec.configurations)
    assert "LANG=en_US.UTF-8" in first
    assert second.startswith("localedef -i de_DE -f UTF-8 de_DE.UTF-8") and "LANG=" not in second
    assert not spec.unparsed


@pytest.mark.parametrize(("text", "layout", "lang"), [
    ("el10 image with a german keyboard and locale", "de", "de_DE.UTF-8"),
    ("debian with french locale and keyboard", "fr", "fr_FR.UTF-8"),
    ("ubuntu with a swiss german keyboard and the locale de_AT.UTF-8", "ch", "de_AT.UTF-8"),  # each its own
])
def test_one_language_said_for_the_keyboard_and_the_locale_is_both(text, layout, lang):
    spec = parse_request(text)
    (keyboard,) = [c["cmd"] for c in spec.configurations if c.get("setting") == "keyboard layout"]
    (cmd,) = _locale(spec)
    assert f'XKBLAYOUT="{layout}"' in keyboard and f"LANG={lang}" in cmd and not spec.unparsed


@pytest.mark.parametrize(("template", "package"), [("ubuntu26-x86_64-minimal-base-raw", "locales"),
                                                  ("debian13-x86_64-minimal-base-raw", "locales"),
                                                  ("azl3-x86_64-minimal-base-raw", "glibc-i18n"),
                                                  ("emt3-x86_64-minimal-base-raw", "glibc-i18n"),
                                                  ("el10-x86_64-minimal-base-raw", "glibc-locale-source")])
def test_the_locale_brings_the_familys_locale_sources_and_the_request_is_met(template, package):
    text = "with locale fr_FR.UTF-8"
    base = _template(template)
    done = apply_instruction(base, text).data
    packages = done["systemConfig"]["packages"]
    sources = [p for p in ("locales", "glibc-i18n", "glibc-locale-source") if p in packages]
    assert sources == [package] and "LANG=fr_FR.UTF-8" in " ".join(_commands(done))
    want = want_from_spec(parse_request(text), done["target"]["dist"])
    assert unmet(base, want) and unmet(done, want) == []


@pytest.mark.parametrize(("text", "address"), [
    ("box that collects logs with fluent-bit and ships them to our central graylog at logs.corp.example:12201.",
     "logs.corp.example:12201"),
    ("collect logs and send them to 10.0.0.5", "10.0.0.5"),
    ("ubuntu that sends logs to 10.0.0.5.", "10.0.0.5"),  # a period after an address ends the sentence
])
def test_logs_collected_to_be_sent_on_are_forwarded_not_received(text, address):
    spec = parse_request(text)
    commands = _commands(spec)
    assert commands == [f"mkdir -p /etc/rsyslog.d && echo '*.* @@{address}' > /etc/rsyslog.d/90-remote.conf"]
    assert all(u == "fluent-bit" for u in spec.unparsed)  # what stood between is read as ever


def test_a_log_server_collecting_other_machines_logs_still_receives_them():
    assert "imtcp" in " ".join(_commands(parse_request("a log server that collects logs from other machines")))


def test_logs_shipped_with_no_server_named_are_reported():
    spec = parse_request("collects its logs and forwards them somewhere central")
    assert "remote logging: no server address named with it (e.g. 'remote syslog server logs.example.com:514')" \
        in spec.unparsed and not _commands(spec)


@pytest.mark.parametrize("text", ["debian kiosk, disable screen blanking", "no screensaver", "screen blanking off"])
def test_screen_blanking_off_is_the_consoles_blank_timeout_of_zero(text):
    spec = parse_request(text)
    assert spec.kernel_cmdline_append == ["consoleblank=0"] and not spec.remove_packages


def test_hiding_the_mouse_cursor_is_reported_not_written():
    spec = parse_request("debian kiosk, hide the mouse cursor")
    assert any(u.startswith("mouse cursor (hiding the mouse cursor is not written by the composer") for u in spec.unparsed)
    assert not [u for u in parse_request("ubuntu dev box with the cursor editor").unparsed if "mouse" in u]


@pytest.mark.parametrize("text", ["also make sure ssh only accepts keys", "ssh only takes keys", "sshd only allows keys"])
def test_ssh_that_only_accepts_keys_refuses_passwords(text):
    spec = parse_request(text)
    assert [c.get("label") for c in spec.configurations] == ["key-only ssh on"]


@pytest.mark.parametrize(("text", "label"), [
    ("deploy shouldn't have a password login", "password login off"),
    ("it must not allow root login", "root login off"),  # it had been read as allowing it too
    ("root login must not be allowed", "root login off"),
])
def test_a_negated_modal_switches_off_and_reads_no_allowing(text, label):
    spec = parse_request(text)
    assert [c.get("label") for c in spec.configurations] == [label] and not spec.notes and not spec.unparsed


@pytest.mark.parametrize(("text", "limit"), [("limit journal size to 500M", "500M"), ("cap the journal at 1G", "1G"),
                                             ("ubuntu with a 20G disk and journal max size 300 MB", "300M")])
def test_the_journals_size_is_journalds_and_never_the_disks(text, limit):
    spec = parse_request(text)
    assert _commands(spec) == [f"mkdir -p /etc/systemd/journald.conf.d && printf '[Journal]\\nSystemMaxUse={limit}\\n' "
                               "> /etc/systemd/journald.conf.d/90-size.conf"]
    assert spec.disk_size in (None, "20GiB")


def test_a_sysctl_key_set_to_a_value_in_words_and_taken_out_again():
    bare = _template("ubuntu26-x86_64-minimal-base-raw")
    done = apply_instruction(bare, "set vm.max_map_count to 262144 for elasticsearch").data
    assert "echo 'vm.max_map_count = 262144' > /etc/sysctl.d/90-vm-max_map_count.conf" in _commands(done)
    undone = apply_instruction(done, "drop the vm.max_map_count setting")
    assert not [c for c in _commands(undone.data) if "max_map_count" in c] and not undone.unhandled


@pytest.mark.parametrize(("text", "server"), [("el10 image with chrony syncing from time.example.net", "time.example.net"),
                                              ("chrony getting its time from 10.0.0.1", "10.0.0.1")])
def test_a_time_client_said_syncing_from_a_server_uses_it(text, server):
    assert f"NTP={server}" in " ".join(_commands(parse_request(text)))


@pytest.mark.parametrize(("text", "said"), [("Chromium fullscreen, rotate display 90 degrees", "rotate display 90 degrees"),
                                            ("grub timeout set to 5 seconds", "grub timeout 5 seconds")])
def test_a_setting_not_written_is_reported_with_its_value_and_unit(text, said):
    spec = parse_request(text)
    assert len(spec.unparsed) == 1 and spec.unparsed[0].startswith(f"{said} (")


@pytest.mark.parametrize(("text", "seconds"), [("a hardened el10 image with a 5 minute idle session timeout", 300),
                                               ("log out idle sessions after 10 minutes", 600),
                                               ("automatic logout after 15 min", 900)])
def test_an_idle_session_timeout_is_a_read_only_tmout_in_seconds(text, seconds):
    (cmd,) = [c["cmd"] for c in parse_request(text).configurations if c.get("setting") == "idle session timeout"]
    assert cmd == f"printf 'TMOUT={seconds}\\nreadonly TMOUT\\nexport TMOUT\\n' > /etc/profile.d/90-idle-timeout.sh"


@pytest.mark.parametrize(("text", "said"), [("el10 mail relay: postfix only, relay to smtp.corp.example:587",
                                             "smtp.corp.example:587"),
                                            ("debian with postfix relaying to 10.0.0.25", "10.0.0.25")])
def test_a_mail_relay_is_postfixs_relayhost_in_brackets(text, said):
    spec = parse_request(text)
    (entry,) = [c for c in spec.configurations if c.get("setting") == "mail relay"]
    assert entry["cmd"].startswith(f"h='{said}';") and 'postconf -e "relayhost = $r"' in entry["cmd"]
    assert "postfix" in spec.add_packages and not spec.unparsed


def test_the_relayhost_command_brackets_the_host_and_keeps_the_port(tmp_path):
    import subprocess

    (tmp_path / "postconf").write_text('#!/bin/sh\necho "$@"\n')
    (tmp_path / "postconf").chmod(0o755)
    for said, written in (("smtp.corp.example:587", "relayhost = [smtp.corp.example]:587"),
                          ("10.0.0.25", "relayhost = [10.0.0.25]")):
        entry = load_settings()["mail relay"].configuration(said)
        assert entry is not None
        out = subprocess.run(["sh", "-c", entry["cmd"]], capture_output=True, text=True, check=True,
                             env={"PATH": f"{tmp_path}:/usr/bin:/bin"}).stdout
        assert out.strip() == f"-e {written}"


@pytest.mark.parametrize(("text", "governor"), [("el10 image with the cpu governor set to performance", "performance"),
                                                ("the powersave governor", "powersave"),
                                                ("ubuntu with performance cpu governor", "performance")])
def test_a_cpu_governor_is_the_default_governor_at_boot(text, governor):
    spec = parse_request(text)
    assert spec.kernel_cmdline_append == [f"cpufreq.default_governor={governor}"] and not spec.unparsed


@pytest.mark.parametrize(("text", "label"), [
    ("auditd with immutable rules", "immutable audit rules on"),
    ("el10 hardened with immutable audit rules", "immutable audit rules on"),
    ("limit journald to 200M", "journal size 200MiB"),
])
def test_a_thing_made_immutable_or_limited_is_its_own_setting_never_the_image_or_the_disk(text, label):
    spec = parse_request(text)
    assert [c["label"] for c in spec.configurations] == [label]
    assert spec.immutability is None and spec.disk_size is None and not spec.unparsed


@pytest.mark.parametrize(("text", "off"), [
    ("hardened ubuntu server: ssh keys only, no root, auditd", True),
    ("ubuntu with ssh, no root and no passwords", True),
    ("ubuntu image, no root", False),  # nothing about ssh: said, not guessed
])
def test_no_root_in_a_list_about_ssh_is_root_login_off(text, off):
    spec = parse_request(text)
    assert ("root login off" in [c.get("label") for c in spec.configurations]) == off
    assert ("no root" in spec.unparsed) != off


@pytest.mark.parametrize(("text", "forward"), [("send logs to 10.1.1.5 over udp", "'*.* @10.1.1.5'"),
                                              ("forward logs to logs.example.com via tcp", "'*.* @@logs.example.com'"),
                                              ("send logs to 10.0.0.5", "'*.* @@10.0.0.5'")])
def test_logs_travel_over_tcp_unless_udp_is_said(text, forward):
    spec = parse_request(text)
    (entry,) = spec.configurations
    assert forward in entry["cmd"] and not spec.unparsed
