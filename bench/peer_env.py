"""The process settings the PyTorch training peers (bench/pytorch_gpt2_train.py,
bench/pytorch_llama_train.py) run under, as command-line options: OMP_WAIT_POLICY, PyTorch's
huge-page allocation, glibc's malloc tunables and, for the PyPI wheel on AMD CPUs, MKL's AVX2
kernels. Each must be in the environment before the process starts (glibc reads its tunables at
start-up, libgomp its settings when it loads, the preload at exec), so maybe_reexec() re-executes
the script with them before torch is imported. Which value is each peer's best is measured in
bench/README.md."""
import os
import sys

MALLOC_KEEP = "glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=68719476736"
_KEYS = ("OMP_WAIT_POLICY", "GLIBC_TUNABLES", "LD_PRELOAD", "THP_MEM_ALLOC_ENABLE")


def add_env_args(p, omp_wait_policy, mkl_amd=False):
    """Adds --omp-wait-policy (default `omp_wait_policy`), --thp, --malloc and, with mkl_amd,
    --mkl-amd to the argparse parser p."""
    p.add_argument("--omp-wait-policy", default=omp_wait_policy,
                   choices=["PASSIVE", "ACTIVE", "unset", "env"],
                   help="OMP_WAIT_POLICY to run under (re-executes the script); 'unset' runs "
                        "under libgomp's default, 'env' keeps whatever the environment has")
    p.add_argument("--thp", default="off", choices=["on", "off", "env"],
                   help="'on': THP_MEM_ALLOC_ENABLE=1, PyTorch's CPU allocator puts tensors of "
                        "2 MiB and more on 2 MiB boundaries and advises transparent huge pages "
                        "for them (as meshlm does for its big buffers); 'off': unset; 'env': "
                        "leave it alone (default: off, measured no faster here, see bench/README.md)")
    p.add_argument("--malloc", default="keep", choices=["keep", "default", "env"],
                   help="'keep': glibc malloc tunables that keep freed memory in the process "
                        "(no mmap for big blocks, no trimming) instead of returning it to the "
                        "kernel and page-faulting it back in every step; 'default': glibc's "
                        "defaults; 'env': leave GLIBC_TUNABLES alone")
    if mkl_amd:
        p.add_argument("--mkl-amd", default="avx2", choices=["avx2", "default"],
                       help="'avx2' (only acts on AMD CPUs): LD_PRELOAD a one-line library whose "
                            "mkl_serv_intel_cpu_true() returns 1, so the wheel's MKL takes its "
                            "AVX2 SGEMM kernels instead of its slow generic path on non-Intel "
                            "CPUs (built with cc into $TMPDIR on first use); 'default': MKL as "
                            "shipped")


def maybe_reexec(args):
    """Re-executes the script with the settings args asks for, unless they are already in place
    (or this is the re-executed process)."""
    if os.environ.get("MESHLM_BENCH_REEXEC") == "1":
        return
    env = dict(os.environ)
    if args.omp_wait_policy != "env":
        env.pop("OMP_WAIT_POLICY", None)
        if args.omp_wait_policy != "unset":
            env["OMP_WAIT_POLICY"] = args.omp_wait_policy
    if args.thp != "env":
        env.pop("THP_MEM_ALLOC_ENABLE", None)
        if args.thp == "on":
            env["THP_MEM_ALLOC_ENABLE"] = "1"
    if args.malloc != "env":
        env.pop("GLIBC_TUNABLES", None)
        if args.malloc == "keep":
            env["GLIBC_TUNABLES"] = MALLOC_KEEP
    if getattr(args, "mkl_amd", "default") == "avx2":
        from mkl_amd import is_amd, mkl_amd_library  # bench/: the script's folder is on sys.path
        if is_amd():
            try:
                lib = mkl_amd_library()
                pre = env.get("LD_PRELOAD", "")
                if lib not in pre.split():
                    env["LD_PRELOAD"] = (pre + " " + lib).strip()
            except Exception as e:  # noqa: BLE001 - no compiler: run MKL as shipped
                print(f"--mkl-amd avx2: cannot build the library ({e}), MKL as shipped",
                      file=sys.stderr)
    if all(env.get(k) == os.environ.get(k) for k in _KEYS):
        return
    env["MESHLM_BENCH_REEXEC"] = "1"
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable] + sys.argv, env)


def env_report():
    """The settings the process runs under, for the peers' JSON line."""
    return {
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
        "glibc_tunables": os.environ.get("GLIBC_TUNABLES"),
        "thp_alloc": os.environ.get("THP_MEM_ALLOC_ENABLE") == "1",
    }
