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
    x86_64-pc-windows-*) echo win32-x64 ;;
    *) die "no npm platform for $1" ;;
  esac
}

# The binary's file name for a Rust target (with its .exe on Windows).
exe_name() {
  case "$1" in
    *-windows-*) echo filewatchd.exe ;;
    *) echo filewatchd ;;
  esac
}

# reproducible_zip DIR NAME OUT: DIR/NAME as a .zip with the same promise as reproducible_tgz
# (Python's zipfile: a Windows user opens a zip without installing anything).
reproducible_zip() {
  python3 - "$1" "$2" "$3" <<'PY'
import os, sys, time, zipfile
root, name, out = sys.argv[1:]
stamp = time.gmtime(max(int(os.environ.get("SOURCE_DATE_EPOCH", "0")), 315532800))[:6]
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
    for dirpath, dirs, files in os.walk(os.path.join(root, name)):
        dirs.sort()
        for f in sorted(files):
            path = os.path.join(dirpath, f)
            info = zipfile.ZipInfo(os.path.relpath(path, root), stamp)
            info.external_attr = (0o755 if os.access(path, os.X_OK) else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            with open(path, "rb") as src:
                z.writestr(info, src.read())
PY
}

# write_platform_package_json PLATFORM VERSION EXE: the package.json of @filewatchd/PLATFORM,
# holding bin/EXE.
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
  "files": ["bin/$3"],
  "preferUnplugged": true
}
JSON
}
