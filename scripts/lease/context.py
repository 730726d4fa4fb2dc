"""What every step of a lease works with: the binaries, the environments they run in, the sizes
(production on a GPU, smoke on the simulator), the facts the preflight found, the log folder."""
import os
import shutil
import subprocess
from dataclasses import dataclass, field


@dataclass
class Binaries:
    mixgpt: str
    tests: str
    lab: str


@dataclass
class Sizes:
    """The problem sizes of the lease's steps: production (a GPU) or smoke (the simulator)."""
    bench: list  # mixgpt bench's model, shape and steps
    bench_d24: list  # the same for the larger model of the fp8-against-bf16 pair (issue 28's target)
    torch: list  # torch_bench.py's: the same where it has the options
    torch_compile: bool  # also under torch.compile (not on a CPU's PyTorch)
    test_filter: str
    per_test_s: int
    sanitizer_filter: str  # the reduced flash attention + LayerNorm tests
    probe: list  # the tensor-core probe's arguments (random tiles per input type)
    lab: list  # the kernel lab's size arguments
    memcheck_lab: list  # the kernel lab under memcheck: its smoke sizes
    attention_lengths: str
    train: list  # mixgpt train's model, shape and steps for the KJV run
    eval_tokens: int


PRODUCTION = Sizes(
    bench=["--model", "d12", "-b", "16", "-t", "1024", "--warmup-steps", "3", "--steps", "10"],
    bench_d24=["--model", "d24", "-b", "16", "-t", "1024", "--warmup-steps", "3", "--steps", "10"],
    torch=["--model", "d12", "-b", "16", "-t", "1024", "--warmup-steps", "3", "--steps", "10"],
    torch_compile=True,
    test_filter="Gpu*",
    per_test_s=60,
    sanitizer_filter=":".join([
        "GpuPrecisions/GpuFlashAttention.ForwardAndBackwardWithinTwiceTheCpuError/bf16",
        "GpuPrecisions/GpuLayers.LayerNormForward/bf16",
        "GpuPrecisions/GpuLayers.ResidualLayerNormForward/bf16",
        "GpuPrecisions/GpuLayers.LayerNormBackward/bf16",
    ]),
    probe=["--probe-tiles", "4096"],
    lab=["--sizes", "production"],
    memcheck_lab=["--sizes", "smoke"],
    attention_lengths="1024",
    train=["--model", "d12", "-b", "16", "-t", "1024", "--steps", "300", "--warmup-steps", "30", "--lr", "6e-4",
           "--eval-batches", "8", "--telemetry-interval", "100"],
    eval_tokens=32768,
)

# The simulator runs every launch's blocks on one CPU core: the same steps at sizes of seconds.
SMOKE = Sizes(
    bench=["--model", "d2", "--n-layer", "1", "--vocab-size", "256", "-b", "1", "-t", "32", "--warmup-steps", "1",
           "--steps", "1"],
    bench_d24=["--model", "d2", "--n-layer", "2", "--vocab-size", "256", "-b", "1", "-t", "32", "--warmup-steps", "1",
               "--steps", "1"],
    torch=["--model", "d2", "--vocab-size", "256", "-b", "1", "-t", "32", "--warmup-steps", "1", "--steps", "1",
           "--threads", "1"],
    torch_compile=False,
    test_filter="GpuBackend.*:GpuPrecisions/GpuOptimizer.*:GpuPrecisions/GpuClassifier.*",
    per_test_s=30,
    sanitizer_filter=PRODUCTION.sanitizer_filter,
    probe=["--probe-tiles", "64"],
    lab=["--sizes", "smoke"],
    memcheck_lab=["--sizes", "smoke", "--attention-lengths", "64"],
    attention_lengths="64",
    train=["--model", "d2", "--n-layer", "1", "-b", "1", "-t", "32", "--steps", "2", "--eval-batches", "1",
           "--telemetry-interval", "1"],
    eval_tokens=128,
)


@dataclass
class Facts:
    """What the preflight found, which decides the steps that can run."""
    device: str = ""  # "" when no CUDA device is usable; else its name
    no_device: str = ""  # the runtime's reason there is none
    cublaslt: str = ""  # "" when missing; else its version text
    nccl: str = ""
    missing_cublaslt: str = ""
    missing_nccl: str = ""
    python: str = ""  # the python3 with PyTorch
    torch: str = ""  # its version; "" when none
    torch_cuda: bool = False
    sanitizer: str = ""  # path of compute-sanitizer
    dataset: str = ""  # the KJV dataset carried in the bundle


@dataclass
class Context:
    bundle: str  # the unpacked bundle (or a build folder)
    simulator: bool
    binaries: Binaries
    sizes: Sizes
    work: str  # logs and run folders; archived at the end
    binary_env: dict  # mixgpt's binaries: the bundle's env.sh applied
    host_env: dict  # PyTorch: the host's own library path
    seed: str
    facts: Facts = field(default_factory=Facts)
    figures: dict = field(default_factory=dict)

    def log(self, name):
        return os.path.join(self.work, name)


def bundle_environment(bundle, environment):
    """The environment after `source bundle/env.sh` (CUDA folders put on LD_LIBRARY_PATH)."""
    env_sh = os.path.join(bundle, "env.sh")
    if not os.path.isfile(env_sh) or shutil.which("bash") is None:
        return dict(environment)
    result = subprocess.run(["bash", "-c", 'source "$1" >/dev/null 2>&1; printf %s "${LD_LIBRARY_PATH:-}"', "-", env_sh],
                            capture_output=True, text=True, env=environment, timeout=60)
    updated = dict(environment)
    if result.stdout:
        updated["LD_LIBRARY_PATH"] = result.stdout
    return updated


def binaries_of(bundle, simulator_build):
    """The simulator's builds of the binaries when simulator_build is given, else the bundle's."""
    if simulator_build:
        return Binaries(*(os.path.join(simulator_build, name)
                          for name in ("mixgpt_sim", "mixgpt_sim_tests", "mixgpt_kernel_lab_sim")))
    folder = os.path.join(bundle, "bin") if os.path.isdir(os.path.join(bundle, "bin")) else bundle
    return Binaries(*(os.path.join(folder, name) for name in ("mixgpt", "mixgpt_tests", "mixgpt_kernel_lab")))
