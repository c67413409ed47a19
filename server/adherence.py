"""Did a generated template do what the request asked? Shared by tests and benchmarks.

A wanted-facts mapping names what must hold: dist, arch, type (imageType), has (packages that must be
installed), lacks (packages that must not be), hostname, size (disk.size), mount (a partition mount point
that must exist).
"""

from __future__ import annotations

from typing import Any


def unmet(doc: dict[str, Any], want: dict[str, Any]) -> list[str]:
    target = doc.get("target") or {}
    system = doc.get("systemConfig") or {}
    disk = doc.get("disk") or {}
    packages = {str(p) for p in (system.get("packages") or [])}
    packages |= {str(p) for p in ((system.get("kernel") or {}).get("packages") or [])}
    problems: list[str] = []
    for key, field in (("dist", "dist"), ("arch", "arch"), ("type", "imageType"), ("os", "os")):
        if key in want and target.get(field) != want[key]:
            problems.append(f"{field} is {target.get(field)!r}, wanted {want[key]!r}")
    problems += [f"package {p} missing" for p in want.get("has", []) if p not in packages]
    problems += [f"package {p} still present" for p in want.get("lacks", []) if p in packages]
    if "hostname" in want and system.get("hostname") != want["hostname"]:
        problems.append(f"hostname is {system.get('hostname')!r}, wanted {want['hostname']!r}")
    if "size" in want and disk.get("size") != want["size"]:
        problems.append(f"disk size is {disk.get('size')!r}, wanted {want['size']!r}")
    if "mount" in want and not any(p.get("mountPoint") == want["mount"] for p in disk.get("partitions") or []):
        problems.append(f"no partition mounted at {want['mount']}")
    if "cmdline" in want and want["cmdline"] not in str((system.get("kernel") or {}).get("cmdline", "")):
        problems.append(f"kernel cmdline lacks {want['cmdline']}")
    if "immutable" in want and bool((system.get("immutability") or {}).get("enabled")) != want["immutable"]:
        problems.append(f"immutability is not {want['immutable']}")
    return problems
