#!/usr/bin/env bash
# Downloads Debian packages of another release and unpacks them into a prefix, installing nothing:
# a private apt state under PREFIX/apt reads SUITE's package lists from Debian's archive,
# `apt-get download` fetches the named packages (not their dependencies: name every one you
# need), and `dpkg-deb -x` unpacks each under PREFIX (PREFIX/usr/include/..., PREFIX/usr/lib/...).
# Needs apt-get and Debian's archive keys (debian-archive-keyring); no root.
#
# usage: scripts/unpack_debian_packages.sh SUITE "COMPONENTS" PREFIX PACKAGE[=VERSION]...
#   e.g. scripts/unpack_debian_packages.sh bookworm main .deps/debian12 libcli11-dev
set -euo pipefail
if (($# < 4)); then
  sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
suite="$1"
components="$2"
prefix="$(realpath -m "$3")"
shift 3

keyring=/usr/share/keyrings/debian-archive-keyring.gpg
if [[ ! -f "$keyring" ]]; then
  echo "unpack_debian_packages: $keyring missing: install debian-archive-keyring" >&2
  exit 1
fi
apt_dir="$prefix/apt"
mkdir -p "$apt_dir/state/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/debs"
touch "$apt_dir/state/status"
echo "deb [signed-by=$keyring] http://deb.debian.org/debian $suite $components" > "$apt_dir/sources.list"
apt_options=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o Dir::Etc::SourceParts=/nonexistent
             -o "Dir::State=$apt_dir/state" -o "Dir::State::status=$apt_dir/state/status"
             -o "Dir::Cache=$apt_dir/cache" -o APT::Architecture=amd64 -o APT::Architectures::=amd64
             -o Debug::NoLocking=1 -o APT::Sandbox::User="$(id -un)")

apt-get "${apt_options[@]}" update -qq
rm -f "$apt_dir"/debs/*.deb
(cd "$apt_dir/debs" && apt-get "${apt_options[@]}" download -qq "$@")
for deb in "$apt_dir"/debs/*.deb; do
  dpkg-deb -x "$deb" "$prefix"
  echo "$(basename "$deb")"
done
