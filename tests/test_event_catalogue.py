"""The vendor event catalogue: every message's real samples read as its own class, every entry cites a source, and
the platforms and classes a NOC needs are there."""

from __future__ import annotations

import pytest

from faultline.events.catalogue import catalogue, match, next_check

PLATFORMS = {"iosxr", "ios", "nxos", "junos", "eos", "frr", "linux"}
# the classes every platform family should say something about when its devices can log them
REQUIRED = {"transceiver_removed", "optics_loss_of_signal", "interface_admin_down", "carrier_down",
            "line_protocol_down", "bundle_member_down", "bfd_session_down", "bgp_reset_operator_clear",
            "bgp_reset_hold_timer_expired", "bgp_reset_notification_received", "ospf_adjacency_lost",
            "isis_adjacency_lost", "config_change", "routing_table_error", "fan_failure", "power_supply_failure",
            "temperature_alarm", "memory_alarm", "cpu_alarm", "process_crash", "login_aaa"}

SAMPLES = [(m.platform, m.cls, m.id, s) for m in catalogue().messages for s in m.samples]


def test_every_platform_a_noc_runs_has_a_file():
    assert set(catalogue().platforms) >= PLATFORMS


def test_every_required_class_has_messages_from_at_least_two_platforms():
    cat = catalogue()
    thin = {c: sorted({m.platform for m in cat.messages_of(c)}) for c in REQUIRED}
    assert {c: p for c, p in thin.items() if len(p) < 2} == {}


@pytest.mark.parametrize(("platform", "cls", "message_id", "sample"), SAMPLES,
                         ids=[f"{p}-{c}-{n}" for n, (p, c, _i, _s) in enumerate(SAMPLES)])
def test_every_sample_reads_as_its_own_class(platform, cls, message_id, sample):
    found = match(sample)
    assert found is not None, f"{platform} {message_id or cls}: no message of the catalogue matches {sample!r}"
    assert found.cls == cls, f"{platform} {message_id or cls}: {sample!r} read as {found.cls} ({found.platform})"


def test_every_message_cites_a_source_with_an_address_and_says_what_it_means():
    for m in catalogue().messages:
        assert m.source.url.startswith(("http://", "https://")), (m.platform, m.id, m.source)
        assert m.source.title and m.meaning, (m.platform, m.id)


def test_every_class_has_a_next_check_and_platform_commands_cite_sources():
    cat = catalogue()
    for name, cls in cat.classes.items():
        assert cls.next_check.text and cls.next_check.source, name
    for platform in cat.platforms.values():
        for cls, check in platform.checks.items():
            assert check.commands and check.source.url.startswith("http"), (platform.key, cls)
    check, commands = next_check("transceiver_removed", ["iosxr", "nosuch"])
    assert check.text and all(p == "iosxr" for p, _c in commands)


def test_a_line_that_is_no_event_matches_nothing():
    assert match("Dec  1 10:00:00 r1 cron[123]: (root) CMD (run-parts /etc/cron.hourly)") is None
