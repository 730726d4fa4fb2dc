#!/usr/bin/env bash
# mixgpt on Debian 11 "bullseye" (glibc 2.31, GCC 10, HDF5 1.10: the stand-in for the hosts of
# Ubuntu 22.04's era), from source, as a new user there would build it: builds a Debian 11 root
# with debootstrap from Debian's archive, copies this working tree into it (tracked and untracked
# files, not build/), and inside it runs scripts/setup.sh, make test, make demo, then the bundle
# test: make bundle, and from the unpacked bundle.tar.xz `mixgpt info`, `prepare` of a small
# corpus and a few CPU training steps. The bundle this host built (build/bundle.tar.xz), when
# there is one, is tried there too: it must refuse in one line if it needs a newer glibc.
# Writes a Markdown report of it all.
#
# This host's CUDA toolkit (/usr/local/cuda), if any, is mounted read-only at the same place,
# so make test there builds the CUDA backend and runs the simulated GPU tests as here.
#
# usage: scripts/check_portability.sh [--report FILE] [--root DIR] [--fresh]
#   --report  default bench/results/<date>-debian11-portability.md
#   --root    the Debian 11 root, default .chroot/bullseye (kept, with its packages and build/, for the next run)
#   --fresh   a new root: debootstrap again, packages installed by setup.sh, a build from clean
# Needs root (debootstrap, chroot, mounts) and debootstrap (apt-get install debootstrap).
set -euo pipefail
cd "$(dirname "$0")/.."
report="bench/results/$(date -u +%F)-debian11-portability.md"
root=.chroot/bullseye
fresh=0
while (($# > 0)); do
  case "$1" in
    --report) report="$2"; shift 2 ;;
    --root) root="$2"; shift 2 ;;
    --fresh) fresh=1; shift ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "check_portability: unknown argument $1 (--help)" >&2; exit 2 ;;
  esac
done
if [[ $(id -u) -ne 0 ]]; then echo "check_portability: needs root (debootstrap, chroot, mount)" >&2; exit 1; fi
if ! command -v debootstrap > /dev/null; then
  echo "check_portability: needs debootstrap (apt-get install debootstrap)" >&2; exit 1
fi
root="$(realpath -m "$root")"
mirror=http://deb.debian.org/debian
logs="$root/logs"

if ((fresh)) && [[ -d "$root" ]]; then
  if grep -q " $root/" /proc/mounts; then echo "check_portability: $root has mounts left; unmount them first" >&2; exit 1; fi
  rm -rf "$root"
fi
if [[ ! -f "$root/.bootstrapped" ]]; then
  echo "check_portability: debootstrap bullseye into $root"
  rm -rf "$root"
  mkdir -p "$(dirname "$root")"
  debootstrap --variant=minbase bullseye "$root" "$mirror" > "$root.debootstrap.log" 2>&1 ||
    { tail -n 20 "$root.debootstrap.log"; exit 1; }
  # As an installed Debian 11 has them: the point releases' updates and the security archive.
  cat > "$root/etc/apt/sources.list" <<EOF
deb $mirror bullseye main
deb $mirror bullseye-updates main
deb http://deb.debian.org/debian-security bullseye-security main
EOF
  touch "$root/.bootstrapped"
fi

# Mounts, undone on exit in reverse order.
mounted=()
unmount_all() {
  local index
  for ((index = ${#mounted[@]} - 1; index >= 0; --index)); do umount "${mounted[index]}" || umount -l "${mounted[index]}"; done
}
trap unmount_all EXIT
mount_into() {  # mount_into TARGET mount-arguments...
  local target="$1"; shift
  mkdir -p "$target"
  mount "$@" "$target"
  mounted+=("$target")
}
mount_into "$root/proc" -t proc proc
mount_into "$root/sys" -t sysfs sysfs
mount_into "$root/dev" --bind /dev
mount_into "$root/dev/pts" -t devpts devpts
mount_into "$root/dev/shm" -t tmpfs -o size=4g tmpfs   # OpenMPI's shared-memory transport
cp /etc/resolv.conf "$root/etc/resolv.conf"

cuda_note="no CUDA toolkit on this host: make test there builds and tests the CPU code only"
if [[ -x /usr/local/cuda/bin/nvcc ]]; then
  cuda_dir="$(readlink -f /usr/local/cuda)"
  mount_into "$root$cuda_dir" --bind "$cuda_dir"
  mount -o remount,bind,ro "$root$cuda_dir"
  [[ "$cuda_dir" == /usr/local/cuda ]] || ln -sfn "$cuda_dir" "$root/usr/local/cuda"
  # The toolkit's libraries (NCCL) on the loader's path, as its installer leaves them on this host.
  grep -ls "^$cuda_dir" /etc/ld.so.conf.d/* | xargs -r cp -t "$root/etc/ld.so.conf.d/"
  cuda_note="this host's $("$cuda_dir/bin/nvcc" --version | tail -n 1 | sed 's/^Build //') mounted read-only at $cuda_dir"
fi

src="$root/src/mixgpt"
mkdir -p "$src" "$logs"
# A mirror of the working tree (tracked files that still exist, untracked ones git does not ignore),
# updated by content so the kept root's build/ rebuilds exactly what changed: a changed file gets
# a new time stamp, an unchanged one keeps its old one, and a file deleted or moved since the
# last run is removed (it would otherwise be compiled beside its successor). build/ and .deps/
# (setup's unpacked packages) are kept.
staging="$root/src/incoming"
rm -rf "$staging" && mkdir -p "$staging"
git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' file; do
  [[ -e "$file" ]] && printf '%s\0' "$file"
done | tar --null -T - -cf - | tar -xf - -C "$staging"
(cd "$staging" && find . -type f -print0) | while IFS= read -r -d '' file; do
  if ! cmp -s "$staging/$file" "$src/$file"; then
    mkdir -p "$(dirname "$src/$file")" && cp --preserve=mode "$staging/$file" "$src/$file"
  fi
done
(cd "$src" && find . \( -path ./build -o -path ./.deps \) -prune -o -type f -print0) | while IFS= read -r -d '' file; do
  [[ -e "$staging/$file" ]] || rm -f "$src/$file"
done
rm -rf "$staging"
commit="$(git describe --always --dirty 2>/dev/null || echo unknown)"
host_bundle=""
if [[ -f build/bundle.tar.xz ]]; then
  host_bundle="$(cat build/bundle/VERSION 2>/dev/null | head -n 1)"
  cp build/bundle.tar.xz "$root/root/host-bundle.tar.xz"
fi

# Runs a command in the root as a fresh login would, logging to $logs/NAME.log; prints its seconds.
in_root() {  # in_root NAME command
  local name="$1" start=$SECONDS status=0; shift
  chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 TERM=dumb bash -c "$*" > "$logs/$name.log" 2>&1 || status=$?
  echo "$((SECONDS - start))"
  return "$status"
}
stage() {  # stage NAME command: runs it, records status and time
  local name="$1" seconds status=0; shift
  echo "check_portability: $name"
  seconds=$(in_root "$name" "$@") || status=$?
  stage_seconds[$name]=$seconds
  stage_status[$name]=$status
  echo "check_portability: $name exit $status, ${seconds} s (log: $logs/$name.log)"
}
declare -A stage_seconds stage_status

stage setup "cd /src/mixgpt && scripts/setup.sh && ldconfig"
stage test "cd /src/mixgpt && make test"
stage demo "cd /src/mixgpt && make demo"
stage bundle "cd /src/mixgpt && make bundle"
# The bundle as a GPU host without our packages would use it: unpacked elsewhere, env.sh sourced.
# The corpus: four licences every Debian has (base-files), one document per paragraph.
stage bundle-run "set -e; rm -rf /tmp/bundle-test && mkdir -p /tmp/bundle-test && cd /tmp/bundle-test &&
  tar -xJf /src/mixgpt/build/bundle.tar.xz && source bundle/env.sh && cat bundle/VERSION &&
  bundle/bin/mixgpt info && mkdir corpus &&
  for license in GPL-3 LGPL-2.1 Apache-2.0 MPL-2.0; do cp /usr/share/common-licenses/\$license corpus/\$license.txt; done &&
  bundle/bin/mixgpt prepare --output data --vocab-size 512 --doc-sep blank-line --val-fraction 0.1 corpus &&
  bundle/bin/mixgpt train --device cpu --dataset data --model d2 -b 4 -t 64 --steps 5 -o run &&
  echo \"training loss, steps 1 and 5: \$(grep -o '\"loss\":[0-9.]*' run/metrics.jsonl | sed -n '1p;\$p' | cut -d: -f2 | tr '\n' ' ')\""
if [[ -n "$host_bundle" ]]; then
  # Expected to fail (exit 1) with one line naming the glibc it needs, before any binary starts.
  stage host-bundle "set -e; rm -rf /tmp/host-bundle && mkdir -p /tmp/host-bundle && cd /tmp/host-bundle &&
    tar -xJf /root/host-bundle.tar.xz && source bundle/env.sh && bundle/bin/mixgpt info"
fi

# ---- the report ----
in_root versions "set +e; . /etc/os-release; echo \"- distribution: \$PRETTY_NAME (debian_version \$(cat /etc/debian_version))\"
  echo \"- glibc: \$(getconf GNU_LIBC_VERSION)\"; echo \"- compiler: \$(g++ --version | head -n 1)\"
  for package in libhdf5-dev libopenmpi-dev libsentencepiece-dev libopenblas-openmp-dev libgtest-dev libbenchmark-dev \
                 nlohmann-json3-dev libssl-dev zlib1g-dev clang-13 clang-14 libcli11-dev libtomlplusplus-dev python3-h5py python3-numpy; do
    version=\$(dpkg-query -W -f='\${Version}' \$package 2>/dev/null) && echo \"- \$package \$version\"
  done
  for marker in /src/mixgpt/.deps/debian12/.lib*; do [[ -f \$marker ]] && echo \"- \${marker##*/.}: Debian 12's, unpacked into .deps/debian12\"; done" > /dev/null || true
versions="$(cat "$logs/versions.log")"
summary_of() { grep -E '^make test:|^ *[0-9]+ s  |passed, [0-9]+ failed|tests failed' "$logs/$1.log" || true; }
result() { [[ "${stage_status[$1]:-skipped}" == 0 ]] && echo "passed" || echo "FAILED (exit ${stage_status[$1]:-not run})"; }
mkdir -p "$(dirname "$report")"
{
  echo "# mixgpt on Debian 11 (bullseye), from source: scripts/check_portability.sh"
  echo
  echo "Run $(date -u '+%Y-%m-%d %H:%M UTC') on $(nproc) cores of a machine shared with other work (times are"
  echo "wall seconds there, not a benchmark), from commit $commit, in a debootstrap root of Debian's archive."
  echo "CUDA: $cuda_note."
  echo
  echo "$versions"
  echo
  echo "| stage | result | seconds |"
  echo "| --- | --- | --- |"
  for name in setup test demo bundle bundle-run; do
    echo "| $name | $(result "$name") | ${stage_seconds[$name]:-} |"
  done
  if [[ -n "$host_bundle" ]]; then
    [[ "${stage_status[host-bundle]}" == 0 ]] && refusal="FAILED: it started instead of refusing" ||
      refusal="refused, as it must (exit ${stage_status[host-bundle]})"
    echo "| host-bundle | $refusal | ${stage_seconds[host-bundle]} |"
  fi
  echo
  echo "## scripts/setup.sh"
  echo '```'
  grep '^setup:' "$logs/setup.log" || true
  echo '```'
  echo
  echo "## make test ($( ((fresh)) && echo "a new root and a clean build" || echo "the root's packages and build/ reused from an earlier run"))"
  echo '```'
  summary_of test
  echo "compiler warnings: $(grep -c 'warning:' "$logs/test.log" || true)"
  echo '```'
  echo
  echo "## make demo"
  echo '```'
  sed -n '/=== demo results ===/,$p' "$logs/demo.log"
  echo '```'
  echo
  echo "## the bundle built here, run from its unpacked tar.xz (info, prepare, 5 CPU training steps)"
  echo '```'
  head -n 30 "$logs/bundle-run.log"
  echo "..."
  tail -n 4 "$logs/bundle-run.log"
  echo '```'
  if [[ -n "$host_bundle" ]]; then
    echo
    echo "## the bundle built on the host ($host_bundle): must refuse in one line"
    echo '```'
    cat "$logs/host-bundle.log"
    echo '```'
  fi
} > "$report"
echo "check_portability: report $report"
failed=0
for name in setup test demo bundle bundle-run; do [[ "${stage_status[$name]}" == 0 ]] || failed=1; done
if [[ -n "$host_bundle" && "${stage_status[host-bundle]}" == 0 ]]; then
  echo "check_portability: the host's bundle started on Debian 11 instead of refusing" >&2; failed=1
fi
exit "$failed"
