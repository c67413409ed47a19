"""Will it build? The install closure of a template's packages, solved by libsolv.

From the same repository indexes ``verify_packages`` reads (deb ``Packages``, rpm ``primary.xml``),
libsolv (the solver behind dnf and zypper) computes what the build would install: every package
with the dependency chain that pulls it in, the dependencies nothing provides, the conflicts, and
the total installed size. The rules follow os-image-composer's own resolvers
(internal/ospackage/{debutils,rpmutils}/resolver.go):

* Depends and Pre-Depends (deb) / requires incl. pre-requires (rpm) are followed; Recommends and
  Suggests are not (the upstream resolvers ignore them too).
* Alternatives ``a | b``: any one satisfies; libsolv prefers the first installable one, as upstream.
* Virtual packages: a name is satisfied by a real package of that name or by a Provides.
* Version constraints (``>=``, ``<<``, ``=`` ...) are enforced with the family's version ordering.
* Repository priority: a template repository's ``priority`` becomes the libsolv repo priority (higher
  wins, as apt pinning); upstream's negative priority (blocked) is applied by not loading the repo.
* Conflicts and Breaks (deb) / conflicts (rpm) inside the closure are problems (upstream only finds
  them at build time; libsolv's SAT solving finds them here).

The installed set starts empty, as in the image build's fresh chroot.
"""

from __future__ import annotations

import logging
import os as _os
import threading
import time
from collections import OrderedDict, deque
from dataclasses import asdict, dataclass, field
from typing import Any

from ..knowledge.package_names import family_arch
from .index_parsers import open_index
from .matching import AllowFilter, is_glob
from .solv_loader import load_solv, solv_unavailable_reason
from .sources import SourceStatus, packages_from_template, repositories_from_template
from .verifier import IndexFile, IndexFiles, PackageVerifier

logger = logging.getLogger(__name__)

MAX_CHAIN = 12  # packages shown in one dependency chain
MAX_GRAPH_VISIT = 50_000  # bound on the explanatory search for packages outside the solution
_POOL_CACHE = 4


@dataclass
class ClosurePackage:
    name: str
    version: str
    arch: str
    installed_bytes: int
    repository: str
    chain: list[str]  # requested package ... this package


@dataclass
class Unresolvable:
    requirement: str  # the dependency nothing satisfies, e.g. "libfoo (>= 2)"
    needed_by: str | None  # the package whose dependency it is; None when the template asks for it
    chain: list[str]  # requested package ... needed_by
    message: str


@dataclass
class Conflict:
    package: str
    other: str
    relation: str
    chain: list[str]
    other_chain: list[str]
    message: str


@dataclass
class ClosureResult:
    """``checked``: the solver ran. ``complete``: every repository index was read, so an
    unresolvable dependency is really unresolvable (otherwise it may live in the unread one)."""

    checked: bool
    complete: bool
    dist: str | None
    arch: str | None
    requested: list[str]
    packages: list[ClosurePackage] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # requested names nothing provides
    virtual: dict[str, list[str]] = field(default_factory=dict)  # requested name -> real packages providing it
    suggestions: dict[str, list[str]] = field(default_factory=dict)
    unresolvable: list[Unresolvable] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    installed_bytes: int = 0
    excluded: list[str] = field(default_factory=list)  # requested packages left out of the closure (broken)
    sources: list[SourceStatus] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    solver: str = "libsolv"
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.checked and not (self.missing or self.unresolvable or self.conflicts)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["ok"] = self.ok
        d["package_count"] = len(self.packages)
        return d


# --------------------------------------------------------------------------- pools


@dataclass
class _Pool:
    pool: Any
    repos: dict[int, str]  # libsolv repo id -> source label
    load_seconds: float
    lock: threading.Lock = field(default_factory=threading.Lock)


class ClosureChecker:
    """Solves template closures with libsolv over the verifier's index files; pools are cached."""

    def __init__(self, verifier: PackageVerifier) -> None:
        self.verifier = verifier
        self._lock = threading.Lock()
        self._pools: OrderedDict[tuple[Any, ...], _Pool] = OrderedDict()

    # ------------------------------------------------------------------ public

    def check_template(self, data: dict[str, Any], *, extra: list[str] | None = None,
                       drop: list[str] | None = None) -> ClosureResult:
        target = found if isinstance(found := data.get("target"), dict) else {}
        names = [p for p in packages_from_template(data) if p not in set(drop or [])]
        names += [p for p in extra or [] if p not in names]
        return self.check(names, os=target.get("os"), dist=target.get("dist"), arch=target.get("arch"),
                          repositories=repositories_from_template(data))

    def check(self, packages: list[str], *, os: str | None, dist: str | None, arch: str | None,
              repositories: list[dict[str, Any]] | None = None) -> ClosureResult:
        names = list(dict.fromkeys(p.strip() for p in packages if isinstance(p, str) and p.strip()))
        solv = load_solv()
        if solv is None:
            return ClosureResult(False, False, dist, arch, names,
                                 message=f"Closure not checked: {solv_unavailable_reason()}")
        t0 = time.perf_counter()
        files = self.verifier.index_files(os=os, dist=dist, arch=arch, repositories=repositories)
        t_fetch = time.perf_counter() - t0
        if files.error:
            return ClosureResult(False, False, files.dist, files.arch, names, message=files.error)
        res = ClosureResult(False, files.complete, files.dist, files.arch, names, sources=files.sources,
                            notes=list(files.notes))
        if not files.files:
            failed = next((s for s in files.sources if not s.ok), None)
            res.message = ("Closure not checked: no repository index for "
                           f"{files.dist}/{files.arch} could be read"
                           + (f" ({failed.source}: {failed.error})." if failed else "."))
            return res
        if not names:
            res.checked = True
            res.message = "No packages requested; the closure is empty."
            return res
        entry = self._pool(solv, files)
        with entry.lock:  # a libsolv pool is not thread-safe
            t1 = time.perf_counter()
            self._solve(solv, entry, files, names, res)
            res.timings = {"fetch_s": round(t_fetch, 3), "load_s": round(entry.load_seconds, 3),
                           "solve_s": round(time.perf_counter() - t1, 3)}
        res.checked = True
        res.message = _message(res)
        return res

    def removal_impact(self, data: dict[str, Any], package: str) -> RemovalImpact:
        """What removing ``package`` from the template's package list would and would not do.

        The refine path calls this before dropping a package: when other requested packages depend on
        it, it stays in the image (and the change should say so)."""
        before = self.check_template(data)
        after = self.check_template(data, drop=[package])
        if not after.checked:
            return RemovalImpact(package, False, [], [], 0, after.message)
        still = next((p for p in after.packages if p.name == package), None)
        dependents = sorted({p.chain[0] for p in before.packages
                             if package in p.chain[1:] and p.chain and p.chain[0] != package})
        freed = max(0, before.installed_bytes - after.installed_bytes)
        if still is not None:
            msg = (f"Removing {package} from the package list does not remove it from the image: "
                   f"{' -> '.join(still.chain)} still needs it.")
        elif dependents:
            msg = f"{package} removed; {', '.join(dependents)} depended on it only through alternatives."
        else:
            msg = f"Removing {package} frees about {_fmt_mib(freed)} of installed size."
        return RemovalImpact(package, still is not None, still.chain if still else [], dependents, freed, msg)

    # ------------------------------------------------------------------ pool building

    def _pool(self, solv: Any, files: IndexFiles) -> _Pool:
        key = (files.family, files.arch, tuple((f.path, f.fingerprint, f.priority, f.allow) for f in files.files))
        with self._lock:
            got = self._pools.get(key)
            if got is not None:
                self._pools.move_to_end(key)
                return got
        t0 = time.perf_counter()
        pool = solv.Pool()
        deb = files.family == "deb"
        pool.setdisttype(solv.Pool.DISTTYPE_DEB if deb else solv.Pool.DISTTYPE_RPM)
        pool.setarch(family_arch(files.family or "rpm", files.arch or "x86_64"))
        repos: dict[int, str] = {}
        blocked: set[int] = set()
        for f in files.files:
            if f.priority < 0:  # upstream: negative priority blocks the repository
                continue
            repo = pool.add_repo(f.source)
            repo.priority = f.priority
            _add_index(solv, repo, f)
            repos[repo.id] = f.source
            if f.allow:
                allowed = AllowFilter(f.allow)
                blocked |= {s.id for s in repo.solvables if not allowed(s.name)}
        if not deb:
            _rpmlib_capabilities(solv, pool)
        pool.addfileprovides()
        pool.createwhatprovides()
        if blocked:
            # allowPackages: the other packages of that repository may not be chosen.
            pool.set_considered_list([s.id for s in pool.solvables_iter() if s.id not in blocked])
        entry = _Pool(pool, repos, time.perf_counter() - t0)
        logger.info("closure pool %s/%s: %d solvables from %d index(es) in %.2fs", files.dist, files.arch,
                    sum(r.nsolvables for r in pool.repos), len(repos), entry.load_seconds)
        with self._lock:
            self._pools[key] = entry
            while len(self._pools) > _POOL_CACHE:
                self._pools.popitem(last=False)
        return entry

    # ------------------------------------------------------------------ solving

    def _solve(self, solv: Any, entry: _Pool, files: IndexFiles, names: list[str], res: ClosureResult) -> None:
        pool = entry.pool
        jobs: list[Any] = []
        roots: dict[int, str] = {}  # solvable id of a requested package -> requested name
        unselected: set[str] = set()  # requested names no index has
        for name in names:
            sel = _select(solv, pool, name)
            if sel is None:
                providers = sorted({s.name for s in pool.whatprovides(pool.Dep(name))})
                if providers:
                    res.virtual[name] = providers
                    res.suggestions[name] = providers[:5]
                    sel = pool.select(name, solv.Selection.SELECTION_PROVIDES)
                else:
                    if files.complete:
                        res.missing.append(name)
                    else:
                        res.notes.append(f"{name}: not in the indexes that could be read (unchecked).")
                    unselected.add(name)
                    sugg = self.verifier.suggest(name, dist=files.dist, arch=files.arch) if files.complete else []
                    if sugg:
                        res.suggestions[name] = sugg
                    continue
            for s in sel.solvables():
                roots.setdefault(s.id, name)
            jobs += sel.jobs(solv.Job.SOLVER_INSTALL)
        if not jobs:
            return
        solver = pool.Solver()
        solver.set_flag(solv.Solver.SOLVER_FLAG_IGNORE_RECOMMENDED, 1)
        problems = solver.solve(jobs)
        if problems:
            self._problems(solv, pool, problems, roots, res, files.complete)
            # Solve again with every request weak, so the closure of everything that can be
            # installed is still measured; the broken requests are listed in ``excluded``.
            for j in jobs:
                j.how |= solv.Job.SOLVER_WEAK
            solver = pool.Solver()
            solver.set_flag(solv.Solver.SOLVER_FLAG_IGNORE_RECOMMENDED, 1)
            solver.solve(jobs)
        news = solver.transaction().newsolvables()
        # Alternatives "a | b": apt and os-image-composer take the first installable one; libsolv's
        # policy may pick another (e.g. dracut for "initramfs-tools | linux-initramfs-tool"). Favour
        # the first alternatives the solution skipped and solve again, until nothing changes.
        favoured: dict[str, bool] = {}
        for _ in range(4):
            extra = {k: v for k, v in _skipped_first_alternatives(solv, pool, news).items() if k not in favoured}
            if not extra:
                break
            favoured.update(extra)
            # FAVOR steers the choices libsolv makes; a weak INSTALL also covers requirements it never
            # had to choose for (already met by a package that Provides the name, e.g. lsb-base).
            fav_jobs = []
            for n, install in sorted(favoured.items()):
                sel = pool.select(n, solv.Selection.SELECTION_NAME)
                fav_jobs += sel.jobs(solv.Job.SOLVER_FAVOR)
                if install:
                    fav_jobs += sel.jobs(solv.Job.SOLVER_INSTALL | solv.Job.SOLVER_WEAK)
            solver = pool.Solver()
            solver.set_flag(solv.Solver.SOLVER_FLAG_IGNORE_RECOMMENDED, 1)
            if solver.solve(jobs + fav_jobs):
                break  # favouring made it unsolvable; keep the previous solution
            news = solver.transaction().newsolvables()
        installed = {s.id: s for s in news}
        chains = _chains(solv, pool, roots, installed)
        total = 0
        for s in sorted(news, key=lambda x: x.name):
            size = int(s.lookup_num(solv.SOLVABLE_INSTALLSIZE) or 0)
            total += size
            res.packages.append(ClosurePackage(s.name, s.evr, s.arch, size, entry.repos.get(s.repo.id, ""),
                                               chains.get(s.id) or [s.name]))
        res.installed_bytes = total
        have = {s.name for s in news}
        res.excluded = [n for n in names if n not in unselected and n not in have
                        and not (n in res.virtual and set(res.virtual[n]) & have) and not is_glob(n)]

    def _problems(self, solv: Any, pool: Any, problems: list[Any], roots: dict[int, str], res: ClosureResult,
                  complete: bool) -> None:
        seen: set[tuple[Any, ...]] = set()
        providers: dict[int, set[str]] = {}  # "requires X, but no provider installable" -> X's providers
        for problem in problems:
            for rule in problem.findallproblemrules():
                for info in rule.allinfos():
                    kind = info.type
                    s, o, dep = info.solvable, info.othersolvable, info.dep
                    if kind == solv.Solver.SOLVER_RULE_PKG_NOTHING_PROVIDES_DEP and s is not None:
                        key: tuple[str, ...] = ("u", s.name, str(dep))
                        if key in seen:
                            continue
                        seen.add(key)
                        chain = _chain_to(solv, pool, roots, s.id)
                        where = "" if complete else " in the indexes that could be read"
                        res.unresolvable.append(Unresolvable(
                            str(dep), s.name, chain,
                            f"nothing provides {dep}{where}, needed by {' -> '.join(chain)}"))
                    elif kind in (solv.Solver.SOLVER_RULE_PKG_CONFLICTS, solv.Solver.SOLVER_RULE_PKG_SELF_CONFLICT,
                                  solv.Solver.SOLVER_RULE_PKG_OBSOLETES,
                                  solv.Solver.SOLVER_RULE_PKG_IMPLICIT_OBSOLETES) and s is not None:
                        other = o.name if o is not None else s.name
                        key = ("c", *sorted((s.name, other)))
                        if key in seen:
                            continue
                        seen.add(key)
                        chain = _chain_to(solv, pool, roots, s.id)
                        other_chain = _chain_to(solv, pool, roots, o.id) if o is not None else chain
                        res.conflicts.append(Conflict(
                            s.name, other, str(dep) if dep is not None else "", chain, other_chain,
                            f"{info.problemstr()} ({' -> '.join(chain)} vs {' -> '.join(other_chain)})"))
                    elif kind == solv.Solver.SOLVER_RULE_PKG_REQUIRES and s is not None and dep is not None:
                        # Something provides it, but no provider is installable alongside the rest
                        # (version constraint or conflict): reported when no more specific rule explains it.
                        key = ("r", s.name, str(dep))
                        if key in seen:
                            continue
                        seen.add(key)
                        chain = _chain_to(solv, pool, roots, s.id)
                        entry = Unresolvable(
                            str(dep), s.name, chain,
                            f"{info.problemstr()}; no installable candidate (needed by {' -> '.join(chain)})")
                        providers[id(entry)] = {p.name for p in pool.whatprovides(dep)}
                        res.unresolvable.append(entry)
                    elif kind == solv.Solver.SOLVER_RULE_JOB_NOTHING_PROVIDES_DEP and dep is not None:
                        key = ("j", str(dep))
                        if key not in seen:
                            seen.add(key)
                            res.unresolvable.append(Unresolvable(str(dep), None, [], info.problemstr()))
        # "A requires B, but B cannot be installed" is noise when B's own problem (nothing provides
        # something B needs, or a conflict) is already reported.
        explained = {u.needed_by for u in res.unresolvable if id(u) not in providers}
        explained |= {c.package for c in res.conflicts} | {c.other for c in res.conflicts}
        res.unresolvable = [u for u in res.unresolvable if not (providers.get(id(u), set()) & explained)]


@dataclass
class RemovalImpact:
    package: str
    still_installed: bool  # another requested package needs it
    chain: list[str]  # why it stays
    dependents: list[str]  # requested packages that pulled it in before
    freed_bytes: int
    message: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# --------------------------------------------------------------------------- helpers


def _add_index(solv: Any, repo: Any, f: IndexFile) -> None:
    """Feed one index to libsolv, decompressing with open_index (it knows lz4, which libsolv may not)."""
    if hasattr(_os, "memfd_create"):  # an anonymous in-memory file; nothing lands on disk
        fd = _os.memfd_create("oic-index")
    else:  # pragma: no cover - non-Linux
        import tempfile

        fd, name = tempfile.mkstemp(prefix="oic-index-")
        _os.unlink(name)
    try:
        with open_index(f.path) as stream:
            while chunk := stream.read(1 << 22):
                _os.write(fd, chunk)
        _os.lseek(fd, 0, _os.SEEK_SET)
        fp = solv.xfopen_fd(None, _os.dup(fd))
        try:
            if f.family == "deb":
                repo.add_debpackages(fp, 0)
            else:
                repo.add_rpmmd(fp, None, 0)
        finally:
            fp.close()
    finally:
        _os.close(fd)


# What rpm itself provides (``rpm --querytags``/``rpmlib`` features): packages built by rpm may require
# them, and in a real transaction the installed rpm satisfies them. createrepo usually strips them
# from primary.xml; when a repository keeps them, they must not read as missing dependencies.
RPMLIB_FEATURES = (
    "BuiltinLuaScripts", "CaretInVersions", "CompressedFileNames", "DynamicBuildRequires",
    "ExplicitPackageProvide", "FileCaps", "FileDigests", "HeaderLoadSortsTags", "LargeFiles",
    "PartialHardlinkSets", "PayloadFilesHavePrefix", "PayloadIsBzip2", "PayloadIsLzma", "PayloadIsXz",
    "PayloadIsZstd", "RichDependencies", "ScriptletExpansion", "ScriptletInterpreterArgs",
    "ShortCircuited", "SysUsers", "TildeInVersions", "VersionedDependencies",
)


def _rpmlib_capabilities(solv: Any, pool: Any) -> None:
    repo = pool.add_repo("@rpm")
    s = repo.add_solvable()
    s.name, s.evr, s.arch = "rpmlib-capabilities", "1", "noarch"
    for feature in RPMLIB_FEATURES:
        s.add_deparray(solv.SOLVABLE_PROVIDES, pool.Dep(f"rpmlib({feature})"))
    repo.internalize()
    pool.installed = repo  # present before the transaction, so never part of the closure


def _select(solv: Any, pool: Any, name: str) -> Any:
    """Packages named ``name`` (globs allowed, ``name=version`` pins honoured); None when none."""
    flags = solv.Selection.SELECTION_NAME | solv.Selection.SELECTION_DOTARCH
    if is_glob(name):
        flags |= solv.Selection.SELECTION_GLOB
    sel = pool.select(name, flags)
    if not sel.isempty():
        return sel
    for sep in ("=", "_"):
        if sep in name:
            n, v = name.split(sep, 1)
            sel = pool.select(f"{n} = {v}", solv.Selection.SELECTION_NAME | solv.Selection.SELECTION_REL)
            if not sel.isempty():
                return sel
    return None


def _requires(solv: Any, s: Any) -> list[Any]:
    # marker 0: every requirement, including Pre-Depends / pre-requires behind the prereq marker.
    return list(s.lookup_deparray(solv.SOLVABLE_REQUIRES, 0))


def _skipped_first_alternatives(solv: Any, pool: Any, news: list[Any]) -> dict[str, bool]:
    """Real packages apt and os-image-composer would have picked but the solution did not.

    Both take the first alternative of "a | b", and a package really named like the requirement
    before any package that only Provides it (upstream findAllCandidates: exact name first). libsolv
    may satisfy "libavcodec59 (= v)" with libavcodec-extra59, which provides and conflicts with it."""
    names = {s.name for s in news}
    out: dict[str, bool] = {}  # name -> must be installed (True) or only favoured in a choice (False)
    for s in news:
        for dep in _requires(solv, s):
            text = str(dep)
            first = text.split(" | ", 1)[0].split(" ", 1)[0]
            if first in names or first in out:
                continue
            if pool.select(first, solv.Selection.SELECTION_NAME).isempty():
                continue
            # "a | b" already met by b, which is installed anyway: apt keeps b and adds nothing.
            # A plain requirement met only through a Provides: apt installs the real package.
            out[first] = " | " not in text
    return out


def _chains(solv: Any, pool: Any, roots: dict[int, str], installed: dict[int, Any]) -> dict[int, list[str]]:
    """Shortest dependency chain from a requested package to each installed one (BFS over the solution)."""
    parent: dict[int, int | None] = {}
    queue: deque[int] = deque()
    for sid in roots:
        if sid in installed and sid not in parent:
            parent[sid] = None
            queue.append(sid)
    while queue:
        sid = queue.popleft()
        for dep in _requires(solv, installed[sid]):
            for p in pool.whatprovides(dep):
                if p.id in installed and p.id not in parent:
                    parent[p.id] = sid
                    queue.append(p.id)
    out: dict[int, list[str]] = {}
    for sid in installed:
        if sid not in parent:
            continue
        chain: list[str] = []
        cur: int | None = sid
        while cur is not None:
            chain.append(installed[cur].name)
            cur = parent[cur]
        chain.reverse()
        out[sid] = _trim(chain)
    return out


def _chain_to(solv: Any, pool: Any, roots: dict[int, str], target: int) -> list[str]:
    """A dependency chain from a requested package to ``target`` over the whole repository graph."""
    if target in roots:
        return [pool.solvables[target].name]
    parent: dict[int, int | None] = {sid: None for sid in roots}
    queue: deque[int] = deque(roots)
    while queue and len(parent) < MAX_GRAPH_VISIT:
        sid = queue.popleft()
        for dep in _requires(solv, pool.solvables[sid]):
            for p in pool.whatprovides(dep):
                if p.id in parent:
                    continue
                parent[p.id] = sid
                if p.id == target:
                    chain: list[str] = []
                    cur: int | None = target
                    while cur is not None:
                        chain.append(pool.solvables[cur].name)
                        cur = parent[cur]
                    return _trim(chain[::-1])
                queue.append(p.id)
    return [pool.solvables[target].name]


def _trim(chain: list[str]) -> list[str]:
    if len(chain) <= MAX_CHAIN:
        return chain
    return [*chain[:2], f"... {len(chain) - MAX_CHAIN + 1} more ...", *chain[-(MAX_CHAIN - 3):]]


def _fmt_mib(n: int) -> str:
    return f"{n / 1024**3:.2f} GiB" if n >= 1024**3 else f"{n / 1024**2:.0f} MiB"


def _message(r: ClosureResult) -> str:
    target = f"{r.dist}/{r.arch}"
    parts = [f"Install closure for {target}: {len(r.packages)} packages, {_fmt_mib(r.installed_bytes)} installed."]
    if r.missing:
        parts.append(f"Not available: {', '.join(r.missing[:10])}.")
    for name, prov in r.virtual.items():
        parts.append(f"{name} is virtual; provided by {', '.join(prov[:5])}.")
    if r.unresolvable:
        parts.append(f"{len(r.unresolvable)} unresolvable dependenc{'y' if len(r.unresolvable) == 1 else 'ies'}: "
                     + "; ".join(u.message for u in r.unresolvable[:3]) + ".")
    if r.conflicts:
        parts.append(f"{len(r.conflicts)} conflict(s): " + "; ".join(c.message for c in r.conflicts[:3]) + ".")
    if r.excluded:
        parts.append(f"Left out of the closure (cannot be installed): {', '.join(r.excluded[:10])}.")
    if not r.complete:
        failed = [s for s in r.sources if not s.ok]
        parts.append(f"{len(failed)} repository index(es) could not be read "
                     f"(e.g. {failed[0].source}: {failed[0].error}); the closure may be incomplete."
                     if failed else "Some repositories could not be read.")
    parts += r.notes
    return " ".join(parts)


_checkers: dict[int, ClosureChecker] = {}
_checkers_lock = threading.Lock()


def checker_for(verifier: PackageVerifier) -> ClosureChecker:
    """One ClosureChecker (and its pool cache) per verifier."""
    with _checkers_lock:
        got = _checkers.get(id(verifier))
        if got is None or got.verifier is not verifier:
            got = _checkers[id(verifier)] = ClosureChecker(verifier)
        return got

