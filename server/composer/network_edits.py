"""Static network addresses applied to a template (RequestSpec.configurations entries with ``network``, read by
server/composer/parse_network.py): written for the network manager the image runs, an edit's address or gateway
keeping the other part of the one the image has."""

from __future__ import annotations

from dataclasses import asdict

from ..knowledge.static_network import (
    StaticAddress,
    command,
    manager_for,
    merged,
    packages_for,
    problem,
    read,
    replaces,
)
from .editing import TemplateEdit, template_packages


class NetworkEdit(TemplateEdit):
    def static_network(self, entry: dict) -> bool:
        """Complete ``entry`` (its command, the commands it replaces, its packages) for this image; False, with the
        problem said, when it cannot be written."""
        said = StaticAddress(**entry["network"])
        configs = [c for c in self.system(create=False).get("configurations") or [] if isinstance(c, dict)]
        there = [s for c in configs if (s := read(str(c.get("cmd") or ""))) is not None]
        same = [s for s in there if s.interface == said.interface]
        if not same and not said.interface and len(there) == 1:
            same = there  # "change the ip to …" on an image with one static address: that one
        static = merged(said, same[0] if same else None)
        label = str(entry.get("label") or static.describe())
        if not static.whole:  # a gateway or a prefix length alone, and no address to give it to
            self.problems.append(f"{label}: {entry.get('edits_only')}")
            return False
        why = problem(static.address, static.gateway)
        if why:
            self.problems.append(f"{label}: {why}")
            return False
        manager = manager_for(self.family, template_packages(self.data))
        entry.update(cmd=command(static, manager), replaces=replaces(static.interface), label=static.describe(),
                     packages=packages_for(self.family, manager), network=asdict(static))
        entry.pop("edits_only", None)
        return True


__all__ = ["NetworkEdit"]
