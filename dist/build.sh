#!/usr/bin/env bash
# Builds every release artifact into dist/out/ (issue 52), from the lockfile and offline:
#
#   filewatchd-VERSION-TARGET.tar.gz   the static binary, its man pages and completions
#   filewatchd-VERSION-TARGET.zip      the same for Windows (x86_64-pc-windows-gnu)
#   filewatchd_VERSION_ARCH.deb        the same, with the systemd user unit, for dpkg
#   filewatchd-VERSION.tgz             the npm launcher, and filewatchd-PLATFORM-VERSION.tgz
#                                      its per-platform packages holding the binaries
#   install.sh                         the installer (dist/install.sh)
#   SHA256SUMS                         the checksums of all of the above
#
# Needs: rustup's x86_64-unknown-linux-musl, aarch64-unknown-linux-musl and
# x86_64-pc-windows-gnu, zig's C compiler (PyPI ziglang in a virtualenv: ZIG_PYTHON, else
# target/zig-venv/bin/python; .ci/run makes it), mingw-w64 (Debian's gcc-mingw-w64-x86-64:
# the Windows link), dpkg-deb, npm, python3, and the crates already fetched (`cargo fetch
# --locked`): nothing is downloaded here. dist/test.sh installs each artifact the way a user
# would.
#
# Environment: FILEWATCHD_DIST_PROFILE (default dist, Cargo.toml's [profile.dist]),
# FILEWATCHD_DIST_TARGETS (default the three targets below, space-separated).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
# shellcheck source=dist/lib.sh
. dist/lib.sh

profile=${FILEWATCHD_DIST_PROFILE:-dist}
# The static Linux targets and Windows. macOS is not among them: its link needs Apple's SDK
# (the frameworks FSEvents lives in), which cannot be downloaded here; docs/platforms.md.
read -r -a targets <<<"${FILEWATCHD_DIST_TARGETS:-x86_64-unknown-linux-musl aarch64-unknown-linux-musl x86_64-pc-windows-gnu}"
version=$(crate_version)
out=$root/dist/out
stage=$out/stage
export ZIG_PYTHON=${ZIG_PYTHON:-$root/target/zig-venv/bin/python}
target_dir=${CARGO_TARGET_DIR:-$root/target}

[ -x "$ZIG_PYTHON" ] || die "no zig: $ZIG_PYTHON is missing (python3 -m venv target/zig-venv && target/zig-venv/bin/pip install ziglang==0.17.1; .ci/run does it)"
for tool in dpkg-deb npm python3 sha256sum tar gzip; do
  command -v "$tool" >/dev/null || die "$tool is needed to build the artifacts"
done
grep -qx "version=\${FILEWATCHD_VERSION:-$version}" dist/install.sh \
  || die "dist/install.sh does not install version $version (Cargo.toml's): update its version line"

rm -rf "$out"
mkdir -p "$stage"

# 1. The binaries. For Linux the C dependencies (SQLite, zstd) are compiled by zig for musl.
# The link uses rustc's own self-contained musl (its crt objects and libc.a): for this
# machine's architecture with the host's cc as usual, for another with rust-lld (rustup ships
# it), so no C toolchain for the other architecture is needed. Windows is compiled and linked
# by mingw-w64, the target's default.
# SQLite without the full-text search, R*Tree and dbstat modules libsqlite3-sys's bundled
# build turns on: filewatchd's schema (migrations/) uses none of them, and they were 0.37 MB of
# code (nm of the glibc release build). JSON stays (the migrations use json_extract).
export LIBSQLITE3_FLAGS="-USQLITE_ENABLE_FTS3 -USQLITE_ENABLE_FTS3_PARENTHESIS -USQLITE_ENABLE_FTS5 -USQLITE_ENABLE_RTREE -USQLITE_ENABLE_DBSTAT_VTAB"
# zstd with only the block compressor of level 1, the one level src/store/blobs.rs writes
# (ZSTD_fast): the others are levels 2 and up's. With the decoders of zstd's pre-1.0 formats
# and its dictionary builder (Cargo.toml leaves them out) they were 0.45 MB. Decompression
# still reads data of every level.
zstd_only_fast="-DZSTD_EXCLUDE_DFAST_BLOCK_COMPRESSOR -DZSTD_EXCLUDE_GREEDY_BLOCK_COMPRESSOR -DZSTD_EXCLUDE_LAZY_BLOCK_COMPRESSOR -DZSTD_EXCLUDE_LAZY2_BLOCK_COMPRESSOR -DZSTD_EXCLUDE_BTLAZY2_BLOCK_COMPRESSOR -DZSTD_EXCLUDE_BTOPT_BLOCK_COMPRESSOR -DZSTD_EXCLUDE_BTULTRA_BLOCK_COMPRESSOR"
build_args=()
for t in "${targets[@]}"; do
  build_args+=(--target "$t")
  export "CFLAGS_${t//-/_}=$zstd_only_fast"
  case "$t" in *-linux-musl) ;; *) continue ;; esac
  arch=${t%%-*}
  env_triple=${t//-/_}
  upper=$(printf '%s' "$env_triple" | tr '[:lower:]' '[:upper:]')
  export "CC_$env_triple=$root/.ci/zig-cc-$arch-linux-musl" "AR_$env_triple=$root/.ci/zig-ar"
  [ "$arch" = "$(uname -m)" ] || export "CARGO_TARGET_${upper}_LINKER=rust-lld"
  # The link packs the binary's relative relocations (RELR, which musl's static-pie start-up
  # applies): 0.3 MB of .rela.dyn in the x86_64 binary. (Windows' PE has no RELR.)
  export "CARGO_TARGET_${upper}_RUSTFLAGS=-Clink-arg=-zpack-relative-relocs"
done
# zig's and npm's caches stay under target/ (nothing is cached outside the repository).
export ZIG_GLOBAL_CACHE_DIR=${ZIG_GLOBAL_CACHE_DIR:-$target_dir/zig-cache}
export ZIG_LOCAL_CACHE_DIR=${ZIG_LOCAL_CACHE_DIR:-$target_dir/zig-cache}
export npm_config_cache=${npm_config_cache:-$target_dir/npm-cache}
started=$(date +%s)
# All targets in one build, so that one target's whole-program (LTO) link, which takes one
# core for minutes, runs beside another's.
cargo build --locked --offline --profile "$profile" "${build_args[@]}" --bin filewatchd
echo "built ${targets[*]} ($profile) in $(($(date +%s) - started)) s" >&2

bin_of() { printf '%s/%s/%s/%s' "$target_dir" "$1" "$profile" "$(exe_name "$1")"; }

# 2. The man pages and completions, generated by a binary this machine runs (they are the
# same for every target: clap's definitions).
host_bin=
for t in "${targets[@]}"; do
  if "$(bin_of "$t")" --version >/dev/null 2>&1; then host_bin=$(bin_of "$t"); break; fi
done
[ -n "$host_bin" ] || die "none of the built binaries runs on this machine ($(uname -m)): cannot generate the man pages"
docs=$stage/docs
mkdir -p "$docs/completions"
"$host_bin" man --dir "$docs/man" >/dev/null
"$host_bin" completions bash >"$docs/completions/filewatchd.bash"
"$host_bin" completions zsh >"$docs/completions/_filewatchd"
"$host_bin" completions fish >"$docs/completions/filewatchd.fish"
"$host_bin" completions powershell >"$docs/completions/_filewatchd.ps1"

# Every file in the artifacts gets one fixed time, so the same commit gives the same bytes.
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}

# 3. The archives: one top directory named like the archive. Windows gets a zip with the
# PowerShell completion; Linux a .tar.gz with the man pages and the other shells'.
for t in "${targets[@]}"; do
  name=filewatchd-$version-$t
  dir=$stage/$name
  mkdir -p "$dir/completions"
  install -m 755 "$(bin_of "$t")" "$dir/$(exe_name "$t")"
  cp README.md "$dir/"
  case "$t" in
    *-windows-*)
      cp "$docs/completions/_filewatchd.ps1" "$dir/completions/"
      reproducible_zip "$stage" "$name" "$out/$name.zip"
      ;;
    *)
      cp -r "$docs/man" "$dir/"
      cp "$docs/completions/filewatchd.bash" "$docs/completions/_filewatchd" "$docs/completions/filewatchd.fish" "$dir/completions/"
      reproducible_tgz "$stage" "$name" "$out/$name.tar.gz"
      ;;
  esac
done

# 4. The .deb packages, built with plain dpkg-deb from a staged tree.
for t in "${targets[@]}"; do
  case "$t" in *-linux-*) ;; *) continue ;; esac
  arch=$(deb_arch "$t")
  deb=$stage/deb-$arch
  install -D -m 755 "$(bin_of "$t")" "$deb/usr/bin/filewatchd"
  mkdir -p "$deb/usr/share/man/man1"
  for page in "$docs"/man/*.1; do
    page_name=$(basename "$page")
    gzip -9n <"$page" >"$deb/usr/share/man/man1/$page_name.gz"
  done
  install -D -m 644 "$docs/completions/filewatchd.bash" "$deb/usr/share/bash-completion/completions/filewatchd"
  install -D -m 644 "$docs/completions/_filewatchd" "$deb/usr/share/zsh/vendor-completions/_filewatchd"
  install -D -m 644 "$docs/completions/filewatchd.fish" "$deb/usr/share/fish/vendor_completions.d/filewatchd.fish"
  # The user unit of contrib/systemd, naming the packaged binary.
  mkdir -p "$deb/usr/lib/systemd/user"
  sed -e 's|%h/.cargo/bin/filewatchd|/usr/bin/filewatchd|' \
    -e 's|^# ExecStart names the binary .*|# ExecStart names the binary the filewatchd package installs.|' \
    -e 's|^#   mkdir -p ~/.config/systemd/user && cp .*|#   (installed by the filewatchd package: no copy needed)|' \
    contrib/systemd/filewatchd@.service >"$deb/usr/lib/systemd/user/filewatchd@.service"
  grep -q '^ExecStart=/usr/bin/filewatchd ' "$deb/usr/lib/systemd/user/filewatchd@.service" \
    || die "contrib/systemd/filewatchd@.service changed: its ExecStart no longer names %h/.cargo/bin/filewatchd"
  install -D -m 644 dist/deb/copyright "$deb/usr/share/doc/filewatchd/copyright"
  mkdir -p "$deb/DEBIAN"
  sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" \
    -e "s/@SIZE@/$(du -sk --exclude=DEBIAN "$deb" | cut -f1)/" dist/deb/control >"$deb/DEBIAN/control"
  find "$deb" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
  dpkg-deb --root-owner-group -Zxz --build "$deb" "$out/filewatchd_${version}_$arch.deb" >/dev/null
done

# 5. The npm packages: the launcher (dist/npm/filewatchd) and one package per platform
# holding that platform's binary, which npm installs only on a matching os and cpu.
npm_dir=$stage/npm
optional=
for t in "${targets[@]}"; do
  plat=$(npm_platform "$t")
  pkg=$npm_dir/$plat
  exe=$(exe_name "$t")
  install -D -m 755 "$(bin_of "$t")" "$pkg/bin/$exe"
  write_platform_package_json "$plat" "$version" "$exe" >"$pkg/package.json"
  echo "The filewatchd binary for $plat: installed by the filewatchd npm package." >"$pkg/README.md"
  (cd "$out" && npm pack --silent "$pkg" >/dev/null)
  optional+="${optional:+,}\"@filewatchd/$plat\": \"$version\""
done
mkdir -p "$npm_dir/filewatchd"
cp -r dist/npm/filewatchd/. "$npm_dir/filewatchd/"
sed -e "s/@VERSION@/$version/g" -e "s|\"@OPTIONAL@\": \"\"|$optional|" \
  dist/npm/filewatchd/package.json >"$npm_dir/filewatchd/package.json"
(cd "$out" && npm pack --silent "$npm_dir/filewatchd" >/dev/null)
# npm names a scoped package's tarball filewatchd-linux-x64-VERSION.tgz (scope-name-version).

# 6. The installer and the checksums.
install -m 755 dist/install.sh "$out/install.sh"
rm -rf "$stage"
(cd "$out" && sha256sum -- * >SHA256SUMS)
ls -l "$out" >&2
