//! The content-addressed blob store: blake3 of the raw bytes names a blob, stored once,
//! zstd-compressed where it pays. Small blobs go inline into SQLite (one fsync for a whole
//! batch, no 4 KiB-per-file overhead); larger ones are files written temp + fsync + rename,
//! in directories whose creation is made durable (`create_dir_all_durably`).

use crate::platform::ext::OpenExt;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::model::Hash;

/// Blobs whose stored form is at most this many bytes live inside SQLite.
pub const INLINE_MAX: usize = 64 * 1024;

const ZSTD_LEVEL: i32 = 1;

/// How a blob's bytes are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Codec {
    Raw = 0,
    Zstd = 1,
}

impl Codec {
    pub fn from_i64(value: i64) -> Option<Self> {
        match value {
            0 => Some(Self::Raw),
            1 => Some(Self::Zstd),
            _ => None,
        }
    }
}

/// A blob ready to be registered in the index.
#[derive(Debug)]
pub struct NewBlob {
    pub hash: Hash,
    pub size: u64,
    pub stored_size: u64,
    pub codec: Codec,
    /// The stored bytes when inline; `None` when the blob is a file already on disk.
    pub inline: Option<Vec<u8>>,
}

#[derive(Debug, thiserror::Error)]
pub enum BlobError {
    #[error("blob {hash}: {source}")]
    Io { hash: String, source: io::Error },
    #[error("blob {0} is missing from the store")]
    Missing(String),
    #[error("blob {0} is corrupt: its content no longer matches its hash")]
    Corrupt(String),
}

impl BlobError {
    /// The underlying I/O error (its errno is the storage fault's cause).
    pub fn into_io(self) -> io::Error {
        match self {
            Self::Io { source, .. } => source,
            other => io::Error::other(other),
        }
    }
}

/// The blob directory: `<state>/blobs/ab/<hex>` plus `tmp/` for writes in progress.
pub struct BlobDir {
    dir: PathBuf,
    tmp_counter: AtomicU64,
}

impl BlobDir {
    pub fn open(dir: PathBuf) -> io::Result<Self> {
        super::create_dir_all_durably(&dir.join("tmp"))?;
        Ok(Self {
            dir,
            tmp_counter: AtomicU64::new(0),
        })
    }

    /// The store at `dir` as it is, to read only: nothing is created.
    pub fn at(dir: PathBuf) -> Self {
        Self {
            dir,
            tmp_counter: AtomicU64::new(0),
        }
    }

    /// Removes leftovers of writes a crash interrupted: no index row ever names them.
    /// Only the capture worker calls this, before it writes anything.
    pub fn remove_leftovers(&self) -> io::Result<()> {
        for entry in std::fs::read_dir(self.dir.join("tmp"))?.flatten() {
            let _ = std::fs::remove_file(entry.path());
        }
        Ok(())
    }

    pub fn path_of(&self, hash: Hash) -> PathBuf {
        let hex = hash.to_hex();
        self.dir.join(&hex[..2]).join(&hex[2..])
    }

    /// Compresses `raw` and returns it inline, or writes it as a file when it is large.
    /// Writing a blob that already exists is a no-op.
    pub fn prepare(&self, hash: Hash, raw: &[u8]) -> Result<NewBlob, BlobError> {
        let (codec, stored) = encode(raw);
        let stored_size = stored.len() as u64;
        let size = raw.len() as u64;
        if stored.len() <= INLINE_MAX {
            let inline = Some(stored.into_owned());
            return Ok(NewBlob {
                hash,
                size,
                stored_size,
                codec,
                inline,
            });
        }
        self.install(hash, |file| file.write_all(&stored))
            .map_err(|source| io_error(hash, source))?;
        Ok(NewBlob {
            hash,
            size,
            stored_size,
            codec,
            inline: None,
        })
    }

    /// Streams a large file into a compressed blob file while hashing it. Returns the hash of
    /// what was read; the caller checks the file did not change while it was being read, and
    /// discards the blob (`discard`) if it did.
    pub fn stream_from(&self, source: impl Read) -> io::Result<(NewBlob, PathBuf)> {
        let tmp = self.temp_path();
        let streamed = self.stream_into(&tmp, source);
        if streamed.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        streamed.map(|blob| (blob, tmp))
    }

    fn stream_into(&self, tmp: &Path, mut source: impl Read) -> io::Result<NewBlob> {
        let file = create_temp(tmp)?;
        let mut encoder = zstd::Encoder::new(file, ZSTD_LEVEL)?;
        let mut hasher = blake3::Hasher::new();
        let mut buf = vec![0u8; 256 * 1024];
        let mut size = 0u64;
        loop {
            let n = source.read(&mut buf)?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
            encoder.write_all(&buf[..n])?;
            size += n as u64;
        }
        let file = encoder.finish()?;
        file.sync_data()?;
        let stored_size = file.metadata()?.len();
        let hash = Hash(*hasher.finalize().as_bytes());
        Ok(NewBlob {
            hash,
            size,
            stored_size,
            codec: Codec::Zstd,
            inline: None,
        })
    }

    /// Moves a streamed temp file to its content address.
    pub fn commit_streamed(&self, hash: Hash, tmp: &Path) -> Result<(), BlobError> {
        let dest = self.path_of(hash);
        let result = (|| {
            if let Some(parent) = dest.parent() {
                super::create_dir_all_durably(parent)?;
            }
            std::fs::rename(tmp, &dest)
        })();
        result.map_err(|source| io_error(hash, source))
    }

    pub fn discard(&self, tmp: &Path) {
        let _ = std::fs::remove_file(tmp);
    }

    /// Reads a file blob's stored bytes and decodes them, verifying the hash.
    pub fn read_file(&self, hash: Hash, codec: Codec) -> Result<Vec<u8>, BlobError> {
        let stored = match std::fs::read(self.path_of(hash)) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(BlobError::Missing(hash.to_hex()));
            }
            Err(source) => return Err(io_error(hash, source)),
        };
        decode_verified(hash, codec, &stored)
    }

    /// Writes via `fill` into a temp file, fsyncs it and renames it to the blob's name. An
    /// existing blob is left alone.
    fn install(&self, hash: Hash, fill: impl FnOnce(&mut File) -> io::Result<()>) -> io::Result<()> {
        let dest = self.path_of(hash);
        if dest.exists() {
            return Ok(());
        }
        let tmp = self.temp_path();
        let mut file = create_temp(&tmp)?;
        let written = fill(&mut file).and_then(|()| file.sync_data());
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
        if let Some(parent) = dest.parent() {
            super::create_dir_all_durably(parent)?;
        }
        std::fs::rename(&tmp, &dest)
    }

    fn temp_path(&self) -> PathBuf {
        let n = self.tmp_counter.fetch_add(1, Ordering::Relaxed);
        self.dir.join("tmp").join(format!("{}-{n}", std::process::id()))
    }

    /// Makes the renames of this batch durable before the index rows that name them commit.
    pub fn sync_dirs(&self, hashes: &[Hash]) -> io::Result<()> {
        let mut dirs: Vec<PathBuf> = hashes
            .iter()
            .filter_map(|h| self.path_of(*h).parent().map(Path::to_path_buf))
            .collect();
        dirs.sort();
        dirs.dedup();
        for dir in dirs {
            crate::platform::ext::sync_dir(&dir)?;
        }
        Ok(())
    }
}

fn create_temp(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .permission_bits(0o600)
        .open(path)
}

fn io_error(hash: Hash, source: io::Error) -> BlobError {
    BlobError::Io {
        hash: hash.to_hex(),
        source,
    }
}

/// zstd-1 when it saves at least an eighth, else the raw bytes.
pub fn encode(raw: &[u8]) -> (Codec, std::borrow::Cow<'_, [u8]>) {
    if raw.len() >= 64
        && let Some(compressed) = compress(raw)
        && compressed.len() < raw.len() - raw.len() / 8
    {
        return (Codec::Zstd, compressed.into());
    }
    (Codec::Raw, raw.into())
}

thread_local! {
    /// One compression context per thread: creating one per blob (and zeroing its tables)
    /// cost more than compressing a small file.
    static COMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Compressor<'static>>> =
        std::cell::RefCell::new(zstd::bulk::Compressor::new(ZSTD_LEVEL).ok());
}

/// The compressed bytes, holding no more memory than they need: zstd's output buffer is
/// sized for the worst case (more than the input), and readers keep a whole batch of blobs
/// ahead of the writer.
fn compress(raw: &[u8]) -> Option<Vec<u8>> {
    let mut compressed =
        COMPRESSOR.with(|cell| cell.borrow_mut().as_mut().and_then(|c| c.compress(raw).ok()))?;
    compressed.shrink_to_fit();
    Some(compressed)
}

thread_local! {
    /// One decompression context per thread, for the same reason: a rollback reads back
    /// thousands of small blobs.
    static DECOMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> =
        std::cell::RefCell::new(zstd::bulk::Decompressor::new().ok());
}

/// Above this size (as a frame's header claims it) a blob is decoded as a stream instead of
/// into a buffer of that size at once.
const DECODE_IN_ONE_UP_TO: u64 = 8 * 1024 * 1024;

/// Decompresses a blob: one frame whose header gives its size (what `compress` writes) with
/// this thread's context; anything else (a streamed blob, a damaged one) as a stream.
fn decompress(stored: &[u8]) -> std::io::Result<Vec<u8>> {
    let size = zstd::zstd_safe::get_frame_content_size(stored).ok().flatten();
    let one_go = size
        .filter(|&size| size <= DECODE_IN_ONE_UP_TO)
        .and_then(|size| usize::try_from(size).ok())
        .and_then(|size| {
            DECOMPRESSOR.with(|cell| {
                let mut cell = cell.borrow_mut();
                cell.as_mut().and_then(|d| d.decompress(stored, size).ok())
            })
        });
    match one_go {
        Some(raw) => Ok(raw),
        None => zstd::stream::decode_all(stored),
    }
}

/// Decodes stored bytes and checks they still hash to `hash`.
pub fn decode_verified(hash: Hash, codec: Codec, stored: &[u8]) -> Result<Vec<u8>, BlobError> {
    let raw = match codec {
        Codec::Raw => stored.to_vec(),
        Codec::Zstd => decompress(stored).map_err(|source| io_error(hash, source))?,
    };
    if Hash::of(&raw) != hash {
        return Err(BlobError::Corrupt(hash.to_hex()));
    }
    Ok(raw)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blobs_decode_whatever_their_frames_say_of_their_size() {
        let text = b"a line of a source file\n".repeat(500);
        // One frame with its size (what `compress` writes), none (a streamed blob), two frames.
        let sized = compress(&text).expect("compress");
        let mut unsized_ = zstd::Encoder::new(Vec::new(), 1).expect("encoder");
        std::io::Write::write_all(&mut unsized_, &text).expect("write");
        let unsized_ = unsized_.finish().expect("finish");
        let two = [sized.clone(), sized.clone()].concat();
        let twice = text.repeat(2);
        for (stored, raw) in [(&sized, &text), (&unsized_, &text), (&two, &twice)] {
            let decoded = decode_verified(Hash::of(raw), Codec::Zstd, stored).expect("decode");
            assert!(decoded == *raw);
        }
        assert!(decode_verified(Hash::of(&text), Codec::Zstd, &sized[..sized.len() / 2]).is_err());
    }

    #[test]
    fn small_blobs_are_inline_and_large_ones_are_files() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let blobs = BlobDir::open(tmp.path().join("blobs")).expect("open");
        let small = b"fn main() {}\n".repeat(10);
        let blob = blobs.prepare(Hash::of(&small), &small).expect("prepare");
        let stored = blob.inline.expect("inline");
        assert_eq!(
            decode_verified(blob.hash, blob.codec, &stored).expect("decode"),
            small
        );

        let mut large = Vec::new();
        let mut x = 1u64;
        while large.len() < 3 * INLINE_MAX {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            large.extend_from_slice(&x.to_le_bytes());
        }
        let blob = blobs.prepare(Hash::of(&large), &large).expect("prepare");
        assert!(blob.inline.is_none());
        assert_eq!(blobs.read_file(blob.hash, blob.codec).expect("read"), large);
    }

    #[test]
    fn a_tampered_blob_is_refused() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let blobs = BlobDir::open(tmp.path().join("blobs")).expect("open");
        let (blob, tmp_file) = blobs.stream_from(&b"hello"[..]).expect("stream");
        blobs.commit_streamed(blob.hash, &tmp_file).expect("commit");
        std::fs::write(
            blobs.path_of(blob.hash),
            zstd::encode_all(&b"jello"[..], 1).expect("z"),
        )
        .expect("tamper");
        assert!(matches!(
            blobs.read_file(blob.hash, Codec::Zstd),
            Err(BlobError::Corrupt(_))
        ));
    }
}
