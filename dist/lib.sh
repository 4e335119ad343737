# shellcheck shell=bash
# Helpers shared by dist/build.sh and dist/test.sh (sourced, not run).

die() {
  echo "dist: $*" >&2
  exit 1
}

# The version in Cargo.toml's [package].
crate_version() {
  sed -n 's/^version = "\([^"]*\)"$/\1/p' Cargo.toml | head -n 1
}

# reproducible_tgz DIR NAME OUT: DIR/NAME as a .tar.gz whose bytes depend only on the files
# (sorted names, owner root, every time SOURCE_DATE_EPOCH, no time in the gzip header).
reproducible_tgz() {
  tar -C "$1" --sort=name --owner=0 --group=0 --numeric-owner \
    --mtime="@${SOURCE_DATE_EPOCH:-0}" -cf - "$2" | gzip -9n >"$3"
}

# Debian's architecture name for a Rust target.
deb_arch() {
  case "$1" in
    x86_64-*) echo amd64 ;;
    aarch64-*) echo arm64 ;;
    *) die "no Debian architecture for $1" ;;
  esac
}

# npm's platform package name for a Rust target: os-cpu as Node.js names them
# (process.platform, process.arch).
npm_platform() {
  case "$1" in
    x86_64-unknown-linux-*) echo linux-x64 ;;
    aarch64-unknown-linux-*) echo linux-arm64 ;;
    *) die "no npm platform for $1" ;;
  esac
}

# write_platform_package_json PLATFORM VERSION: the package.json of @filewatchd/PLATFORM.
write_platform_package_json() {
  local os=${1%-*} cpu=${1#*-}
  cat <<JSON
{
  "name": "@filewatchd/$1",
  "version": "$2",
  "description": "The filewatchd binary for $os $cpu (installed by the filewatchd package)",
  "license": "MIT OR Apache-2.0",
  "os": ["$os"],
  "cpu": ["$cpu"],
  "files": ["bin/filewatchd"],
  "preferUnplugged": true
}
JSON
}
