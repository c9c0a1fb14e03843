"""MKL on AMD CPUs: the PyPI wheels' MKL runs slow generic SGEMM kernels unless it believes the
CPU is Intel's. The PyTorch peers (bench/pytorch_llama_train.py, bench/gemm_torch.py) LD_PRELOAD
a one-line library whose mkl_serv_intel_cpu_true() returns 1, so MKL takes its AVX2 kernels:
their best setting there (bench/README.md)."""
import os


def is_amd():
    try:
        with open("/proc/cpuinfo") as f:
            return "AuthenticAMD" in f.read(4096)
    except OSError:
        return False


def mkl_amd_library():
    """Path of a shared library defining mkl_serv_intel_cpu_true() { return 1; } (built once)."""
    import subprocess
    import tempfile
    d = os.path.join(tempfile.gettempdir(), "meshlm-bench-%d" % os.getuid())
    lib = os.path.join(d, "libmkl_intel_cpu_true.so")
    if not os.path.exists(lib):
        os.makedirs(d, exist_ok=True)
        src = os.path.join(d, "mkl_intel_cpu_true.c")
        with open(src, "w") as f:
            f.write("int mkl_serv_intel_cpu_true(void) { return 1; }\n")
        subprocess.run([os.environ.get("CC", "cc"), "-shared", "-fPIC", "-O2", "-o", lib + ".tmp",
                        src], check=True)
        os.replace(lib + ".tmp", lib)
    return lib
