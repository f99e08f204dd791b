"""The ``multi_resource`` kind: GPU, CPU and memory for DNN training jobs (Synergy, OSDI'22).

Each job has a profile: its throughput at several (CPUs per GPU, memory per GPU) levels.
One integrated MILP picks a profile per job (never below the job's fair-share
throughput) and places the job on servers within their GPU, CPU and memory capacity,
maximising the total throughput. A lexicographic second solve then minimises the number
of servers in use with the throughput fixed at its optimum. See
``models/multi_resource.md``.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd
import pyomo.environ as pyo

from ...highs import CompiledModel, HighsModel, RawSolution, compile_model
from ...options import SolveOptions
from ...result import Result, Verification
from ...status import Status
from ..base import Extracted, Kind, Objective, UsageError, finish
from . import formulations as F
from . import heuristic as H
from . import verify as V
from .data import Job, MultiResourceInstance, Profile, Server
from .decompose import DECOMPOSER

__all__ = ["KIND", "Job", "MultiResourceInstance", "MultiResourceKind", "Profile", "Server"]

log = logging.getLogger(__name__)

FRAGMENTATION_TIME_LIMIT_S = 30.0
"""Time limit of the fragmentation solve when the options give none."""


class MultiResourceKind(Kind):
    name = "multi_resource"
    description = "GPU, CPU and memory for DNN training jobs on servers (Synergy)"
    objectives = (
        Objective(
            "max_total_throughput",
            "choose a profiled (CPUs, memory) per GPU configuration per job, never below its "
            "fair share, and place jobs on servers; maximise the sum of throughputs",
            "normalised throughput",
            "max",
        ),
    )
    instance_model = MultiResourceInstance
    decomposer = DECOMPOSER
    params = {
        "fragmentation": "minimise servers in use as a lexicographic second objective "
        "(default true)",
        "symmetry": "order identical servers by GPUs used (default true)",
        "config_bound": "also solve the configuration-only knapsack bound (default true)",
        "warm_start": "start HiGHS from a greedy packing of the knapsack's configurations "
        "(default true)",
    }

    def build(
        self, instance: MultiResourceInstance, objective: str, symmetry: bool = True, **_: Any
    ) -> pyo.ConcreteModel:
        if objective != "max_total_throughput":
            raise UsageError(f"kind {self.name!r} has no objective {objective!r}")
        return F.build_max_total_throughput(instance.arrays, symmetry=bool(symmetry))

    def solve(
        self,
        instance: MultiResourceInstance,
        objective: str,
        options: SolveOptions,
        fragmentation: bool = True,
        symmetry: bool = True,
        config_bound: bool = True,
        warm_start: bool = True,
    ) -> Result:
        for flag, v in (
            ("fragmentation", fragmentation),
            ("symmetry", symmetry),
            ("config_bound", config_bound),
            ("warm_start", warm_start),
        ):
            if not isinstance(v, bool):
                raise UsageError(f"parameter {flag} must be true or false, got {v!r}")
        arr = instance.arrays
        t0 = time.perf_counter()
        m = self.build(instance, objective, symmetry)
        t1 = time.perf_counter()
        cm = compile_model(m)
        hm = HighsModel(cm)
        t2 = time.perf_counter()
        info: dict[str, Any] = {
            "fair_share_cpus_per_gpu": arr.cpus_per_gpu,
            "fair_share_mem_gb_per_gpu": arr.mem_gb_per_gpu,
            "candidate_profiles": len(F.candidate_profiles(arr)),
            "split_jobs": len(m._layout.split_jobs),
            "symmetry_breaking": bool(symmetry),
        }
        preferred: dict[int, int] = {}
        if config_bound or warm_start:
            cinfo, preferred = self._config_bound(instance, options)
            if config_bound:
                info.update(cinfo)
            info["config_only_s"] = cinfo["config_only_s"]
        if warm_start:
            ts = time.perf_counter()
            packing = H.greedy_packing(arr, preferred)
            x0 = H.start_vector(arr, m, cm, packing) if packing is not None else None
            if x0 is not None:
                hm.set_start(x0)
                info["start_throughput"] = float(x0[cm.column(m.total_throughput)])
            else:
                info["start_throughput"] = None
            info["start_s"] = time.perf_counter() - ts
        raw = hm.solve(options)
        solve_s = raw.solve_s
        final = raw
        if fragmentation and raw.status == Status.OPTIMAL and raw.x is not None:
            final, frag_info = self._fragmentation_solve(m, cm, hm, raw, options)
            solve_s += frag_info.pop("solve_s")
            info.update(frag_info)
        elif fragmentation:
            info["fragmentation_status"] = "skipped: throughput not proven optimal"

        def extract(c: CompiledModel, r: RawSolution) -> Extracted:
            return self.extract(instance, m, c, r)

        t3 = time.perf_counter()
        result = finish(self, instance, objective, cm, final, extract, info)
        t4 = time.perf_counter()
        timings = {
            "build_s": t1 - t0,
            "transfer_s": t2 - t1,
            "solve_s": solve_s,
            "load_s": t4 - t3,
        }
        return replace(result, timings=timings, runtime_s=t4 - t0)

    def _fragmentation_solve(
        self,
        m: pyo.ConcreteModel,
        cm: CompiledModel,
        hm: HighsModel,
        raw: RawSolution,
        options: SolveOptions,
    ) -> tuple[RawSolution, dict[str, Any]]:
        """Minimise servers in use with ``total_throughput`` fixed at its optimum."""
        assert raw.x is not None
        jt = cm.column(m.total_throughput)
        z1 = float(raw.x[jt])
        used_cols = cm.columns_of(m.in_use)
        hm.set_col_bounds(m.total_throughput, z1 - 1e-9 * max(1.0, abs(z1)), None)
        hm.set_objective_coefficients(np.array([jt]), np.array([0.0]))
        hm.set_objective_coefficients(used_cols, -np.ones(len(used_cols)))
        # start from the throughput-optimal solution with in_use at its smallest value
        x0 = raw.x.copy()
        gpu_used = self._server_gpus(m, cm, x0)
        x0[used_cols] = (gpu_used > 0.5).astype(float)
        hm.set_start(x0)
        limit = options.time_limit_s or FRAGMENTATION_TIME_LIMIT_S
        raw2 = hm.solve(replace(options, time_limit_s=limit))
        info: dict[str, Any] = {"solve_s": raw2.solve_s, "fragmentation_status": str(raw2.status)}
        if raw2.x is None:
            info["fragmentation_status"] = f"no solution: {raw2.termination}"
            return raw, info
        if raw2.bound is not None:
            info["servers_used_bound"] = -float(raw2.bound)
        t1 = self._throughput(m, cm, raw.x)
        t2 = self._throughput(m, cm, raw2.x)
        if t2 < t1 - 1e-9 * max(1.0, abs(t1)):
            info["fragmentation_status"] = "rejected: it lowered the throughput"
            return raw, info
        return replace(raw, x=raw2.x), info

    @staticmethod
    def _server_gpus(m: pyo.ConcreteModel, cm: CompiledModel, x: np.ndarray) -> np.ndarray:
        lay: F.Layout = m._layout
        arr_g = np.zeros(len(m.in_use))
        a = x[cm.columns_of(m.assign)] if len(lay.assign_prof) else np.zeros(0)
        s = x[cm.columns_of(m.split_gpus)] if len(lay.split_prof) else np.zeros(0)
        np.add.at(arr_g, lay.assign_srv, np.round(a))
        np.add.at(arr_g, lay.split_srv, np.round(s))
        return arr_g

    @staticmethod
    def _throughput(m: pyo.ConcreteModel, cm: CompiledModel, x: np.ndarray) -> float:
        lay: F.Layout = m._layout
        a = np.round(x[cm.columns_of(m.assign)]) if len(lay.assign_prof) else np.zeros(0)
        ch = np.round(x[cm.columns_of(m.choice)]) if len(lay.choice_prof) else np.zeros(0)
        tput = m._tput
        return float(a @ tput[lay.assign_prof] + ch @ tput[lay.choice_prof])

    def _config_bound(
        self, instance: MultiResourceInstance, options: SolveOptions
    ) -> tuple[dict[str, Any], dict[int, int]]:
        """Solve the configuration-only knapsack: its bound and its profile per job."""
        t0 = time.perf_counter()
        arr = instance.arrays
        cmod = F.build_config_only(arr)
        ccm = compile_model(cmod)
        raw = HighsModel(ccm).solve(options)
        out: dict[str, Any] = {"config_only_status": str(raw.status)}
        if raw.status == Status.OPTIMAL and raw.objective is not None:
            out["config_only_bound"] = float(raw.objective)
        elif raw.bound is not None and np.isfinite(raw.bound):
            out["config_only_bound"] = float(raw.bound)
        preferred: dict[int, int] = {}
        if raw.x is not None:
            prof = cmod._profiles
            chosen = raw.values(ccm, cmod.choice, range(len(prof))) > 0.5
            preferred = {int(arr.prof_job[p]): int(p) for p in prof[chosen]}
        out["config_only_s"] = time.perf_counter() - t0
        return out, preferred

    def extract(
        self,
        instance: MultiResourceInstance,
        m: pyo.ConcreteModel,
        cm: CompiledModel,
        raw: RawSolution,
    ) -> Extracted:
        arr = instance.arrays
        lay: F.Layout = m._layout
        recs: list[tuple[int, int, int, float]] = []  # job, server, flat profile, gpus
        if len(lay.assign_prof):
            # hand out each class's jobs, in order, to its (profile, server) counts
            xa = np.round(raw.values(cm, m.assign, range(len(lay.assign_prof)))).astype(int)
            nxt = [0] * len(lay.class_members)
            rep_bounds = np.searchsorted(arr.prof_job, np.arange(arr.num_jobs + 1))
            for k in np.nonzero(xa >= 1)[0]:
                c = int(lay.assign_cls[k])
                members = lay.class_members[c]
                pos = int(lay.assign_prof[k]) - rep_bounds[members[0]]
                for j in members[nxt[c] : nxt[c] + xa[k]]:
                    p = int(rep_bounds[j] + pos)
                    recs.append((int(j), int(lay.assign_srv[k]), p, float(arr.job_gpus[j])))
                nxt[c] += int(xa[k])
        if len(lay.split_prof):
            xs = np.round(raw.values(cm, m.split_gpus, range(len(lay.split_prof))))
            for k in np.nonzero(xs >= 1)[0]:
                p = int(lay.split_prof[k])
                recs.append((int(arr.prof_job[p]), int(lay.split_srv[k]), p, float(xs[k])))
        recs.sort()
        p_idx = np.array([r[2] for r in recs], dtype=np.int64)
        g = np.array([r[3] for r in recs], dtype=float)
        jobs = np.array([r[0] for r in recs], dtype=np.int64)
        srv = np.array([r[1] for r in recs], dtype=np.int64)
        allocation = pd.DataFrame(
            {
                "job": [arr.job_ids[j] for j in jobs],
                "server": [arr.server_ids[s] for s in srv],
                "profile": arr.prof_pos[p_idx],
                "gpus": g.astype(int),
                "cpus": g * arr.prof_cpu[p_idx],
                "mem_gb": g * arr.prof_mem[p_idx],
                "throughput": arr.prof_tput[p_idx],
                "fair_share_throughput": arr.fair_share[jobs],
            }
        )
        S = arr.num_servers
        gu, cu, mu = np.zeros(S), np.zeros(S), np.zeros(S)
        np.add.at(gu, srv, g)
        np.add.at(cu, srv, allocation["cpus"].to_numpy())
        np.add.at(mu, srv, allocation["mem_gb"].to_numpy())
        nj = np.zeros(S, dtype=int)
        np.add.at(nj, srv, 1)
        servers = pd.DataFrame(
            {
                "server": arr.server_ids,
                "gpus_used": gu.astype(int),
                "gpus": arr.srv_gpus.astype(int),
                "cpus_used": cu,
                "cpus": arr.srv_cpus,
                "mem_gb_used": mu,
                "mem_gb": arr.srv_mem,
                "jobs": nj,
            }
        )
        # each job counted once (a split job has one row per server)
        first = ~pd.Series(jobs).duplicated().to_numpy()
        value = float(arr.prof_tput[p_idx][first].sum())
        info = {
            "servers_used": int((gu > 0).sum()),
            "fair_share_total": float(arr.fair_share.sum()),
        }
        return Extracted(value, {"allocation": allocation, "servers": servers}, info)

    def verify(self, instance: MultiResourceInstance, result: Result) -> Verification:
        return V.verify(instance, result.objective_value, result.tables["allocation"])


KIND = MultiResourceKind()
