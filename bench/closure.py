"""Will it build? Closure size and time per Debian-family template, and agreement with apt.

Runs inside ``make bench`` (bench.run calls :func:`run`) or alone: ``python -m bench.closure``.

Index: the Debian bookworm ``main`` list apt keeps in /var/lib/apt/lists (apt-get update). It stands in
for every deb-family target (ubuntu24/26, elxr12, debian13): those archives are not on this machine,
so a name that exists only there is reported missing here; the report says which index was used.
Ground truth: ``apt-get install --simulate --no-install-recommends`` against an empty dpkg status
(a fresh chroot, as in the image build) over the same list.
"""

from __future__ import annotations

import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from image_composer_mcp.server.core.yamlsafe import YamlError, load_mapping

from bench import REPO_ROOT as PACKAGE_ROOT

log = logging.getLogger("bench.closure")
LIBRARY = PACKAGE_ROOT / "image-templates"
REFERENCE = PACKAGE_ROOT.parent / "shared" / "reference" / "os-image-composer" / "image-templates"
LISTS = Path("/var/lib/apt/lists")
DEB_DISTS = ("ubuntu24", "ubuntu26", "elxr12", "debian13")
WARM_RUNS = 5
# A server-ish request whose closure is about 300 packages on bookworm (the size target's workload).
SERVER_300 = ["openssh-server", "nginx", "postgresql", "python3-pip", "git", "vim", "curl", "docker.io",
              "systemd-resolved", "chrony", "rsyslog", "sudo", "network-manager", "linux-image-amd64",
              "grub-efi-amd64", "cloud-init"]


def _apt_list() -> Path | None:
    found = sorted(LISTS.glob("*debian_dists_bookworm_main_binary-amd64_Packages*"))
    return found[0] if found else None


def _templates() -> list[tuple[str, str, dict[str, Any]]]:
    out: list[tuple[str, str, dict[str, Any]]] = []
    for corpus, root in (("library", LIBRARY), ("reference", REFERENCE)):
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*.yml")):
            try:
                data = load_mapping(path.read_bytes()).data
            except (YamlError, OSError):
                continue
            target = data.get("target") if isinstance(data, dict) else None
            if isinstance(target, dict) and str(target.get("dist", "")).lower() in DEB_DISTS:
                out.append((corpus, path.stem, data))
    return out


def _measurable(templates: list[tuple[str, str, dict[str, Any]]]) -> tuple[list[tuple[str, str, dict[str, Any]]],
                                                                            list[str]]:
    """The amd64 index cannot stand in for aarch64 targets (only Architecture: all would match)."""
    from image_composer_mcp.server.knowledge.package_names import canonical_arch

    out, skipped = [], []
    for corpus, name, data in templates:
        if canonical_arch(str(data["target"].get("arch") or "x86_64")) == "x86_64":
            out.append((corpus, name, data))
        else:
            skipped.append(f"{corpus}/{name}")
    return out, skipped
    return out


def _verifier(cache: Path, lst: Path) -> Any:
    from image_composer_mcp.server.packages.verifier import PackageVerifier

    # Template repositories are off: their URLs are not reachable offline, and reading them as empty
    # would be wrong; the closure result reports them as not consulted.
    return PackageVerifier(cache, sources={d: [str(lst)] for d in DEB_DISTS}, offline=True,
                           allow_template_repositories=False)


def _apt_simulate(names: list[str], status: Path) -> tuple[set[str] | None, str]:
    cmd = ["apt-get", "-o", f"Dir::State::status={status}", "-o", "Debug::NoLocking=1", "install", "--simulate",
           "--no-install-recommends", "-qq", *names]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, str(e)
    if proc.returncode != 0:
        return None, (proc.stderr or proc.stdout).strip().splitlines()[-1:][0] if (proc.stderr or proc.stdout) else ""
    return {line.split()[1] for line in proc.stdout.splitlines() if line.startswith("Inst ")}, ""


def _explain(checker: Any, ours: set[str], apt: set[str]) -> list[str]:
    """Why a package is in one set and not the other: which requirement each side satisfied differently."""
    from image_composer_mcp.server.packages.solv_loader import load_solv

    solv = load_solv()
    entry = next(iter(checker._pools.values()))  # the one pool this run built
    pool = entry.pool
    by_name: dict[str, Any] = {}
    for s in pool.solvables_iter():
        by_name.setdefault(s.name, s)
    out = []
    for side, only, other in (("apt only", apt - ours, ours), ("ours only", ours - apt, apt)):
        for name in sorted(only):
            s = by_name.get(name)
            reason = "no requirement found"
            if s is not None:
                chosen_by = [p for p in (apt if side == "apt only" else ours) if p in by_name]
                for parent in chosen_by:
                    for dep in by_name[parent].lookup_deparray(solv.SOLVABLE_REQUIRES, 0):
                        provs = {p.name for p in pool.whatprovides(dep)}
                        if name in provs:
                            alt = sorted((provs - {name}) & other)
                            reason = (f"`{parent}` needs `{dep}`; the other side satisfied it with "
                                      f"{', '.join(f'`{a}`' for a in alt)}" if alt else
                                      f"`{parent}` needs `{dep}`")
                            break
                    else:
                        continue
                    break
            out.append(f"{side}: `{name}`: {reason}")
    return out


def run() -> dict[str, Any]:
    from image_composer_mcp.server.packages.closure import ClosureChecker
    from image_composer_mcp.server.packages.disk_fit import check_disk_fit
    from image_composer_mcp.server.packages.solv_loader import load_solv, solv_unavailable_reason

    lst = _apt_list()
    if lst is None:
        return {"skipped": "no bookworm main amd64 list in /var/lib/apt/lists (run apt-get update on Debian 12)"}
    if load_solv() is None:
        return {"skipped": f"libsolv unavailable: {solv_unavailable_reason()}"}
    out: dict[str, Any] = {"index": str(lst), "templates": [], "agreement": []}
    with tempfile.TemporaryDirectory(prefix="bench-closure-") as tmp:
        tmpd = Path(tmp)
        # ---- cold: a fresh checker reads and loads the index; then warm repeats
        verifier = _verifier(tmpd / "c", lst)
        checker = ClosureChecker(verifier)
        t = time.perf_counter()
        first = checker.check(SERVER_300, os="debian", dist="debian13", arch="x86_64")
        cold = time.perf_counter() - t
        warm = []
        for _ in range(WARM_RUNS):
            t = time.perf_counter()
            checker.check(SERVER_300, os="debian", dist="debian13", arch="x86_64")
            warm.append(time.perf_counter() - t)
        entry = next(iter(checker._pools.values()))
        out["size_target"] = {
            "requested": len(SERVER_300), "closure": len(first.packages),
            "index_packages": sum(r.nsolvables for r in entry.pool.repos),
            "cold_s": round(cold, 3), "load_s": round(entry.load_seconds, 3),
            "warm_s_p50": round(statistics.median(warm), 3), "warm_s_max": round(max(warm), 3),
            "installed_mib": round(first.installed_bytes / 2**20), "problems": first.message if not first.ok else "",
        }
        # ---- every Debian-family template
        measurable, out["skipped_aarch64"] = _measurable(_templates())
        for corpus, name, data in measurable:
            t = time.perf_counter()
            r = checker.check_template(data)
            seconds = time.perf_counter() - t
            fit = check_disk_fit(data, r.installed_bytes, [p.name for p in r.packages])
            target = data.get("target", {})
            out["templates"].append({
                "corpus": corpus, "template": name, "dist": target.get("dist"), "requested": len(r.requested),
                "closure": len(r.packages), "installed_mib": round(r.installed_bytes / 2**20),
                "missing": r.missing, "unresolvable": len(r.unresolvable), "conflicts": len(r.conflicts),
                "excluded": r.excluded, "complete": r.complete, "seconds": round(seconds, 3),
                "selected": sorted({p.name for p in r.packages} & set(r.requested)),
                "disk": fit.status, "disk_message": fit.message})
        # ---- agreement with apt on the templates with the most requested names present in bookworm
        status = tmpd / "status"
        status.write_text("")
        present = []
        for row in out["templates"]:
            if len(row["selected"]) >= 3:
                present.append(row)
        picked = sorted(present, key=lambda r: -len(r["selected"]))[:5]
        cases = [("server request (size target)", SERVER_300)]
        by_name = {(c, n): d for c, n, d in _templates()}
        from image_composer_mcp.server.packages.sources import packages_from_template

        for row in picked:
            # Only names this index has (apt refuses the whole request otherwise).
            names = [p for p in packages_from_template(by_name[(row["corpus"], row["template"])])
                     if p in row["selected"]]
            cases.append((f"{row['corpus']}/{row['template']}", names))
        for label, names in cases:
            ours_r = checker.check(names, os="debian", dist="debian13", arch="x86_64")
            ours = {p.name for p in ours_r.packages}
            t = time.perf_counter()
            apt, err = _apt_simulate(names, status)
            apt_s = time.perf_counter() - t
            if apt is None:
                out["agreement"].append({"case": label, "requested": len(names), "apt_error": err})
                continue
            both = ours & apt
            out["agreement"].append({
                "case": label, "requested": len(names), "ours": len(ours), "apt": len(apt), "common": len(both),
                "jaccard": round(len(both) / max(1, len(ours | apt)), 4), "apt_s": round(apt_s, 2),
                "ours_s": ours_r.timings.get("solve_s"), "differences": _explain(checker, ours, apt)})
    return out


def markdown(r: dict[str, Any]) -> str:
    lines = ["## Will it build? Install closure and disk fit (libsolv)", ""]
    if r.get("skipped"):
        return "\n".join([*lines, f"Skipped: {r['skipped']}.", ""])
    st = r["size_target"]
    lines += [
        f"Index: `{r['index']}` (Debian bookworm main, amd64; {st['index_packages']:,} packages). It stands in for "
        "every deb-family target (ubuntu24/26, elxr12, debian13), whose archives are not on this machine: names "
        "that exist only there show as missing. Template repositories are not consulted (offline). Solver: "
        "libsolv via Debian's python3-solv; Depends + Pre-Depends, no Recommends, empty installed set.", "",
        "| figure | value | goal |", "|---|---|---|",
        f"| closure of a {st['requested']}-package server request | {st['closure']} packages, "
        f"{st['installed_mib']} MiB installed | |",
        f"| cold (decompress + libsolv load + solve) | {st['cold_s']} s (load {st['load_s']} s) | ≤ 3 s |",
        f"| warm (pool cached), p50 / max of {WARM_RUNS} | {st['warm_s_p50']} / {st['warm_s_max']} s | ≤ 1 s |",
        "", "### Agreement with apt (`apt-get install --simulate --no-install-recommends`, empty dpkg status)", "",
        "| case | requested | ours | apt | common | Jaccard | ours solve s | apt s |", "|---|---|---|---|---|---|---|---|"]
    for a in r["agreement"]:
        if "apt_error" in a:
            lines.append(f"| {a['case']} | {a['requested']} | | apt failed: {a['apt_error']} | | | | |")
            continue
        lines.append(f"| {a['case']} | {a['requested']} | {a['ours']} | {a['apt']} | {a['common']} | "
                     f"{a['jaccard']:.3f} | {a['ours_s']} | {a['apt_s']} |")
    diffs = [d for a in r["agreement"] for d in a.get("differences", [])]
    if diffs:
        lines += ["", "Every difference, with the requirement each side satisfied differently:", ""]
        lines += [f"- {d}" for d in dict.fromkeys(diffs)]
    lines += ["", "### Every Debian-family template (library and reference corpus) against that index", "",
              "| template | dist | requested | closure | installed MiB | missing here | unresolvable | conflicts | "
              "disk | s |", "|---|---|---|---|---|---|---|---|---|---|"]
    for t in r["templates"]:
        missing = ", ".join(t["missing"][:4]) + (" ..." if len(t["missing"]) > 4 else "")
        lines.append(f"| {t['corpus']}/{t['template']} | {t['dist']} | {t['requested']} | {t['closure']} | "
                     f"{t['installed_mib']} | {len(t['missing'])}{': ' + missing if missing else ''} | "
                     f"{t['unresolvable']} | {t['conflicts']} | {t['disk']} | {t['seconds']} |")
    if r.get("skipped_aarch64"):
        lines += ["", f"Not measured (aarch64 targets; this machine has only the amd64 list): "
                      f"{', '.join(r['skipped_aarch64'])}."]
    lines += ["", "Timing note: a template with a name missing from the index also pays, once per process, for "
              "the verifier's suggestion index (close spellings), a few seconds; the closure itself is in the "
              "warm figure above. `disk: unknown` = no partition mounted at / with a computable size (ISO, "
              "initrd, network-boot images).", ""]
    return "\n".join(lines)


def splice(report: Path, results: dict[str, Any]) -> None:
    """Put this section (and its two target rows) into an existing BENCHMARKS.md without a full ``make bench``;
    the next full run writes the same section itself."""
    from bench.report import targets

    text = report.read_text("utf-8")
    head = "## Will it build?"
    section = markdown(results)
    if head in text:
        start = text.index(head)
        end = text.find("\n## ", start + len(head))
        end = text.find("<!-- llm-bench:start -->", start) if end < 0 else end
        text = text[:start] + section + ("\n" + text[end:].lstrip("\n") if end >= 0 else "")
    else:
        marker = "<!-- llm-bench:start -->"
        text = text.replace(marker, section + "\n" + marker, 1) if marker in text else text + "\n" + section
    rows = [f"| {t['target']} | {t['measured']} | {t['goal']} | {'yes' if t['met'] else '**no**'} |"
            for t in targets({"closure": results}) if t["target"].startswith("install closure")]
    lines = [ln for ln in text.split("\n") if not ln.startswith("| install closure ")]
    table_end = next(i for i, ln in enumerate(lines) if ln.startswith("## Quality")) - 1
    lines[table_end:table_end] = rows
    report.write_text("\n".join(lines))


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    os.environ.setdefault("LANCEDB_LOG", "error")
    results = run()
    print(json.dumps(results, indent=1), file=sys.stderr)
    if "--splice" in sys.argv:
        splice(PACKAGE_ROOT / "BENCHMARKS.md", results)
    print(markdown(results))
