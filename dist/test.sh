#!/usr/bin/env bash
# Installs each artifact of dist/out (dist/build.sh) where a user would meet it, and runs
# README's first session with it (dist/first-session.sh):
#
#   install   install.sh from a local http server, HOME empty and no cargo on PATH; the time
#             from running it to `filewatchd start` answering; its three refusals (unsupported
#             machine, failed download, bad checksum) install nothing
#   deb       the .deb in a fresh Debian (debootstrap) chroot: dpkg -i, its files, a first
#             session, then dpkg -r leaves no file behind
#   npm       the npm tarballs with `npm install -g --prefix`, offline, and `npm exec`
#   qemu      the aarch64 binary under qemu-user: --version, completions, README's first
#             session (Debian's qemu-user lacks openat2: the daemon's portable walk confines)
#   windows   the Windows zip's filewatchd.exe under Wine: --version, the PowerShell
#             completion, and the Wine tier's session test (tests/wine.rs) run against it
#
#   binstall  Cargo.toml's cargo-binstall metadata names the archives and the binary in them
#
#   dist/test.sh [install deb npm qemu windows binstall]      (default: all six)
#
# A test whose tool is missing (debootstrap, qemu-aarch64-static, npm, python3, wine64,
# mingw-w64) is skipped with a line saying so, except under CI=true, where it fails. The debootstrap base system is
# made once under target/dist-test/debian-SUITE and copied for each run; the mirror is
# FILEWATCHD_DEBIAN_MIRROR (default http://deb.debian.org/debian).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
# shellcheck source=dist/lib.sh
. dist/lib.sh

out=$root/dist/out
version=$(crate_version)
[ -f "$out/SHA256SUMS" ] || die "no dist/out/SHA256SUMS: run dist/build.sh first"
tests=("$@")
[ ${#tests[@]} -gt 0 ] || tests=(install deb npm qemu windows binstall)
work=$(mktemp -d /tmp/filewatchd-dist-test.XXXXXX)
cleanups=()
cleanup() {
  local i
  for ((i = ${#cleanups[@]} - 1; i >= 0; i--)); do eval "${cleanups[i]}" || true; done
  rm -rf "$work"
}
trap cleanup EXIT

step() { printf '\n== %s\n' "$*" >&2; }
# needs TOOL...: true when every tool is there; otherwise skips (fails under CI=true).
needs() {
  local t
  for t in "$@"; do
    if ! command -v "$t" >/dev/null 2>&1; then
      [ "${CI:-}" = true ] && die "$t is missing: under CI=true a test that cannot run fails"
      echo "SKIP: $t is not installed" >&2
      return 1
    fi
  done
}
# expect_fail PATTERN CMD...: CMD must exit non-zero with PATTERN in its stderr.
expect_fail() {
  local pattern=$1 err=$work/expect.err
  shift
  if "$@" 2>"$err" >/dev/null; then die "expected a failure ($pattern) from: $*"; fi
  grep -q -- "$pattern" "$err" || die "expected \"$pattern\" from $*, got: $(cat "$err")"
  echo "refused as expected: $(grep -- "$pattern" "$err" | head -n 1)" >&2
}
now() { date +%s.%N; }
# A PATH of the system's directories only: no cargo, no rustup, no earlier filewatchd.
clean_path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

serve_out() {
  python3 -m http.server --bind 127.0.0.1 --directory "$out" 0 >"$work/http.log" 2>&1 &
  local pid=$! deadline=$((SECONDS + 30))
  cleanups+=("kill $pid")
  until port=$(sed -n 's/.* port \([0-9][0-9]*\) .*/\1/p' "$work/http.log") && [ -n "$port" ]; do
    kill -0 "$pid" 2>/dev/null || die "the http server exited: $(cat "$work/http.log")"
    [ $SECONDS -lt $deadline ] || die "the http server did not say its port within 30 s"
  done
  url=http://127.0.0.1:$port
}

test_install() {
  step "install.sh: from a local http server, empty HOME, no cargo on PATH"
  needs python3 curl || return 0
  serve_out
  local home=$work/install-home
  mkdir -p "$home"
  ! PATH=$clean_path command -v cargo >/dev/null || die "cargo is on $clean_path: the test needs a PATH without it"
  local t0 t1
  t0=$(now)
  env -i HOME="$home" PATH="$clean_path" FILEWATCHD_RELEASE_URL="$url" sh "$out/install.sh" 2>&1 | tee "$work/install.log"
  [ -x "$home/.local/bin/filewatchd" ] || die "install.sh put no binary into ~/.local/bin"
  grep -q "$home/.local/bin/filewatchd start" "$work/install.log" || die "install.sh did not print the command to start"
  [ -f "$home/.local/share/man/man1/filewatchd.1" ] || die "install.sh installed no man page"
  [ -f "$home/.local/share/bash-completion/completions/filewatchd" ] || die "install.sh installed no bash completion"
  env -i HOME="$home" PATH="$home/.local/bin:$clean_path" FW_STARTED_AT="$work/started" \
    bash dist/first-session.sh "$work/install-session"
  t1=$(cat "$work/started")
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "install.sh to `filewatchd start` answering: %.2f s\n", b - a }' | tee -a "$work/times" >&2

  step "install.sh refuses: unsupported machine, failed download, bad checksum"
  local fake=$work/fake-uname
  mkdir -p "$fake"
  # shellcheck disable=SC2016 # the fake uname's own $1
  printf '#!/bin/sh\ncase "$1" in -m) echo riscv64 ;; *) echo Linux ;; esac\n' >"$fake/uname"
  chmod +x "$fake/uname"
  local h2=$work/refusals-home
  mkdir -p "$h2"
  expect_fail "unsupported machine: riscv64" env -i HOME="$h2" PATH="$fake:$clean_path" FILEWATCHD_RELEASE_URL="$url" sh "$out/install.sh"
  expect_fail "download failed" env -i HOME="$h2" PATH="$clean_path" FILEWATCHD_RELEASE_URL="$url/no-such-release" sh "$out/install.sh"
  # A release whose archive is damaged (one byte changed): served as file://.
  local bad=$work/bad-release
  cp -r "$out" "$bad"
  local archive=filewatchd-$version-x86_64-unknown-linux-musl.tar.gz
  [ "$(uname -m)" = aarch64 ] && archive=filewatchd-$version-aarch64-unknown-linux-musl.tar.gz
  printf 'X' | dd of="$bad/$archive" bs=1 seek=100 conv=notrunc status=none
  expect_fail "checksum mismatch" env -i HOME="$h2" PATH="$clean_path" FILEWATCHD_RELEASE_URL="file://$bad" sh "$out/install.sh"
  [ ! -e "$h2/.local/bin/filewatchd" ] || die "a refused install left $h2/.local/bin/filewatchd"
}

# The Debian suite of this machine (bookworm here), else bookworm.
debian_suite() {
  local s
  s=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
  echo "${s:-bookworm}"
}

test_deb() {
  step "the .deb in a fresh Debian (debootstrap), dpkg -i, first session, dpkg -r"
  needs debootstrap dpkg || return 0
  [ "$(id -u)" = 0 ] || { [ "${CI:-}" = true ] && die "the .deb test needs root (debootstrap, chroot)"; echo "SKIP: not root" >&2; return 0; }
  local arch deb suite base chroot
  arch=$(deb_arch "$(uname -m)-")
  deb=$out/filewatchd_${version}_$arch.deb
  [ -f "$deb" ] || die "no $deb"
  suite=$(debian_suite)
  base=$root/target/dist-test/debian-$suite
  if [ ! -f "$base/.complete" ]; then
    rm -rf "$base"
    mkdir -p "$base"
    local t0=$SECONDS
    debootstrap --variant=minbase "$suite" "$base" "${FILEWATCHD_DEBIAN_MIRROR:-http://deb.debian.org/debian}" >"$work/debootstrap.log" 2>&1 \
      || die "debootstrap failed: $(tail -n 20 "$work/debootstrap.log")"
    rm -rf "$base/var/cache/apt/archives/"*.deb
    touch "$base/.complete"
    echo "debootstrap of $suite: $((SECONDS - t0)) s" | tee -a "$work/times" >&2
  fi
  chroot=$work/debian
  cp -a "$base" "$chroot"
  mount -t proc proc "$chroot/proc"
  cleanups+=("umount '$chroot/proc'")
  mount --bind /dev "$chroot/dev"
  cleanups+=("umount '$chroot/dev'")
  # What the system holds before: every path outside the places a session writes to.
  snapshot() { chroot "$chroot" find / -xdev \( -path /proc -o -path /dev -o -path /tmp -o -path /root -o -path /var/lib/dpkg -o -path /var/log -o -path /var/cache \) -prune -o -print | sort; }
  snapshot >"$work/before"
  cp "$deb" dist/first-session.sh "$chroot/tmp/"
  chroot "$chroot" dpkg -i "/tmp/$(basename "$deb")"
  chroot "$chroot" filewatchd --version
  local f
  for f in /usr/bin/filewatchd /usr/share/man/man1/filewatchd.1.gz /usr/share/bash-completion/completions/filewatchd \
    /usr/share/zsh/vendor-completions/_filewatchd /usr/share/fish/vendor_completions.d/filewatchd.fish \
    /usr/lib/systemd/user/filewatchd@.service; do
    [ -f "$chroot$f" ] || die "the .deb did not install $f"
  done
  grep -q '^ExecStart=/usr/bin/filewatchd serve' "$chroot/usr/lib/systemd/user/filewatchd@.service" || die "the unit does not run /usr/bin/filewatchd"
  chroot "$chroot" env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin bash /tmp/first-session.sh /tmp/session
  chroot "$chroot" dpkg -r filewatchd
  snapshot >"$work/after"
  diff "$work/before" "$work/after" >"$work/left" || die "dpkg -r left files behind: $(cat "$work/left")"
  chroot "$chroot" dpkg -s filewatchd >/dev/null 2>&1 && die "dpkg -s still knows filewatchd after dpkg -r"
  echo "dpkg -r left nothing behind" >&2
}

test_npm() {
  step "npm: install -g --prefix from the local tarballs, offline; npm exec"
  needs npm node || return 0
  local plat prefix
  plat=$(npm_platform "$(uname -m)-unknown-linux-musl")
  prefix=$work/npm-prefix
  # The platform package as a tarball beside the launcher: offline, npm cannot fetch the
  # launcher's optional dependency from a registry and skips it, so both are named.
  env -i HOME="$work/npm-home" PATH="$(dirname "$(command -v node)"):$clean_path" \
    npm install -g --offline --no-audit --no-fund --no-update-notifier --prefix "$prefix" \
    "$out/filewatchd-$plat-$version.tgz" "$out/filewatchd-$version.tgz"
  local got
  got=$("$prefix/bin/filewatchd" --version)
  [ "$got" = "filewatchd $version" ] || die "the npm-installed filewatchd says \"$got\""
  local status=0
  "$prefix/bin/filewatchd" no-such-command 2>/dev/null || status=$?
  [ "$status" = 2 ] || die "the launcher did not pass the binary's exit status on (got $status, want 2)"
  env -i HOME="$work/npm-home" PATH="$prefix/bin:$(dirname "$(command -v node)"):$clean_path" \
    bash dist/first-session.sh "$work/npm-session"
  # npx: the same two tarballs, run without installing.
  mkdir -p "$work/npx"
  got=$(cd "$work/npx" && env -i HOME="$work/npm-home" PATH="$(dirname "$(command -v node)"):$clean_path" \
    npm exec --yes --offline --no-update-notifier --package="$out/filewatchd-$plat-$version.tgz" \
    --package="$out/filewatchd-$version.tgz" -- filewatchd --version)
  [ "$got" = "filewatchd $version" ] || die "npm exec filewatchd --version says \"$got\""
  # The launcher alone (npm skipped the platform package): it says what is missing.
  env -i HOME="$work/npm-home" PATH="$(dirname "$(command -v node)"):$clean_path" \
    npm install -g --offline --no-audit --no-fund --no-update-notifier --prefix "$work/npm-launcher-only" \
    "$out/filewatchd-$version.tgz" >/dev/null
  expect_fail "@filewatchd/$plat is not installed" "$work/npm-launcher-only/bin/filewatchd" --version
  echo "npm: $got" >&2
}

test_qemu() {
  step "the aarch64 binary under qemu-user"
  needs qemu-aarch64-static || return 0
  local bin=$work/aarch64/filewatchd
  mkdir -p "$work/aarch64"
  tar -xzf "$out/filewatchd-$version-aarch64-unknown-linux-musl.tar.gz" -C "$work/aarch64" --strip-components=1
  local file_kind
  file_kind=$(od -An -tx1 -j18 -N2 "$bin" | tr -d ' ')
  [ "$file_kind" = b700 ] || die "the aarch64 archive's binary is not an aarch64 ELF (e_machine $file_kind)"
  local got
  got=$(qemu-aarch64-static "$bin" --version)
  [ "$got" = "filewatchd $version" ] || die "the aarch64 binary says \"$got\""
  qemu-aarch64-static "$bin" completions bash >"$work/aarch64.bash"
  grep -q filewatchd "$work/aarch64.bash" || die "the aarch64 binary wrote no bash completion"
  # README's first session, the daemon run by `serve` (without binfmt_misc the binary cannot
  # start itself). Debian's qemu-user (7.2) has no openat2: the daemon confines paths by its
  # portable walk instead (tests/no_openat2.rs), so files are recorded and rolled back.
  mkdir -p "$work/qemu-home"
  HOME=$work/qemu-home FW="qemu-aarch64-static $bin" FW_SERVE=1 bash dist/first-session.sh "$work/qemu-session"
  echo "aarch64 under qemu: $got, completions, README's first session" >&2
}

test_windows() {
  step "the Windows zip under Wine"
  needs python3 x86_64-w64-mingw32-gcc cargo || return 0
  local wine=/usr/lib/wine/wine64
  [ -x "$wine" ] || wine=$(command -v wine64 || true)
  [ -n "$wine" ] || { needs wine64; return 0; }
  local name=filewatchd-$version-x86_64-pc-windows-gnu dir=$work/windows
  python3 -m zipfile -e "$out/$name.zip" "$dir"
  local exe=$dir/$name/filewatchd.exe f
  for f in filewatchd.exe README.md completions/_filewatchd.ps1; do
    [ -f "$dir/$name/$f" ] || die "$name.zip holds no $name/$f"
  done
  [ "$(head -c 2 "$exe")" = MZ ] || die "$name.zip's filewatchd.exe is not a Windows program"
  # Wine 8 lacks the ProcessPrng that Rust's standard library imports: the test stand-in
  # (tests/wine/README.md) goes beside the unpacked binary, never into the zip.
  tests/wine/build.sh "$dir/$name"
  local got
  got=$(WINEPREFIX=$work/wine-prefix WINEDEBUG=-all "$wine" "$exe" --version | tr -d '\r')
  [ "$got" = "filewatchd $version" ] || die "the Windows binary says \"$got\""
  grep -q "Register-ArgumentCompleter" "$dir/$name/completions/_filewatchd.ps1" \
    || die "the zip's PowerShell completion registers no completer"
  tar -tzf "$out/filewatchd-win32-x64-$version.tgz" >"$work/win32-listing"
  grep -qx package/bin/filewatchd.exe "$work/win32-listing" \
    || die "npm's @filewatchd/win32-x64 holds no bin/filewatchd.exe"
  # The Wine tier's first test, a whole session (start, a turn, undo, redo, a refused
  # conflict, stop), with the binary unpacked from the zip.
  FILEWATCHD_WINDOWS_EXE=$exe cargo test --locked --quiet --test runner -- --exact \
    wine::a_windows_session_records_a_turn_undoes_and_redoes_it_and_refuses_a_conflict
  echo "windows: $got under Wine, its PowerShell completion, the Wine session test" >&2
}

# The binstall metadata (Cargo.toml) names archives and a binary inside them that exist.
test_binstall() {
  step "cargo binstall metadata names the archives"
  local section target url dir file
  for section in "" .overrides.x86_64-unknown-linux-gnu .overrides.aarch64-unknown-linux-gnu \
    .overrides.x86_64-pc-windows-gnu .overrides.x86_64-pc-windows-msvc; do
    target=${section#.overrides.}
    [ -n "$target" ] || target=x86_64-unknown-linux-musl
    url=$(binstall_field "$section" pkg-url)
    dir=$(binstall_field "$section" bin-dir)
    { [ -n "$url" ] && [ -n "$dir" ]; } || die "Cargo.toml has no binstall pkg-url and bin-dir in [package.metadata.binstall$section]"
    file=$(render "${url##*/}" "$target")
    [ -f "$out/$file" ] || die "binstall's pkg-url for $target names $file, not in dist/out"
    case "$file" in
      *.zip) python3 -m zipfile -l "$out/$file" | awk 'NR > 1 { print $1 }' >"$work/listing" ;;
      *) tar -tzf "$out/$file" >"$work/listing" ;;
    esac
    grep -qx "$(render "$dir" "$target")" "$work/listing" || die "$file holds no $(render "$dir" "$target")"
  done
  echo "binstall: the metadata names the archives and their binary" >&2
}
binstall_field() {
  awk -v sec="[package.metadata.binstall$1]" -v key="$2" '
    /^\[/ { in_sec = ($0 == sec) }
    in_sec && $1 == key { sub(/^[^"]*"/, ""); sub(/"[^"]*$/, ""); print }' Cargo.toml
}
render() {
  local s=$1
  s=${s//\{ name \}/filewatchd}
  s=${s//\{ version \}/$version}
  s=${s//\{ target \}/$2}
  s=${s//\{ bin \}/filewatchd}
  local ext=
  case "$2" in *-windows-*) ext=.exe ;; esac
  s=${s//\{ binary-ext \}/$ext}
  echo "$s"
}

for t in "${tests[@]}"; do
  case "$t" in
    install | deb | npm | qemu | windows | binstall) "test_$t" ;;
    *) die "unknown test $t (install, deb, npm, qemu, windows, binstall)" ;;
  esac
done
[ ! -f "$work/times" ] || cat "$work/times" >&2
echo "dist/test.sh: ${tests[*]}: ok" >&2
