//! The print of a file over `max_file_size` (G9): recorded by size and this print, never by a
//! full read, so a huge file (a sparse 20 GiB image, 0 bytes on disk) costs a turn marker
//! what a small one does. The print is a blake3 hash of the file's size, its mtime and a
//! bounded sample of its bytes (the first and last 64 KiB and 16 blocks of 4 KiB evenly
//! between): the same file gives the same print; a new size, a new mtime, or new bytes where
//! the sample looks give another. What it cannot see: bytes changed outside the sample by a
//! writer that puts the size and the mtime back.

use std::fs::File;
use std::io;

use crate::model::Hash;

const ENDS: u64 = 64 * 1024;
const BLOCK: u64 = 4 * 1024;
const BLOCKS: u64 = 16;
/// Which print this is, so that a future one never equals it.
const DOMAIN: &[u8] = b"filewatchd print of a file over max_file_size, v1\0";

/// At most this many bytes are read, whatever the file's size.
pub const MOST_READ: u64 = 2 * ENDS + BLOCKS * BLOCK;

/// The print of `file`, `size` bytes long with modification time `mtime_ns` (its stat before
/// the read; the caller checks it still holds after).
pub fn of(file: &File, size: u64, mtime_ns: i64) -> io::Result<Hash> {
    let mut hasher = blake3::Hasher::new();
    hasher.update(DOMAIN);
    hasher.update(&size.to_le_bytes());
    hasher.update(&mtime_ns.to_le_bytes());
    for (offset, len) in samples(size) {
        let mut buf = vec![0u8; usize::try_from(len).unwrap_or(0)];
        let got = read_fully_at(file, &mut buf, offset)?;
        hasher.update(&offset.to_le_bytes());
        hasher.update(&buf[..got]);
    }
    Ok(Hash(*hasher.finalize().as_bytes()))
}

/// The ranges read: the whole file when it is small, else its ends and blocks between.
fn samples(size: u64) -> Vec<(u64, u64)> {
    if size <= MOST_READ {
        return vec![(0, size)];
    }
    let mut ranges = vec![(0, ENDS)];
    let between = size - 2 * ENDS - BLOCK;
    for i in 0..BLOCKS {
        ranges.push((ENDS + between / (BLOCKS - 1) * i, BLOCK));
    }
    ranges.push((size - ENDS, ENDS));
    ranges
}

/// Reads into `buf` from `offset` until it is full or the file ends.
fn read_fully_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match crate::platform::ext::read_at(file, &mut buf[got..], offset + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_stay_inside_the_file_and_bounded() {
        for size in [0, 1, MOST_READ, MOST_READ + 1, 1 << 20, 20 << 30] {
            let ranges = samples(size);
            let total: u64 = ranges.iter().map(|r| r.1).sum();
            assert!(total <= MOST_READ, "{size}: {total}");
            assert!(
                ranges.iter().all(|&(at, len)| at + len <= size),
                "{size}: {ranges:?}"
            );
        }
    }

    #[test]
    fn the_print_follows_size_mtime_and_sampled_bytes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("f");
        std::fs::write(&path, vec![7u8; 1 << 20]).expect("write");
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .expect("open");
        let print = of(&file, 1 << 20, 5).expect("print");
        assert_eq!(print, of(&file, 1 << 20, 5).expect("again"));
        assert_ne!(print, of(&file, 1 << 20, 6).expect("mtime"));
        assert_ne!(print, of(&file, (1 << 20) + 1, 5).expect("size"));
        crate::platform::ext::write_all_at(&file, b"x", (1 << 20) - 1).expect("write the last byte");
        assert_ne!(print, of(&file, 1 << 20, 5).expect("last byte"));
    }
}
