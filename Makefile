# mixgpt build. `make` builds build/mixgpt and build/mixgpt_tests; `make help` lists targets.
#
# CPU code: g++ -O3 with OpenMP. CUDA code (kernels/cuda, */cuda/): nvcc, when a toolkit is found
# in $CUDA_HOME, else /usr/local/cuda, else from nvcc on PATH. Without one, */no_cuda/ sources are
# built instead and `--device cuda` says the binary was built without CUDA.

SHELL := /bin/bash
BUILD ?= build
CXX ?= g++
GPU_ARCHS ?= 80 90
DEBUG ?= 0
# e.g. SANITIZE=address,undefined: the C++ code (not nvcc's) built with those sanitizers.
SANITIZE ?=
V ?= 0
# Compile jobs of the builds that test, demo, bench and bundle start (make -jN of your own wins).
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
QUIET := $(if $(filter 1,$(V)),,@)

NVCC_ON_PATH := $(shell command -v nvcc 2>/dev/null)
CUDA_HOME ?= $(if $(wildcard /usr/local/cuda/bin/nvcc),/usr/local/cuda,$(if $(NVCC_ON_PATH),$(patsubst %/bin/nvcc,%,$(NVCC_ON_PATH)),))
# A toolkit in NVIDIA's layout (CUDA_HOME/bin/nvcc, include/, lib64/) or in Debian's, unpacked
# into a prefix by scripts/fetch_cuda12.sh (CUDA_HOME/usr/lib/nvidia-cuda-toolkit/bin/nvcc,
# usr/include/, usr/lib/x86_64-linux-gnu/). Debian's package installed system-wide is found
# as CUDA_HOME=/usr through its /usr/bin/nvcc, and its headers and libraries need no flags there.
DEBIAN_CUDA_BIN := $(CUDA_HOME)/usr/lib/nvidia-cuda-toolkit/bin
ifneq ($(wildcard $(DEBIAN_CUDA_BIN)/nvcc),)
  CUDA_BIN := $(DEBIAN_CUDA_BIN)
  CUDA_INCLUDE := $(CUDA_HOME)/usr/include
  CUDA_LIB := $(CUDA_HOME)/usr/lib/x86_64-linux-gnu
else
  CUDA_BIN := $(CUDA_HOME)/bin
  CUDA_INCLUDE := $(filter-out /usr/include,$(CUDA_HOME)/include)
  CUDA_LIB := $(CUDA_HOME)/lib64
endif
NVCC := $(CUDA_BIN)/nvcc
WITH_CUDA := $(if $(and $(CUDA_HOME),$(wildcard $(NVCC))),1,0)

# ---- external libraries (Debian packages installed by scripts/setup.sh) ----
OPENBLAS_LIB := /usr/lib/x86_64-linux-gnu/openblas-openmp
OPENBLAS_INCLUDE := /usr/include/x86_64-linux-gnu/openblas-openmp
HDF5_CFLAGS := $(shell pkg-config --cflags hdf5 2>/dev/null || echo -I/usr/include/hdf5/serial)
HDF5_LIBS := $(shell pkg-config --libs hdf5 2>/dev/null || echo -L/usr/lib/x86_64-linux-gnu/hdf5/serial -lhdf5)
# Only its include folders: OpenMPI 4.1.0 (Debian 11) adds -pthread, which nvcc refuses and which
# -fopenmp implies for g++.
MPI_CFLAGS := $(filter -I%,$(shell mpicxx --showme:compile 2>/dev/null))
MPI_LIBS := $(shell mpicxx --showme:link 2>/dev/null)

# CLI11 and toml++ (header-only) from Debian 12's packages, where scripts/setup.sh unpacked them
# because the distribution has none (Debian 11).
HEADER_FALLBACK := .deps/debian12/usr/include
EXTERNAL_INCLUDES := $(patsubst -I%,-isystem %,$(HDF5_CFLAGS) $(MPI_CFLAGS)) -isystem $(OPENBLAS_INCLUDE) \
                     $(if $(wildcard $(HEADER_FALLBACK)),-isystem $(HEADER_FALLBACK),)
OPT_FLAGS := $(if $(filter 1,$(DEBUG)),-O0 -g -DMIXGPT_DEBUG_SYNC,-O3 -g1)
# nvcc knows -g but not -g1: device code gets -lineinfo below, host code -g1 through -Xcompiler.
NVCC_OPT_FLAGS := $(if $(filter 1,$(DEBUG)),-O0 -g -DMIXGPT_DEBUG_SYNC,-O3 -Xcompiler -g1)
DEFINES := $(if $(filter 1,$(WITH_CUDA)),-DMIXGPT_WITH_CUDA -DMIXGPT_WITH_NCCL,)
SANITIZE_FLAGS := $(if $(SANITIZE),-fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all,)
# GCC 12 reports false maybe-uninitialized warnings inside <regex> and <functional> under the
# sanitizers' instrumentation.
SANITIZE_CXXFLAGS := $(if $(SANITIZE),$(SANITIZE_FLAGS) -Wno-maybe-uninitialized,)
# -fno-math-errno: nothing reads errno after a math call, and without it every std::sqrt is a
# branch to the library that keeps loops such as AdamW's from vectorizing. -fno-trapping-math:
# nothing reads the floating-point exception flags, and without it a float comparison under ?:
# (exp_vectorizable's range checks) may not be if-converted, so GELU and softmax loops stay scalar.
# Neither changes a result: no reassociation, no finite-math assumption.
CXXFLAGS := -std=c++17 $(OPT_FLAGS) -fno-math-errno -fno-trapping-math $(SANITIZE_CXXFLAGS) -fopenmp -Wall -Wextra -Werror -I. $(EXTERNAL_INCLUDES) $(DEFINES) \
            $(if $(and $(filter 1,$(WITH_CUDA)),$(CUDA_INCLUDE)),-isystem $(CUDA_INCLUDE),) -MMD -MP
# OpenBLAS is not linked: kernels/cpu/openblas_library.cpp loads it (dlopen, found through this
# run path) when the first CPU backend is made, after checking the address-space limit.
# -ldl: before glibc 2.34 (Debian 11 has 2.31) dlopen and dlsym live in libdl, not libc.
LDLIBS := $(SANITIZE_FLAGS) -fopenmp -lsentencepiece -lsentencepiece_train $(HDF5_LIBS) \
          -Wl,-rpath,$(OPENBLAS_LIB) -lcrypto -lz -lzstd -llzma $(MPI_LIBS) -lpthread -ldl
# The CUDA simulator's test binary links no CUDA library: tests/cuda_sim/ stands in for them.
SIM_LDLIBS := $(LDLIBS)

NVCC_ARCH_FLAGS := $(foreach arch,$(GPU_ARCHS),-gencode arch=compute_$(arch),code=sm_$(arch))
NVCCFLAGS := -std=c++17 $(NVCC_OPT_FLAGS) -lineinfo -Xptxas=--warn-on-spills $(NVCC_ARCH_FLAGS) -I. \
             $(EXTERNAL_INCLUDES) $(DEFINES) --expt-relaxed-constexpr -Werror all-warnings \
             -Xcompiler -fopenmp,-Wall,-Wextra,-Werror -MMD -MP
# The toolkit's major version (12, 13), for the flags that differ between them.
NVCC_MAJOR := $(if $(filter 1,$(WITH_CUDA)),$(shell $(NVCC) --version 2>/dev/null | sed -n 's/.*release \([0-9]*\)\..*/\1/p'),)
# PTX of the kernels for the last architecture of GPU_ARCHS, read by scripts/check_kernel_instructions.sh.
PTX_ARCH := $(lastword $(GPU_ARCHS))
PTX_NVCCFLAGS := -std=c++17 -O3 -arch=compute_$(PTX_ARCH) -I. $(EXTERNAL_INCLUDES) $(DEFINES) \
                 --expt-relaxed-constexpr -Werror all-warnings -MMD -MP
# Neither cuBLASLt nor NCCL is linked: kernels/cuda/{cublaslt,nccl}_library.cpp load them on first
# use (dlopen), so every binary starts on a host without them.
CUDA_LDLIBS := -L$(CUDA_LIB) -lcudart_static -ldl -lrt

# ---- sources ----
LIB_DIRS := core kernels kernels/cpu model tokenizer dist train eval study interop cli
LIB_SRCS := $(filter-out cli/main.cpp,$(wildcard $(addsuffix /*.cpp,$(LIB_DIRS))))
CUDA_ONLY_SRCS := $(wildcard */cuda/*.cu */cuda/*.cpp)
NO_CUDA_SRCS := $(wildcard */no_cuda/*.cpp)
TEST_SRCS := $(wildcard tests/*.cpp tests/gpu/*.cpp)
MPI_TEST_SRCS := $(wildcard tests/mpi/*.cpp)
# Multi-rank tests that read the simulator's own state (its NCCL call log): simulator only.
SIM_MPI_TEST_SRCS := $(wildcard tests/mpi/sim/*.cpp)
BENCH_SRCS := $(wildcard bench/*.cpp)
KERNEL_LAB_SRCS := $(wildcard bench/kernel_lab/*.cu bench/kernel_lab/*.cpp)
# The CUDA simulator (tests/cuda_sim/, CUDA builds only): kernels/cuda/*.cu compiled by g++ and
# run on the CPU, so the GPU tests (tests/gpu/) run without a GPU. See tests/cuda_sim/README.md.
SIM_CU_SRCS := $(wildcard kernels/cuda/*.cu)
SIM_SRCS := $(wildcard tests/cuda_sim/*.cpp)
PTX_FILES := $(patsubst %.cu,$(BUILD)/ptx/%.ptx,$(SIM_CU_SRCS))
# ptxas' reports of the kernels' objects, read by scripts/check_launch_resources.py.
KERNEL_RESOURCE_REPORTS := $(patsubst %,$(BUILD)/obj/%.resources,$(SIM_CU_SRCS))
SIM_TEST_SRCS := $(wildcard tests/gpu/*.cpp tests/sim/*.cpp tests/*support.cpp) tests/reference_f64.cpp tests/reference_f64_gpt.cpp tests/reference_f64_muon.cpp
# The kernel lab's sections, which tests/sim/ runs at their smoke sizes.
SIM_KERNEL_LAB_SRCS := $(filter-out bench/kernel_lab/main.cpp,$(KERNEL_LAB_SRCS))

ifeq ($(WITH_CUDA),1)
  LIB_SRCS += $(CUDA_ONLY_SRCS)
  LDLIBS += $(CUDA_LDLIBS)
else
  LIB_SRCS += $(NO_CUDA_SRCS)
endif

# Units: groups of sources compiled as one translation unit, $(BUILD)/generated/units/NAME.cpp, which
# includes them (make test's build on 2 cores: each of these sources spends most of its compile time
# on the headers the group shares). cli/: CLI11 2.1's header alone costs 6 CPU-s at -O3 in every unit
# that includes it (its validators are objects defined in the header, compiled again in each unit):
# the 20 sources took 120 CPU-s as 20 units, 18 as one. tests/test_bad_inputs*, tests/test_train_*:
# their support headers (bad_inputs_support.h 4 CPU-s, test_train_support.h 3 CPU-s), 75 CPU-s as
# 10 units and 60 as 18, about 20 each as one; tests/sim/, tests/test_cpu_*, tests/mpi/test_*: likewise.
# The sources of a unit share one scope: their file-local names (anonymous namespaces) must differ.
UNITS := cli tests_bad_inputs tests_train tests_sim tests_cpu tests_mpi
UNIT_SRCS_cli := $(filter-out cli/main.cpp,$(wildcard cli/*.cpp))
UNIT_SRCS_tests_bad_inputs := $(wildcard tests/test_bad_inputs*.cpp)
UNIT_SRCS_tests_train := $(wildcard tests/test_train_*.cpp)
UNIT_SRCS_tests_sim := $(wildcard tests/sim/*.cpp)
# test_cpu_support.cpp is not in the unit: the simulator's tests link it without the CPU tests.
UNIT_SRCS_tests_cpu := $(filter-out %_support.cpp,$(wildcard tests/test_cpu_*.cpp))
UNIT_SRCS_tests_mpi := $(wildcard tests/mpi/test_*.cpp)
UNIT_SRCS := $(foreach unit,$(UNITS),$(UNIT_SRCS_$(unit)))
unit_object = $(BUILD)/obj/units/$(1).cpp.o
# A unit's object stands for its sources: a list of sources holds all of a unit's or none.
object_of = $(patsubst %,$(BUILD)/obj/%.o,$(filter-out $(UNIT_SRCS),$(1))) \
            $(foreach unit,$(UNITS),$(if $(filter $(UNIT_SRCS_$(unit)),$(1)),$(call unit_object,$(unit))))
LIB_OBJS := $(call object_of,$(LIB_SRCS))
MAIN_OBJ := $(call object_of,cli/main.cpp)
TEST_OBJS := $(call object_of,$(TEST_SRCS))
MPI_TEST_OBJS := $(call object_of,$(MPI_TEST_SRCS))
SIM_MPI_TEST_OBJS := $(call object_of,$(SIM_MPI_TEST_SRCS))
BENCH_OBJS := $(call object_of,$(BENCH_SRCS))
KERNEL_LAB_OBJS := $(call object_of,$(KERNEL_LAB_SRCS))
sim_object_of = $(patsubst %,$(BUILD)/sim/obj/%.o,$(1))
# The library's host objects are shared with the real build; its kernels are not.
SIM_LIB_OBJS := $(filter-out $(call object_of,$(SIM_CU_SRCS) kernels/cuda/cublaslt_library.cpp kernels/cuda/nccl_library.cpp),$(LIB_OBJS)) \
                $(call sim_object_of,$(SIM_CU_SRCS) $(SIM_SRCS))
SIM_KERNEL_LAB_OBJS := $(call object_of,$(filter %.cpp,$(SIM_KERNEL_LAB_SRCS))) \
                       $(call sim_object_of,$(filter %.cu,$(SIM_KERNEL_LAB_SRCS)))
SIM_OBJS := $(SIM_LIB_OBJS) $(call object_of,$(SIM_TEST_SRCS)) $(SIM_KERNEL_LAB_OBJS)
# Test sources compile at -O1 (a quarter less compile time for CI): the work they time is the
# library's, kept at -O3, except the float64 reference models', which stay at -O3 too.
LIGHT_TEST_OBJS := $(filter-out $(call object_of,tests/reference_f64%.cpp),$(TEST_OBJS) $(MPI_TEST_OBJS) \
  $(SIM_MPI_TEST_OBJS) $(call object_of,$(UNIT_SRCS_tests_sim)))
CONFIG_STAMP := $(BUILD)/config.stamp
# Expanded in recipes, where MAKEFLAGS names a jobserver if make was started with -j.
SUBMAKE = $(MAKE) --no-print-directory $(if $(findstring jobserver,$(MAKEFLAGS)),,-j$(JOBS))

# ---- fuzzing (fuzz/README.md): libFuzzer targets built with Debian's clang ----
# A target is fuzz/<name>.cpp defining LLVMFuzzerTestOneInput, seeded from fuzz/corpus/<name>/.
# Adding one is one line here: FUZZ_SOURCES_<name> := the library sources it links (only those:
# the library is not compiled with clang).
FUZZ_SOURCES_toml_config := cli/toml_config.cpp
FUZZ_SOURCES_corpus_readers := tokenizer/corpus.cpp tokenizer/document_readers.cpp tokenizer/input_stream.cpp \
                               tokenizer/byte_source.cpp tokenizer/decompressor.cpp tokenizer/input_sniff.cpp \
                               tokenizer/segment_builder.cpp tokenizer/unicode_classes.cpp tokenizer/utf8.cpp \
                               tokenizer/tokenizer_trainer.cpp tokenizer/text_check.cpp tokenizer/json_text_prefix.cpp \
                               core/error.cpp core/log.cpp
FUZZ_SOURCES_checkpoint_header := model/checkpoint_header.cpp core/error.cpp core/log.cpp
FUZZ_DATASET_CORE := core/atomic_file.cpp core/owned_temporary.cpp core/paths.cpp core/process_identity.cpp \
                     core/output_file.cpp core/sha256.cpp core/h5.cpp core/error.cpp core/log.cpp
FUZZ_SOURCES_dataset_header := tokenizer/dataset.cpp tokenizer/dataset_index.cpp tokenizer/token_store.cpp \
                               $(FUZZ_DATASET_CORE)
FUZZ_SOURCES_dataset_index := tokenizer/dataset_index.cpp tokenizer/dataset.cpp $(FUZZ_DATASET_CORE)
FUZZ_SOURCES_safetensors_header := interop/safetensors_header.cpp core/error.cpp
FUZZ_TARGETS := $(sort $(patsubst FUZZ_SOURCES_%,%,$(filter FUZZ_SOURCES_%,$(.VARIABLES))))
# The clang scripts/setup.sh installed: clang-14 (Debian 12) or clang-13 (Debian 11).
FUZZ_CXX ?= $(firstword $(foreach version,14 13,$(shell command -v clang++-$(version) 2>/dev/null)) clang++-14)
# Seconds each target runs in `make fuzz` (make test: TEST_FUZZ_SECONDS each).
FUZZ_SECONDS ?= 60
TEST_FUZZ_SECONDS ?= 4
# -fno-sanitize=unreachable: toml++ 3.3 (Debian's) reaches a TOML_UNREACHABLE on non-ASCII
# characters outside strings (fuzz/README.md, "Findings"); our sources use no unreachable marker.
# -gline-tables-only: a finding's report needs file and line only, and full debug information made
# the objects' compile (most of make test's fuzz stage) 10 to 20% slower.
FUZZ_CXXFLAGS := -std=c++17 -O1 -gline-tables-only -fsanitize=fuzzer,address,undefined -fno-sanitize=unreachable \
                 -fno-sanitize-recover=undefined -fno-omit-frame-pointer -I. $(EXTERNAL_INCLUDES)
FUZZ_LDLIBS := $(HDF5_LIBS) -lsentencepiece -lsentencepiece_train -lcrypto -lz -lzstd -llzma -lpthread

.PHONY: all sim ptx launch-resources test test-gpu demo bench bundle format clean help setup sass fixtures print-config fuzz \
        fuzz-build test-sanitize check-cuda12 bundle-cuda12
.DEFAULT_GOAL := all

all: $(BUILD)/mixgpt $(BUILD)/mixgpt_tests $(if $(MPI_TEST_SRCS),$(BUILD)/mixgpt_mpi_tests) $(if $(BENCH_SRCS),$(BUILD)/mixgpt_benchmarks) \
     $(if $(and $(KERNEL_LAB_SRCS),$(filter 1,$(WITH_CUDA))),$(BUILD)/mixgpt_kernel_lab)

# The test binaries of the CUDA simulator (CUDA builds only; `make test` builds them).
sim: $(if $(filter 1,$(WITH_CUDA)),$(BUILD)/mixgpt_sim $(BUILD)/mixgpt_sim_tests $(BUILD)/mixgpt_sim_mpi_tests $(BUILD)/mixgpt_kernel_lab_sim)

# The kernels' PTX and the check of the instructions they claim (CUDA builds only; `make test` runs it).
ptx: $(if $(filter 1,$(WITH_CUDA)),$(PTX_FILES))
	$(if $(filter 1,$(WITH_CUDA)),@scripts/check_kernel_instructions.sh $(BUILD)/ptx,@echo "ptx: no CUDA toolkit found")

# Each kernel's registers, spills and shared memory (ptxas' report) against the launches it declares,
# for every architecture of GPU_ARCHS (CUDA builds only; `make test` runs it). LAUNCH_TABLE=1 also
# rewrites the table in kernels/README.md.
launch-resources: $(if $(filter 1,$(WITH_CUDA)),$(KERNEL_RESOURCE_REPORTS) $(PTX_FILES))
	$(if $(filter 1,$(WITH_CUDA)),@scripts/check_launch_resources.py $(BUILD) $(if $(filter 1,$(LAUNCH_TABLE)),--readme \
	  kernels/README.md --toolkit "nvcc $$($(lastword $(NVCC)) --version | sed -n 's/^Cuda compilation tools, //p')"),\
	  @echo "launch-resources: no CUDA toolkit found")

help:
	@echo "make [all]      build build/mixgpt and build/mixgpt_tests (GPU_ARCHS='$(GPU_ARCHS)', CUDA: $(WITH_CUDA))"
	@echo "make test       install what is missing, build, run the whole test suite"
	@echo "make sim        build the GPU tests and the kernel lab on the CUDA simulator (tests/cuda_sim; make test runs them)"
	@echo "make ptx        the kernels' PTX, and a check of their tensor-core and 16-byte instructions (make test runs it)"
	@echo "make launch-resources  each kernel's registers and shared memory (ptxas) against its launches (make test runs it)"
	@echo "make test-gpu   run the GPU tests only; fails when no GPU is present"
	@echo "make demo       prepare the KJV corpus, train a small model, evaluate, sample"
	@echo "make bench      benchmarks (not tests): loader, training throughput"
	@echo "make bundle     self-contained folder build/bundle to run on a GPU host (bundle-cuda12: the CUDA 12.4 build's)"
	@echo "make fixtures   regenerate the PyTorch reference fixtures and compare (needs python3-torch)"
	@echo "make sass       dump SASS of the CUDA kernels and count tensor-core instructions"
	@echo "make fuzz       build the libFuzzer targets (fuzz/) and run each FUZZ_SECONDS=$(FUZZ_SECONDS) s on its corpus"
	@echo "make check-cuda12  build everything CUDA with CUDA 12.4 (Debian 13's, unpacked into $(CUDA12_PREFIX)); run the simulated GPU tests"
	@echo "make test-sanitize  the whole suite built with ASan+UBSan in build/asan (slow: not part of make test)"
	@echo "make format     clang-format every source file"
	@echo "make clean      remove build/"

# The stamp changes when the CUDA choice or architectures change, so every object is rebuilt.
$(CONFIG_STAMP): FORCE
	@mkdir -p $(BUILD)
	@echo "WITH_CUDA=$(WITH_CUDA) GPU_ARCHS=$(GPU_ARCHS) DEBUG=$(DEBUG) SANITIZE=$(SANITIZE) SIM_KERNEL_FLAGS=$(SIM_KERNEL_FLAGS)" > $@.new
	@if cmp -s $@.new $@; then rm $@.new; else mv $@.new $@; fi
FORCE:

# mixgpt's version and how this binary was built, for core/build_info.cpp (`mixgpt info`, the
# exports' metadata): the commit (git describe; "unknown" outside git), GPU architectures and
# build options. The header is rewritten only when it changes, so only that object is rebuilt.
VERSION := 0.1.0
BUILD_STAMP := $(BUILD)/generated/build_stamp.h
$(BUILD_STAMP): FORCE
	@mkdir -p $(dir $@)
	@{ echo '#define MIXGPT_VERSION "$(VERSION)"'; \
	   echo "#define MIXGPT_COMMIT \"$$(git describe --always --dirty 2>/dev/null || echo unknown)\""; \
	   echo '#define MIXGPT_GPU_ARCHS "$(GPU_ARCHS)"'; \
	   echo '#define MIXGPT_BUILD_OPTIONS "$(if $(filter 1,$(DEBUG)),debug (-O0),release (-O3))$(if $(SANITIZE),$(comma) sanitizers $(SANITIZE),)$(comma) $(CXX) $(shell $(CXX) -dumpfullversion)"'; } > $@.new
	@if cmp -s $@.new $@; then rm $@.new; else mv $@.new $@; fi
$(call object_of,core/build_info.cpp): $(BUILD_STAMP)
$(call object_of,core/build_info.cpp): CXXFLAGS += -I$(BUILD)/generated
comma := ,

$(BUILD)/obj/%.cpp.o: %.cpp $(CONFIG_STAMP)
	@mkdir -p $(dir $@)
	@echo "CXX  $<"
	$(QUIET)$(CXX) $(CXXFLAGS) -c $< -o $@

# A unit's source is rewritten only when its list of sources changes; -MMD tracks what it includes.
UNIT_FILES := $(patsubst %,$(BUILD)/generated/units/%.cpp,$(UNITS))
$(UNIT_FILES): $(BUILD)/generated/units/%.cpp: FORCE
	@mkdir -p $(dir $@)
	@printf '#include "%s"\n' $(sort $(UNIT_SRCS_$*)) > $@.new
	@if cmp -s $@.new $@; then rm $@.new; else mv $@.new $@; fi

$(foreach unit,$(UNITS),$(call unit_object,$(unit))): $(BUILD)/obj/units/%.cpp.o: $(BUILD)/generated/units/%.cpp $(CONFIG_STAMP)
	@mkdir -p $(dir $@)
	@echo "CXX  $< ($(words $(UNIT_SRCS_$*)) sources)"
	$(QUIET)$(CXX) $(CXXFLAGS) -c $< -o $@

# Each .cu object comes with ptxas' report of its kernels (--resource-usage: registers, spills,
# static shared memory, per architecture of GPU_ARCHS) in the .resources file beside it, read by
# scripts/check_launch_resources.py; ccache replays the report on a hit. Only the report's lines
# are kept off the terminal. Both files come from one run (a pattern rule's targets are grouped).
$(BUILD)/obj/%.cu.o $(BUILD)/obj/%.cu.resources: %.cu $(CONFIG_STAMP)
	@mkdir -p $(dir $@)
	@echo "NVCC $<"
	$(QUIET)$(NVCC) $(NVCCFLAGS) --resource-usage -c $< -o $(BUILD)/obj/$*.cu.o 2> $(BUILD)/obj/$*.cu.resources; \
	  status=$$?; grep -v -e '^ptxas info' -e '^ *[0-9]* bytes stack frame' $(BUILD)/obj/$*.cu.resources >&2; exit $$status

# CUDA 12's CUB (2.3) spills 32 bytes of registers in its sm_90 radix-sort downsweep kernel, which
# we cannot change: kernels/cuda/token_sort.cu holds only that sort and is built without the spill
# warning under CUDA 12; every kernel of ours keeps it, and CUDA 13's CUB does not spill there.
$(call object_of,kernels/cuda/token_sort.cu) $(BUILD)/obj/kernels/cuda/token_sort.cu.resources: \
  NVCCFLAGS := $(if $(filter 12,$(NVCC_MAJOR)),$(filter-out -Xptxas=--warn-on-spills,$(NVCCFLAGS)),$(NVCCFLAGS))

$(BUILD)/ptx/%.ptx: %.cu $(CONFIG_STAMP)
	@mkdir -p $(dir $@)
	@echo "PTX  $<"
	$(QUIET)$(NVCC) $(PTX_NVCCFLAGS) -ptx $< -o $@

# The simulator build: kernels/cuda/*.cu as C++ with the simulator's prelude and its stand-ins for
# CUDA library headers (tests/cuda_sim/include/), its own sources as C++.
# nvcc contracts a * b + c into one FMA; on a host with FMA instructions the kernels' g++ build
# does too, so the simulated arithmetic rounds as the GPU's does there.
SIM_CXXFLAGS := $(CXXFLAGS) -DMIXGPT_CUDA_SIM -Wno-unknown-pragmas
SIM_KERNEL_FLAGS := $(if $(shell grep -qw fma /proc/cpuinfo 2>/dev/null && echo fma),-mfma -ffp-contract=fast,)
$(BUILD)/sim/obj/%.cu.o: %.cu $(CONFIG_STAMP)
	@mkdir -p $(dir $@)
	@echo "SIM  $<"
	$(QUIET)$(CXX) $(SIM_CXXFLAGS) $(SIM_KERNEL_FLAGS) -Itests/cuda_sim/include -include tests/cuda_sim/prelude.h -x c++ -c $< -o $@

$(BUILD)/sim/obj/%.cpp.o: %.cpp $(CONFIG_STAMP)
	@mkdir -p $(dir $@)
	@echo "SIM  $<"
	$(QUIET)$(CXX) $(SIM_CXXFLAGS) -c $< -o $@

$(LIGHT_TEST_OBJS): CXXFLAGS := $(subst -O3,-O1,$(CXXFLAGS))

$(BUILD)/libmixgpt.a: $(LIB_OBJS)
	@rm -f $@
	@echo "AR   $@"
	$(QUIET)ar rcs $@ $^

$(BUILD)/mixgpt: $(MAIN_OBJ) $(BUILD)/libmixgpt.a
	@echo "LINK $@"
	$(QUIET)$(CXX) -o $@ $^ $(LDLIBS)
	@$(if $(filter 1,$(WITH_CUDA)),echo "built $@ with the CUDA backend (GPU_ARCHS=$(GPU_ARCHS))",echo "built $@ (CPU only: no CUDA toolkit found)")

$(BUILD)/mixgpt_tests: $(TEST_OBJS) $(BUILD)/libmixgpt.a
	@echo "LINK $@"
	$(QUIET)$(CXX) -o $@ $^ -lgtest -lgtest_main $(LDLIBS)

# The GPU tests on the CUDA simulator (no CUDA library linked).
$(BUILD)/mixgpt_sim_tests: $(SIM_OBJS)
	@echo "LINK $@"
	$(QUIET)$(CXX) -o $@ $^ -lgtest -lgtest_main $(SIM_LDLIBS)

# mixgpt itself on the simulator, for scripts/gpu_lease.sh's simulator swap.
$(BUILD)/mixgpt_sim: $(MAIN_OBJ) $(SIM_LIB_OBJS)
	@echo "LINK $@"
	$(QUIET)$(CXX) -o $@ $^ $(SIM_LDLIBS)

# The kernel lab on the simulator: `--sizes smoke` runs every path of it without a GPU.
$(BUILD)/mixgpt_kernel_lab_sim: $(call object_of,bench/kernel_lab/main.cpp) $(SIM_KERNEL_LAB_OBJS) $(SIM_LIB_OBJS)
	@echo "LINK $@"
	$(QUIET)$(CXX) -o $@ $^ $(SIM_LDLIBS)

# The multi-rank tests with the CUDA backend on the simulator, one simulated device per rank.
$(BUILD)/mixgpt_sim_mpi_tests: $(MPI_TEST_OBJS) $(SIM_MPI_TEST_OBJS) $(SIM_LIB_OBJS)
	@echo "LINK $@"
	$(QUIET)$(CXX) -o $@ $^ -lgtest $(SIM_LDLIBS)

# Tests run under `mpirun -np 2`; tests/mpi/ provides its own main (MPI_Init before GoogleTest).
$(BUILD)/mixgpt_mpi_tests: $(MPI_TEST_OBJS) $(BUILD)/libmixgpt.a
	@echo "LINK $@"
	$(QUIET)$(CXX) -o $@ $^ -lgtest $(LDLIBS)

# Google Benchmark micro-benchmarks (bench/*.cpp): performance, not tests.
$(BUILD)/mixgpt_benchmarks: $(BENCH_OBJS) $(BUILD)/libmixgpt.a
	@echo "LINK $@"
	$(QUIET)$(CXX) -o $@ $^ -lbenchmark -lbenchmark_main $(LDLIBS)

# The kernel lab (bench/kernel_lab/, CUDA builds only): validates, then times, every hot kernel.
$(BUILD)/mixgpt_kernel_lab: $(KERNEL_LAB_OBJS) $(BUILD)/libmixgpt.a
	@echo "LINK $@"
	$(QUIET)$(CXX) -o $@ $^ $(LDLIBS)

setup:
	@scripts/setup.sh

# The whole suite: unit tests, then the multi-rank tests under mpirun.
# Each phase prints its wall time (the suite must stay under 15 minutes on 2 cores).
test: setup
	@start=$$(date +%s); $(SUBMAKE) all sim $(if $(filter 1,$(WITH_CUDA)),$(PTX_FILES) $(KERNEL_RESOURCE_REPORTS)) && \
	  echo "make test: build $$(( $$(date +%s) - start )) s"
	@/usr/bin/python3 scripts/check_structure.py
	@scripts/run_tests.sh $(BUILD)
	@start=$$(date +%s); $(SUBMAKE) fuzz FUZZ_SECONDS=$(TEST_FUZZ_SECONDS) && \
	  echo "make test: fuzz targets built and run $$(( $$(date +%s) - start )) s"

# The suite under AddressSanitizer and UndefinedBehaviorSanitizer: a full rebuild in build/asan
# (tens of minutes on 2 cores), so a weekly or on-demand job rather than every CI run.
test-sanitize:
	ASAN_OPTIONS=detect_leaks=0 $(MAKE) --no-print-directory SANITIZE=address,undefined BUILD=build/asan test

# Everything CUDA (library, tests, kernel lab, PTX and its instruction check, the simulator's
# tests) built with CUDA 12.4, Debian 13's nvidia-cuda-toolkit unpacked into CUDA12_PREFIX by
# scripts/fetch_cuda12.sh, in its own BUILD folder; then the simulated GPU tests, which compile
# the kernels against 12.4's headers, run. Heavy (a second full build): not part of make test.
# A ccache in front of NVCC is kept. NCCL is not linked (loaded on first use), so Debian 13's
# libnccl.so, which needs glibc 2.38, is only its headers' source here.
CUDA12_PREFIX ?= build/cuda12
CUDA12_BUILD ?= build/cuda12-build
CUDA12_MAKE = $(SUBMAKE) CUDA_HOME=$(abspath $(CUDA12_PREFIX)) BUILD=$(CUDA12_BUILD) \
  NVCC="$(filter ccache,$(firstword $(NVCC))) $(abspath $(CUDA12_PREFIX))/usr/lib/nvidia-cuda-toolkit/bin/nvcc"
check-cuda12:
	@scripts/fetch_cuda12.sh $(CUDA12_PREFIX)
	@start=$$(date +%s); $(CUDA12_MAKE) all sim ptx && \
	  echo "check-cuda12: built with $$($(CUDA12_PREFIX)/usr/lib/nvidia-cuda-toolkit/bin/nvcc --version | tail -n 1) in $$(( $$(date +%s) - start )) s"
	@start=$$(date +%s); MIXGPT_REQUIRE_GPU=1 MIXGPT_TEST_SEED=1 $(CUDA12_BUILD)/mixgpt_sim_tests --gtest_brief=1 \
	  --gtest_color=no --gtest_filter='Gpu*:Sim*' && \
	  echo "check-cuda12: simulated GPU tests (CUDA 12.4 headers) passed in $$(( $$(date +%s) - start )) s"

fuzz-build: $(addprefix $(BUILD)/fuzz/,$(FUZZ_TARGETS))

# Each target runs on a scratch copy of its corpus (new inputs go there, not into fuzz/corpus/);
# a crash leaves its input in $(BUILD)/fuzz/ and fails the make. The targets run side by side
# under make's -j (one line each when done).
fuzz: $(addprefix fuzz-run-,$(FUZZ_TARGETS))

fuzz-run-%: $(BUILD)/fuzz/%
	@mkdir -p $(BUILD)/fuzz/corpus/$*
	@dictionary=$$([[ -f fuzz/$*.dict ]] && echo -dict=fuzz/$*.dict); \
	  $(BUILD)/fuzz/$* $$dictionary -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 -artifact_prefix=$(BUILD)/fuzz/$*- \
	    $(BUILD)/fuzz/corpus/$* fuzz/corpus/$* > $(BUILD)/fuzz/$*.log 2>&1 || \
	    { tail -n 40 $(BUILD)/fuzz/$*.log; echo "fuzz $*: FAILED (log: $(BUILD)/fuzz/$*.log)"; exit 1; }; \
	  echo "fuzz $*: $(FUZZ_SECONDS) s: $$(grep -E "^#[0-9]+.*DONE|^stat::peak_rss_mb" $(BUILD)/fuzz/$*.log | tr '\n' ' ')"

test-gpu: all
	MIXGPT_REQUIRE_GPU=1 $(BUILD)/mixgpt_tests --gtest_filter='Gpu*'

# The demo needs only the binary: the test, benchmark and kernel-lab builds are left to make test.
demo: setup
	@$(SUBMAKE) $(BUILD)/mixgpt
	@scripts/demo.sh $(BUILD)

bench: all
	@scripts/bench.sh $(BUILD)

bundle: all
	@scripts/bundle.sh $(BUILD) $(if $(filter 1,$(WITH_CUDA)),$(lastword $(NVCC)))

# The bundle of the CUDA 12.4 build (check-cuda12's), for drivers older than CUDA 13's R580:
# $(CUDA12_BUILD)/bundle.tar.xz.
bundle-cuda12:
	@scripts/fetch_cuda12.sh $(CUDA12_PREFIX)
	@$(CUDA12_MAKE) bundle

fixtures: all
	@scripts/make_fixtures.sh $(BUILD)

sass: all
	@scripts/dump_sass.sh $(BUILD)

format:
	clang-format -i $(wildcard */*.cpp */*.h */*.cu */*.cuh */*/*.cpp */*/*.h */*/*.cu */*/*.cuh)

clean:
	rm -rf $(BUILD)

print-config:
	@echo "CUDA_HOME=$(CUDA_HOME) WITH_CUDA=$(WITH_CUDA) GPU_ARCHS=$(GPU_ARCHS)"

# A fuzz target: its file and its library sources, each compiled once with clang into
# $(BUILD)/fuzz/obj/ (a source several targets link is compiled once), then linked.
fuzz_object_of = $(patsubst %.cpp,$(BUILD)/fuzz/obj/%.o,$(1))
FUZZ_OBJS := $(sort $(foreach target,$(FUZZ_TARGETS),$(call fuzz_object_of,fuzz/$(target).cpp $(FUZZ_SOURCES_$(target)))))
.SECONDARY: $(FUZZ_OBJS)
$(BUILD)/fuzz/obj/%.o: %.cpp Makefile
	@mkdir -p $(dir $@)
	@echo "FUZZ-CXX $<"
	$(QUIET)$(FUZZ_CXX) $(FUZZ_CXXFLAGS) -MMD -MP -c $< -o $@
.SECONDEXPANSION:
$(BUILD)/fuzz/%: $$(call fuzz_object_of,fuzz/$$*.cpp $$(FUZZ_SOURCES_$$*))
	@echo "FUZZ $@"
	$(QUIET)$(FUZZ_CXX) $(FUZZ_CXXFLAGS) $^ -o $@ $(FUZZ_LDLIBS)

-include $(FUZZ_OBJS:.o=.d) $(PTX_FILES:.ptx=.d) $(LIB_OBJS:.o=.d) $(MAIN_OBJ:.o=.d) $(SIM_OBJS:.o=.d) $(TEST_OBJS:.o=.d) $(MPI_TEST_OBJS:.o=.d) $(SIM_MPI_TEST_OBJS:.o=.d) $(BENCH_OBJS:.o=.d) $(KERNEL_LAB_OBJS:.o=.d)
