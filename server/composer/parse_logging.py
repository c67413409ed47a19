"""The transport of logs sent to a syslog server: "send logs to 10.1.1.5 over udp". rsyslog forwards over TCP
("@@", system_settings.yaml ``remote logging``) unless UDP is said, which is "@" (rsyslog's omfwd)."""

from __future__ import annotations

from .phrasing import ParserState

_TRANSPORT = (r"\b(?:over|via|using|on|with|by)\s+(?:plain\s+)?(?P<proto>udp|tcp)\b(?:\s+(?:port\s+)?514\b)?"
              r"|\b(?P<before>udp|tcp)\s+(?:syslog|transport|forwarding)\b")


class LoggingPhrases(ParserState):
    """How logs travel to the server they are sent to."""

    def _syslog_transport(self) -> None:
        entries = [c for c in self.spec.configurations if c.get("setting") == "remote logging" and not c.get("remove")]
        if not entries:
            return
        for m in self._each(_TRANSPORT):
            if (m.group("proto") or m.group("before")).lower() == "udp":
                for entry in entries:
                    entry["cmd"] = str(entry["cmd"]).replace("'*.* @@", "'*.* @")
                    entry["label"] = f"{entry.get('label')} over UDP"
            self._mask(m.start(), m.end())


__all__ = ["LoggingPhrases"]
