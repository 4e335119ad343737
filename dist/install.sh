#!/bin/sh
# Installs filewatchd's static binary for this machine, without Rust and without root:
#
#   curl -fsSL https://github.com/filewatchd/filewatchd/releases/download/v0.1.0/install.sh | sh
#
# It picks the archive for this machine (uname), downloads it and SHA256SUMS from the release,
# checks the archive's checksum, and puts `filewatchd` into ~/.local/bin, its man pages into
# ~/.local/share/man/man1 and its bash, zsh and fish completions under ~/.local/share.
#
# Environment:
#   FILEWATCHD_INSTALL_DIR   where the binary goes (default ~/.local/bin)
#   FILEWATCHD_RELEASE_URL   where the archives and SHA256SUMS are: an http(s):// or file://
#                            URL, or a directory (default: the release of this version)
#   FILEWATCHD_VERSION       the version to install (default: the one below)
set -eu

version=${FILEWATCHD_VERSION:-0.1.0}
release_url=${FILEWATCHD_RELEASE_URL:-https://github.com/filewatchd/filewatchd/releases/download/v$version}

say() { printf 'filewatchd install: %s\n' "$*" >&2; }
die() {
  say "error: $*"
  exit 1
}

[ -n "${HOME:-}" ] || die "HOME is not set (or set FILEWATCHD_INSTALL_DIR)"
install_dir=${FILEWATCHD_INSTALL_DIR:-$HOME/.local/bin}
data_dir=${XDG_DATA_HOME:-$HOME/.local/share}

# The machine: Linux on x86_64 and aarch64. Windows has its zip and npm; macOS builds from
# source.
os=$(uname -s)
machine=$(uname -m)
case "$os" in
  Linux) ;;
  MINGW* | MSYS* | CYGWIN*) die "this installer is for Linux: on Windows, run npm install -g filewatchd, or unpack filewatchd-$version-x86_64-pc-windows-gnu.zip from $release_url" ;;
  *) die "unsupported system: $os (filewatchd's binaries are for Linux; elsewhere build it: cargo install --locked filewatchd)" ;;
esac
case "$machine" in
  x86_64 | amd64) target=x86_64-unknown-linux-musl ;;
  aarch64 | arm64) target=aarch64-unknown-linux-musl ;;
  *) die "unsupported machine: $machine on $os (there are binaries for x86_64 and aarch64)" ;;
esac
name=filewatchd-$version-$target
archive=$name.tar.gz

# fetch URL FILE: the URL's content into FILE (curl, else wget; file:// and a plain
# directory are copied).
case "$release_url" in
  http://* | https://*)
    command -v curl >/dev/null 2>&1 || command -v wget >/dev/null 2>&1 \
      || die "neither curl nor wget is installed: one is needed to download from $release_url"
    ;;
esac
fetch() {
  case "$1" in
    http://* | https://*)
      if command -v curl >/dev/null 2>&1; then
        curl --proto '=https,http' -fsSL --retry 2 -o "$2" "$1"
      else
        wget -q -O "$2" "$1"
      fi
      ;;
    file://*) cp "${1#file://}" "$2" ;;
    *) cp "$1" "$2" ;;
  esac
}

sha256() {
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum "$1" | cut -d ' ' -f 1
  elif command -v shasum >/dev/null 2>&1; then
    shasum -a 256 "$1" | cut -d ' ' -f 1
  else
    die "neither sha256sum nor shasum is installed: cannot check the download"
  fi
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/filewatchd-install.XXXXXX") || die "cannot make a temporary directory"
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

say "downloading $archive from $release_url"
fetch "$release_url/$archive" "$tmp/$archive" 2>"$tmp/err" \
  || die "download failed: $release_url/$archive ($(tr '\n' ' ' <"$tmp/err"))"
fetch "$release_url/SHA256SUMS" "$tmp/SHA256SUMS" 2>"$tmp/err" \
  || die "download failed: $release_url/SHA256SUMS ($(tr '\n' ' ' <"$tmp/err"))"

expected=$(awk -v f="$archive" '$2 == f || $2 == "*" f { print $1 }' "$tmp/SHA256SUMS")
[ -n "$expected" ] || die "SHA256SUMS from $release_url does not list $archive"
actual=$(sha256 "$tmp/$archive")
[ "$actual" = "$expected" ] \
  || die "checksum mismatch for $archive: expected $expected, got $actual (a damaged or tampered download; nothing was installed)"

tar -xzf "$tmp/$archive" -C "$tmp" || die "cannot unpack $archive"
[ -x "$tmp/$name/filewatchd" ] || die "$archive holds no $name/filewatchd"

mkdir -p "$install_dir" || die "cannot create $install_dir"
# Copied beside the target and renamed over it: a running daemon keeps its old binary.
cp "$tmp/$name/filewatchd" "$install_dir/.filewatchd.new"
chmod 755 "$install_dir/.filewatchd.new"
mv -f "$install_dir/.filewatchd.new" "$install_dir/filewatchd"

# The man pages and completions where man and the shells look in a user's home.
mkdir -p "$data_dir/man/man1" "$data_dir/bash-completion/completions" \
  "$data_dir/zsh/site-functions" "$data_dir/fish/vendor_completions.d"
cp "$tmp/$name"/man/*.1 "$data_dir/man/man1/"
cp "$tmp/$name/completions/filewatchd.bash" "$data_dir/bash-completion/completions/filewatchd"
cp "$tmp/$name/completions/_filewatchd" "$data_dir/zsh/site-functions/_filewatchd"
cp "$tmp/$name/completions/filewatchd.fish" "$data_dir/fish/vendor_completions.d/filewatchd.fish"

installed=$("$install_dir/filewatchd" --version) || die "the installed $install_dir/filewatchd does not run on this machine"
say "installed $installed into $install_dir/filewatchd"
case ":${PATH:-}:" in
  *":$install_dir:"*) cmd=filewatchd ;;
  *)
    say "$install_dir is not on your PATH: add it (e.g. export PATH=\"$install_dir:\$PATH\" in your shell's profile)"
    cmd=$install_dir/filewatchd
    ;;
esac
say "zsh: the completions are in $data_dir/zsh/site-functions (add it to \$fpath before compinit)"
cat <<EOF

To start, inside your project:
  $cmd start                        # this workspace's daemon, in the background
  $cmd hook install claude-code     # or gemini-cli, codex, opencode, pi: each turn is recorded
EOF
